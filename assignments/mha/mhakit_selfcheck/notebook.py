"""Reading a student's notebook: which code is graded, and running it here.

Only the answer cells (nbgrader solution cells) are graded, after the same preamble
the notebook's first cell runs. Code elsewhere in the notebook (demos, plots) is not.
"""

import json

PREAMBLE = "import math\n\nimport numpy as np\n"


def answer_cells(notebook_path):
    """[(cell id, source)] of the saved notebook's code answer cells, in order."""
    try:
        with open(notebook_path, encoding="utf-8") as handle:
            notebook = json.load(handle)
    except json.JSONDecodeError as error:
        raise ValueError(f"{notebook_path} is not valid JSON ({error})") from None
    return answer_cells_of(notebook)


def answer_cells_of(notebook):
    """The same, for a notebook already read into a dict."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("this file is not a Jupyter notebook")
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            continue
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        if cell.get("cell_type") == "code" and meta.get("solution"):
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            cells.append((str(meta.get("grade_id") or f"cell-{index}"), without_magics(source)))
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
