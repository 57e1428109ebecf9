"""mhakit/selfcheck/imports.py: what grading cannot import is named before submitting,
in the kernel (check()) and from the saved notebook (selfcheck.py), and the self-check is
then not green."""

import shutil
import subprocess
import sys
import textwrap
import types

import nbformat
import pytest

from mhakit.selfcheck.imports import (allowed_by, cell_imports, foreign_in_cells,
                                          foreign_in_namespace, offered)
from tests.selfcheck.test_runner import SOURCE, run_selfcheck

ALLOWED = ("numpy", "matplotlib.pyplot", "IPython.display")


def test_the_standard_library_and_the_declared_packages_are_offered():
    assert all(offered(name, ALLOWED) for name in ("json", "math", "numpy", "matplotlib",
                                                   "IPython", "functools", "mhakit_student"))
    assert not any(offered(name, ALLOWED) for name in ("scipy", "torch", "pandas", "rich"))
    assert allowed_by(types.SimpleNamespace()) == ("numpy", "IPython.display")
    assert allowed_by(types.SimpleNamespace(STUDENT_IMPORTS=("numpy", "matplotlib"))) == (
        "numpy", "matplotlib", "IPython.display")


def test_cell_imports_finds_every_import_and_says_which_are_at_the_top():
    source = textwrap.dedent("""\
        import numpy as np, scipy.special
        from matplotlib import pyplot as plt
        from . import sibling
        def f(x):
            import torch
            return x
        """)
    assert cell_imports(source) == [(1, True, "numpy"), (1, True, "scipy"),
                                    (2, True, "matplotlib"), (5, False, "torch")]
    assert cell_imports("def f(:\n") == []
    assert foreign_in_cells([("a", source), ("b", "import json\n")], ALLOWED) == [
        ("a", 1, "scipy"), ("a", 5, "torch")]


def test_cell_imports_hands_out_a_list_of_its_own_each_time():
    source = "import numpy\nimport json\n"
    first = cell_imports(source)
    first.clear()  # a caller that changes its list changes nobody else's
    assert cell_imports(source) == [(1, True, "numpy"), (2, True, "json")]


def test_a_kernel_namespace_names_modules_their_objects_and_imports_inside_functions():
    scipy = types.ModuleType("scipy.special")
    imported = types.FunctionType((lambda x: x).__code__, {}, "expit")
    imported.__module__ = "scipy.special"
    namespace = {"__name__": "__main__", "np": __import__("numpy"), "json": __import__("json"),
                 "sp": scipy, "expit": imported, "In": [], "_": scipy}
    exec("def softmax(x, axis=-1):\n    import torch\n    return x\n"
         "def attention(Q):\n    return expit(Q)\n"
         "def dot_product(u, v):\n    return np.sum(u * v, axis=-1)\n", namespace)
    found = foreign_in_namespace(namespace, ALLOWED)
    assert found == {"scipy": ["sp", "expit"], "torch": ["softmax"]}
    # One function's check names only what that function uses, also through a global.
    assert foreign_in_namespace(namespace, ALLOWED, ["attention"]) == {"scipy": ["attention"]}
    assert foreign_in_namespace(namespace, ALLOWED, ["dot_product"]) == {}


KERNEL = """
import sys
sys.path.insert(0, sys.argv[1])
from mhakit_student import check
import numpy as np
import nbformat  # installed here, but no package that students may import
def dot_product(u, v):
    return np.sum(u * v, axis=-1)
check()
try:
    check("dot_product")
    print("dot_product: no AssertionError")
except AssertionError as error:
    print("dot_product raised", error)
"""


def test_check_in_the_kernel_names_an_import_that_grading_lacks(tmp_path):
    shutil.copytree(SOURCE, tmp_path / "s")
    done = subprocess.run([sys.executable, "-c", KERNEL, str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path / "s")
    row = next(line for line in done.stdout.splitlines() if line.startswith("导入 imports"))
    assert "nbformat" in row and "未通过 failed" in row, done.stdout
    assert "dot_product: no AssertionError" in done.stdout  # it does not use nbformat


@pytest.mark.slow
def test_selfcheck_py_names_an_import_of_the_saved_notebook_and_exits_1(numpy_only_python,
                                                                      tmp_path):
    folder = tmp_path / "student"
    shutil.copytree(SOURCE, folder)
    notebook = nbformat.read(str(folder / "mha.ipynb"), as_version=4)
    cell = next(c for c in notebook.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_softmax")
    cell.source = "import json\nimport scipy.special\n" + cell.source
    nbformat.write(notebook, str(folder / "mha.ipynb"))
    done = run_selfcheck(numpy_only_python, folder)
    assert done.returncode == 1
    row = next(line for line in done.stdout.splitlines() if line.startswith("导入 imports"))
    assert "scipy" in row and "answer_softmax:2" in row and "json" not in row


def test_a_module_the_notebook_writes_itself_is_no_foreign_import():
    from mhakit.selfcheck.imports import written_modules
    from mhakit.selfcheck.ipython_syntax import as_python

    cells = [("a", as_python("%%writefile helper.py\nimport numpy as np\n")),
             ("b", as_python("%%writefile -a 'more.py'\nx = 1\n")),
             ("c", "pass  # %%writefile typed.py\nx = 1\n"),  # where IPython is missing
             ("d", "import helper, more, typed\nimport scipy\n# %%writefile not_this.py\n")]
    assert written_modules(cells) == {"helper", "more", "typed"}
    assert foreign_in_cells(cells, ALLOWED) == [("d", 2, "scipy")]
    assert foreign_in_cells([("d", "import helper\n")], ALLOWED) == [("d", 1, "helper")]


def test_pylabs_names_come_from_packages_that_grading_offers_with_matplotlib():
    # matplotlib.pylab's star import brings dateutil's rrule and cycler's cycler: the
    # grading child has every package that an offered one needs, so neither is foreign.
    namespace = {}
    exec("from matplotlib.pylab import *\nfrom numpy import *\n", namespace)
    assert foreign_in_namespace(namespace, ("numpy", "matplotlib.pyplot")) == {}
    assert "dateutil" in foreign_in_namespace(namespace, ("numpy",))
    assert not offered("scipy", ("numpy", "matplotlib.pyplot"))


def test_the_kernels_check_leaves_out_a_module_its_cells_wrote(monkeypatch):
    from mhakit.selfcheck import runner
    from mhakit.selfcheck.runner import kernel_imports_row

    monkeypatch.setattr(runner, "shipped_imports", lambda: ALLOWED)  # the release's own
    helper = types.ModuleType("helper")
    namespace = {"helper": helper, "In": [
        "", "get_ipython().run_cell_magic('writefile', 'helper.py', 'x = 1\\n')\n",
        "import helper\n"]}
    assert kernel_imports_row(namespace) == []
    namespace["In"] = ["", "import helper\n"]
    assert kernel_imports_row(namespace) != []
    for history in ([1, None], 5, "import helper"):  # whatever a cell put there, it goes on
        namespace["In"] = history
        assert kernel_imports_row(namespace) != []
