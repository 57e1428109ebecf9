"""Reading a student's notebook: which code is graded, and running it here.

The graded definitions are the ones the notebook leaves behind when its code cells run
from top to bottom, as in the student's kernel: every code cell as it was saved, whatever
its nbgrader metadata says (a cell marked as graded or locked, a cell added by hand),
except the kit's own cells as released (setup, self-checks, demos), which need the kit's
modules and define nothing that is graded. The preamble stands in for the setup cell. A
kit cell that a student edited runs as edited; the grader flags the edit.

The grader knows the kit's cells from the exercise's release layout and passes their
sources as ``kit``; the students' copy has no layout, and skips the cells that their
nbgrader metadata calls locked.
"""

from pathlib import Path

from .cells import nbgrader_meta, normal_source, source_text
from .inert_ipython import CellCompiler, kernel_names
from .ipython_syntax import Reader
from .notebook_file import read_notebook

PREAMBLE = "import math\n\nimport numpy as np\n"
# The grader sends this text to the child, which has no kit to import it from.
INERT_IPYTHON = Path(__file__).with_name("inert_ipython.py").read_text(encoding="utf-8")


def graded_cells(notebook_path, kit=None):
    """[(cell id, source)] of the saved notebook's graded code cells, in order."""
    return graded_cells_of(read_notebook(notebook_path), kit)


def graded_cells_of(notebook, kit=None):
    """The same, for a notebook already read into a dict. ``kit``: the normalised sources
    of the kit's own cells, or None to skip the cells marked locked instead."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("this file is not a Jupyter notebook in format 4")
    cells, reader = [], Reader()
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = nbgrader_meta(cell)
        source = source_text(cell.get("source", ""))
        if (normal_source(source) in kit) if kit is not None else meta.get("locked"):
            continue  # the kit's own cell, as released
        cell_id = meta.get("grade_id") or cell.get("id") or f"cell-{index}"
        cells.append((str(cell_id), reader.as_python(source)))
    return cells


def run_cells(cells, namespace):
    """Execute cells one by one, as a notebook would, with IPython's names inert
    (inert_ipython.py); return {cell id: error text}."""
    errors = {}
    namespace.update(kernel_names(namespace))
    compile_cell = CellCompiler()
    exec(compile(PREAMBLE, "<preamble>", "exec"), namespace)
    for cell_id, source in cells:
        try:
            exec(compile_cell(source, f"<cell {cell_id}>"), namespace)
        except NotImplementedError:
            continue  # an untouched stub at module level, such as the quiz's
        except BaseException as error:  # noqa: BLE001 - a cell may raise anything
            errors[cell_id] = f"{type(error).__name__}: {error}"
    return errors
