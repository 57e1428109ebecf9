"""Finding changes a student should not have made to the released notebook.

Deleted, renamed or duplicated answer cells, edited or deleted locked cells, or a
notebook of another assignment. The findings go into the result and, through
nbgrader, into the gradebook, where the instructor sees them.
"""

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


def _normal(source):
    """Compare sources loosely: hidden regions and blank lines do not count."""
    source = HIDDEN_REGION.sub("", "".join(source) if isinstance(source, list) else str(source))
    return "\n".join(line.rstrip() for line in source.splitlines() if line.strip())


def _nbgrader(cell):
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    return meta if isinstance(meta, dict) else {}


LAYOUT_FILE = Path(__file__).with_name("release_layout.json")


def layout_of(notebook):
    """{"answers": [answer cell ids], "locked": {locked cell id: normalised source}}."""
    cells = notebook["cells"]
    return {"answers": [_nbgrader(c)["grade_id"] for c in cells if _nbgrader(c).get("solution")],
            "locked": {_nbgrader(c)["grade_id"]: _normal(c["source"]) for c in cells
                       if _nbgrader(c).get("locked")}}


@lru_cache(maxsize=1)
def expected_layout():
    """(answer cell ids, {locked cell id: normalised source}) of the release.

    Read from release_layout.json, which ``mhakit build`` writes from the lesson: building
    the notebook needs nbformat, whose import alone costs every grading process a second.
    """
    layout = json.loads(LAYOUT_FILE.read_text(encoding="utf-8"))
    return tuple(layout["answers"]), layout["locked"]


def find_tampering(notebook):
    """A list of plain-language findings; empty when the notebook is as released."""
    cells = [c for c in notebook.get("cells", []) if isinstance(c, dict)]
    malformed = [c for c in cells if isinstance(c.get("metadata"), dict)
                 and "nbgrader" in c["metadata"] and (not _nbgrader(c)
                                                      or _nbgrader(c).get("schema_version") != 3)]
    answers, locked = expected_layout()
    solution_ids = Counter(str(_nbgrader(c).get("grade_id")) for c in cells
                           if _nbgrader(c).get("solution"))
    by_id = {}
    for cell in cells:
        by_id.setdefault(str(_nbgrader(cell).get("grade_id")), []).append(cell)
    if not set(by_id) & (set(answers) | set(locked)):
        return ["this is not the mha notebook: none of its cells are there"]
    findings = [f"{len(malformed)} cell(s) with edited nbgrader metadata"] if malformed else []
    for grade_id in answers:
        if solution_ids[grade_id] == 0:
            findings.append(f"answer cell {grade_id} is missing")
        elif solution_ids[grade_id] > 1:
            findings.append(f"answer cell {grade_id} appears {solution_ids[grade_id]} times")
    findings += [f"unexpected answer cell {grade_id} (renamed?)"
                 for grade_id in solution_ids if grade_id not in answers]
    for grade_id, source in locked.items():
        found = by_id.get(grade_id, [])
        if not found:
            findings.append(f"locked cell {grade_id} was deleted")
        elif any(_normal(c.get("source", "")) != source for c in found):
            findings.append(f"locked cell {grade_id} was edited")
        elif any(not _nbgrader(c).get("locked") for c in found):
            findings.append(f"locked cell {grade_id} was unlocked")
    return findings
