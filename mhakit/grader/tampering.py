"""Finding changes a student should not have made to the released notebook.

The release's nbgrader cells are compared with the exercise's release_layout.json, which
the build writes from the lesson: each cell's grade id, its place, its cell type, its
nbgrader flags and points, and the source of each locked cell. Deleted, renamed, moved,
duplicated or added nbgrader cells, changed points, flags or cell types, edited locked
cells, outputs in a test cell that running it cannot produce, a notebook of another
assignment, and cells that hold the instructor's solutions (the source notebook's solution
markers, or a written model answer word for word) are findings, and so is what the kit's
collect refused or flagged in the submission's folder. The findings go into the result
and, through nbgrader, into the gradebook, where the instructor sees them.

What honest students change by running their notebook is never a finding: outputs in
answer cells, demos and the like, the outputs the self-check prints in a test cell, and
the notebook's kernelspec.
"""

import json
import os
import re
from collections import Counter
from functools import lru_cache

from ..selfcheck.cells import (FLAGS, has_nbgrader_entry, nbgrader_meta, normal_source,
                               source_text, valid_meta)

CHECKED_PART = re.compile(r"""check\(["'](\w+)["']\)""")
HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
# The lines the build wraps every solution in (authoring/build.py); the release never has
# them, so a cell that does came from the source notebook.
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def _normal(source):
    """Compare sources loosely: hidden regions, blank lines and trailing spaces do not
    count (the source notebook has the hidden regions, the release has not)."""
    return normal_source(HIDDEN_REGION.sub("", source_text(source)))


def layout_of(notebook):
    """{"cells": [each nbgrader cell: grade id, cell type, flags, points], in order,
        "locked": {locked cell id: normalised source}}."""
    cells, locked = [], {}
    for cell in notebook["cells"]:
        meta = nbgrader_meta(cell)
        if "grade_id" not in meta:
            continue
        entry = {"grade_id": meta["grade_id"], "cell_type": cell["cell_type"]}
        entry.update({flag: bool(meta.get(flag)) for flag in FLAGS})
        if "points" in meta:
            entry["points"] = meta["points"]
        cells.append(entry)
        if meta.get("locked"):
            locked[meta["grade_id"]] = _normal(cell["source"])
    return {"cells": cells, "locked": locked}


def expected_layout(exercise):
    """({grade id: its layout entry}, in the release's order; {locked cell id: normalised
    source}) of the exercise's release."""
    layout = exercise.layout
    return {entry["grade_id"]: entry for entry in layout["cells"]}, layout["locked"]


def _shown(value, limit=40):
    """A value the student wrote (an id, a type, points), short enough for a finding."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _kind(entry):
    if entry["grade"] and entry["locked"]:
        return "test cell"
    if entry["solution"]:
        return "answer cell"
    return "locked cell" if entry["locked"] else "cell"


def _changes(grade_id, entry, cell):
    """What differs between a cell carrying ``grade_id`` and the release's cell."""
    meta, found = nbgrader_meta(cell), []
    if cell.get("cell_type") != entry["cell_type"]:
        found.append(f"{_kind(entry)} {grade_id} was turned from {entry['cell_type']} into "
                     f"{_shown(cell.get('cell_type'))}")
    elif meta.get("cell_type", entry["cell_type"]) != entry["cell_type"]:
        found.append(f"{_kind(entry)} {grade_id} claims to be a {_shown(meta['cell_type'])} cell")
    for flag in FLAGS:
        if bool(meta.get(flag)) != entry[flag]:
            found.append(f"{_kind(entry)} {grade_id} had '{flag}' changed to "
                         f"{bool(meta.get(flag))}")
    if "points" in entry and not _same_number(meta.get("points"), entry["points"]):
        found.append(f"{_kind(entry)} {grade_id} had its points changed from "
                     f"{entry['points']} to {_shown(meta.get('points'))}")
    elif "points" not in entry and "points" in meta:
        found.append(f"{_kind(entry)} {grade_id} was given {_shown(meta['points'])} points")
    return found


def _same_number(value, expected):
    try:
        return float(value) == float(expected)
    except (TypeError, ValueError, OverflowError):
        return False


def _out_of_order(ids, release):
    """The grade ids that are not where the release has them, relative to the others."""
    rank = {grade_id: index for index, grade_id in enumerate(release)}
    present = [grade_id for grade_id in ids if grade_id in rank]
    expected = sorted(present, key=rank.get)
    return [a for a, b in zip(present, expected) if a != b]


def _honest_test_outputs(cell, part):
    """Whether the outputs of a test cell are what running it in a kernel can leave:
    the self-check's table on stdout (with the part's row), notes and warnings on
    stderr, an error (a failing check of earlier releases raised), and at most the 0.0
    that ``check`` of earlier releases returned for a part not implemented yet (it
    scores nothing), all from a cell the kernel ran (it has a count)."""
    outputs = cell.get("outputs") or []
    if not outputs:
        return True
    count = cell.get("execution_count")
    if not isinstance(outputs, list) or count is None:
        return False
    stdout = ""
    for output in outputs:
        kind = output.get("output_type") if isinstance(output, dict) else None
        if kind == "stream" and output.get("name") in ("stdout", "stderr"):
            if output["name"] == "stdout":
                stdout += source_text(output.get("text", ""))
        elif kind == "error":
            continue
        elif kind == "execute_result":
            data = output.get("data") if isinstance(output.get("data"), dict) else {}
            if output.get("execution_count") != count or set(data) != {"text/plain"} or \
                    source_text(data["text/plain"]).strip() != "0.0":
                return False
        else:
            return False
    rows = {line.split()[0] for line in stdout.splitlines() if line.split()}
    return not stdout or part is None or part in rows


