"""Reading a student's notebook: which code is graded, and running it here.

The graded definitions are the ones the notebook leaves behind when its code cells run
from top to bottom, as in the student's kernel: every code cell as it was saved, whatever
its nbgrader metadata says (a cell marked as graded or locked, a cell added by hand),
except the kit's own cells as released (setup, self-checks, demos), which need the kit's
modules and define nothing that is graded. The preamble stands in for the setup cell. A
kit cell that a student edited runs as edited; the grader flags the edit.

The grader's copy of this module knows the kit's cells from autograder/release_layout.json
beside its folder; the students' copy has no layout beside it, and skips the cells that
their nbgrader metadata calls locked.
"""

import json
from functools import lru_cache
from pathlib import Path

PREAMBLE = "import math\n\nimport numpy as np\n"
RELEASE_LAYOUT = Path(__file__).resolve().parent.parent / "release_layout.json"


def nbgrader_meta(cell):
    """A cell's nbgrader metadata as a dict ({} when it has none, or none that is a dict).
    Every reader of nbgrader cell metadata in the kit goes through here."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    return meta if isinstance(meta, dict) else {}


def source_text(source):
    """A cell's source as one string (nbformat allows a list of lines)."""
    return "".join(map(str, source)) if isinstance(source, list) else str(source)


def normal_source(source):
    """A source compared loosely: blank lines and trailing spaces do not count."""
    return "\n".join(line.rstrip() for line in source_text(source).splitlines()
                     if line.strip())


@lru_cache(maxsize=1)
def release_layout():
    """The release's layout (written by ``mhakit build``), or None where there is none."""
    try:
        return json.loads(RELEASE_LAYOUT.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def kit_sources():
    """The normalised sources of the kit's locked cells, or None without a layout."""
    layout = release_layout()
    return None if layout is None else frozenset(layout["locked"].values())


def graded_cells(notebook_path):
    """[(cell id, source)] of the saved notebook's graded code cells, in order."""
    try:
        with open(notebook_path, encoding="utf-8") as handle:
            notebook = json.load(handle)
    except UnicodeDecodeError:
        raise ValueError(f"{notebook_path} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{notebook_path} is not valid JSON ({error})") from None
    return graded_cells_of(notebook)


def graded_cells_of(notebook):
    """The same, for a notebook already read into a dict."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("this file is not a Jupyter notebook in format 4")
    kit = kit_sources()
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = nbgrader_meta(cell)
        source = source_text(cell.get("source", ""))
        if (normal_source(source) in kit) if kit is not None else meta.get("locked"):
            continue  # the kit's own cell, as released
        cell_id = meta.get("grade_id") or cell.get("id") or f"cell-{index}"
        cells.append((str(cell_id), without_magics(source)))
    return cells


def without_magics(source):
    """IPython magics and shell escapes (%timeit, !pip) mean nothing to plain Python."""
    lines = []
    for line in source.splitlines():
        body = line.lstrip()
        if body.startswith(("%", "!")):
            line = line[:len(line) - len(body)] + "pass  # " + body
        lines.append(line)
    return "\n".join(lines) + "\n"


def run_cells(cells, namespace):
    """Execute cells one by one, as a notebook would; return {cell id: error text}."""
    errors = {}
    exec(compile(PREAMBLE, "<preamble>", "exec"), namespace)
    for cell_id, source in cells:
        try:
            exec(compile(source, f"<cell {cell_id}>", "exec"), namespace)
        except NotImplementedError:
            continue  # an untouched stub at module level, such as the quiz's
        except BaseException as error:  # noqa: BLE001 - a cell may raise anything
            errors[cell_id] = f"{type(error).__name__}: {error}"
    return errors
