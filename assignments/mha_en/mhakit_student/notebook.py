"""Reading a student's notebook: which code is graded, and running it here.

The graded definitions are the ones the notebook leaves behind when its code cells run
in order, as in the student's kernel: every code cell the student can edit (answer
cells and any cell they added), after the preamble that the locked setup cell runs.
Locked cells (setup, tests, the self-check) are the kit's own and are not run.
"""

import json

PREAMBLE = "import math\n\nimport numpy as np\n"


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
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata")
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        if cell.get("cell_type") == "code" and not meta.get("locked") and not meta.get("grade"):
            source = cell.get("source", "")
            source = "".join(map(str, source)) if isinstance(source, list) else str(source)
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