# Written by the kit's collect (integrations/collect.py) beside each submission it
# collected: what it refused or flagged there, for both grading doors to flag the grade.
COLLECT_RECORD = ".mhakit-collect.json"
COLLECT_RECORD_LIMIT = 1 << 20


def collect_findings(submission):
    """One line for each thing the kit's collect refused or flagged in the collected
    submission folder ``submission`` (``submitted/<student>/<assignment>``). Empty for a
    submission that the kit's collect did not bring."""
    try:
        fd = os.open(os.path.join(submission, COLLECT_RECORD),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(COLLECT_RECORD_LIMIT)
    try:
        record = json.loads(data)
        return [f"collect refused {line}" for line in record["refused"]] + [
            f"collect flagged {line}" for line in record["flagged"]]
    except (ValueError, KeyError, TypeError):
        return [f"collect's record {COLLECT_RECORD} cannot be read"]


def find_tampering(notebook, exercise):
    """A list of plain-language findings; empty when the notebook is as released."""
    cells = [c for c in notebook.get("cells", []) if isinstance(c, dict)]
    release, locked = expected_layout(exercise)
    malformed = [c for c in cells if has_nbgrader_entry(c) and not valid_meta(c)]
    by_id = {}
    for cell in cells:
        if valid_meta(cell):
            by_id.setdefault(str(valid_meta(cell)["grade_id"]), []).append(cell)
    if not set(by_id) & set(release):
        return [f"this is not the {exercise.name} notebook: none of its cells are there"]
    findings = [f"{len(malformed)} cell(s) with edited nbgrader metadata"] if malformed else []
    for grade_id, entry in release.items():
        found = by_id.get(grade_id, [])
        if not found:
            findings.append(f"{_kind(entry)} {grade_id} was deleted" if entry["locked"]
                            else f"{_kind(entry)} {grade_id} is missing")
            continue
        if len(found) > 1:
            findings.append(f"{_kind(entry)} {grade_id} appears {len(found)} times")
        if grade_id in locked and any(_normal(c.get("source", "")) != locked[grade_id]
                                      for c in found):
            findings.append(f"{_kind(entry)} {grade_id} was edited")
        changes = Counter(change for c in found for change in _changes(grade_id, entry, c))
        findings += list(changes)
        if entry["grade"] and entry["locked"] and entry["cell_type"] == "code":
            part = CHECKED_PART.search(locked.get(grade_id, ""))
            if not all(_honest_test_outputs(c, part and part.group(1)) for c in found):
                findings.append(f"test cell {grade_id} holds outputs that running it cannot "
                                "produce")
    for grade_id, found in by_id.items():
        if grade_id not in release:
            meta = valid_meta(found[0])
            kind = ("graded cell" if meta.get("grade") else "answer cell" if meta.get("solution")
                    else "nbgrader cell")
            findings.append(f"unexpected {kind} {_shown(grade_id)} (renamed or added?)")
    moved = _out_of_order(list(by_id), release)
    if moved:
        findings.append("cells not in the release's order (ids swapped or cells moved): "
                        + ", ".join(moved))
    copied = _solution_copies(cells, exercise)
    if copied:
        findings.append("cells that hold the instructor's solutions (a copy of the course's "
                        "source notebook?): " + ", ".join(copied))
    return findings


@lru_cache(maxsize=4)
def _model_answers(exercise):
    """The written answers' model texts, every language, normalised, from the exercise's
    lesson: the solution cells of the source that carry no markers. (Its code and quiz
    solution cells all do, so the markers find a whole copy of any of them.) What the
    check compares with comes from the grader's side, never from a submission; it is read
    without building the source, which would cost every grading process nbformat's import."""
    from ..authoring.lesson import Written

    return frozenset(normal_source(text) for item in exercise.content("lesson").LESSON
                     if isinstance(item, Written) for text in item.model.values()
                     if normal_source(text))


def _solution_copies(cells, exercise):
    """The cells (by grade id, else by place) that hold a solution marker line or are,
    blank lines and trailing spaces aside, a model answer of the source. An answer of the
    student's own, even a correct one, has neither: it starts from the release's stub, and
    the source's cells carry the markers or the model answer's own words."""
    solutions, copied = _model_answers(exercise), []
    for place, cell in enumerate(cells, 1):
        text = source_text(cell.get("source", ""))
        marked = any(line.strip() in SOLUTION_MARKERS for line in text.splitlines())
        if marked or normal_source(text) in solutions:
            grade_id = valid_meta(cell).get("grade_id")
            copied.append(_shown(grade_id) if grade_id else f"cell {place}")
    return copied
