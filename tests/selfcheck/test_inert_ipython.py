"""mhakit/selfcheck/inert_ipython.py: the cells run outside a kernel as they run in one.

The grading child and `python selfcheck.py` both run a notebook's cells through
``kernel_namespace`` and ``CellCompiler`` (see also tests/grader/test_kernel_semantics.py,
which takes the same cells through the confined child)."""

import sys

from mhakit.selfcheck.inert_ipython import NOTHING, CellCompiler, anything, kernel_namespace
from mhakit.selfcheck.notebook import run_cells

FUTURE_FIRST = "from __future__ import annotations\n\ndef dot(u, v):\n    return u @ v\n"
ANNOTATED_LATER = "def scale(x: Undefined) -> AlsoUndefined:\n    return 2 * x\n"
DATACLASS = ("from dataclasses import dataclass\n\n@dataclass\nclass Heads:\n"
             "    count: int\n    width: int = 0\n\nHEADS = Heads(4)\n")


def test_a_future_import_holds_for_the_cells_after_it_and_not_before():
    alone = kernel_namespace()
    try:
        exec(CellCompiler()(ANNOTATED_LATER, "<cell 2>"), alone)
    except NameError:
        pass  # evaluated at once, as in a kernel that has seen no future import
    else:
        raise AssertionError("annotations were postponed without a future import")
    compile_cell, namespace = CellCompiler(), kernel_namespace()
    exec(compile_cell(FUTURE_FIRST, "<cell 1>"), namespace)
    exec(compile_cell(ANNOTATED_LATER, "<cell 2>"), namespace)
    assert namespace["scale"](3) == 6
    assert namespace["scale"].__annotations__ == {"x": "Undefined", "return": "AlsoUndefined"}


def test_the_namespace_is_a_registered_module_so_dataclasses_read_string_annotations():
    errors = run_cells([("one", FUTURE_FIRST), ("two", DATACLASS)], kernel_namespace())
    assert errors == {}
    namespace = sys.modules["__student__"].__dict__
    assert namespace["HEADS"].width == 0 and namespace["Heads"].__module__ == "__student__"
    assert namespace["__builtins__"] is sys.modules["builtins"]


def test_each_namespace_is_fresh():
    first = kernel_namespace()
    first["leftover"] = 1
    assert "leftover" not in kernel_namespace()


def test_what_another_module_of_ipython_holds_does_nothing():
    shell = anything("InteractiveShell")
    shell.ast_node_interactivity = "all"
    capture_output = anything("capture_output")
    with capture_output() as captured:
        pass
    assert captured is NOTHING and str(captured.stdout) == ""
    assert anything("display_html") is anything("display")


def shell_of(namespace, writes):
    from mhakit.selfcheck.inert_ipython import get_ipython, kernel_names

    namespace.update(kernel_names(namespace, writes=writes))
    return get_ipython()


def test_writefile_writes_only_where_the_shell_may_write(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shell_of({}, writes=False).run_cell_magic("writefile", "helper.py", "x = 1\n")
    assert not (tmp_path / "helper.py").exists()  # selfcheck.py: the kernel wrote it
    shell = shell_of({}, writes=True)
    shell.run_cell_magic("writefile", "'helper.py'", "x = 1\n")
    shell.run_cell_magic("writefile", "-a helper.py", "y = 2\n")
    assert (tmp_path / "helper.py").read_text(encoding="utf-8") == "x = 1\ny = 2\n"


def test_run_joins_a_files_names_to_the_notebooks_and_stops_only_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text(
        "import math\nROOT = math.sqrt(4)\nif __name__ == '__main__':\n    MAIN = True\n",
        encoding="utf-8")
    (tmp_path / "uses_outer.py").write_text("INNER = OUTER + 1\n", encoding="utf-8")
    (tmp_path / "raises.py").write_text("BEFORE = 1\nraise ValueError\n", encoding="utf-8")
    namespace = {"OUTER": 1}
    shell = shell_of(namespace, writes=False)
    shell.run_line_magic("run", "helper.py")
    assert namespace["ROOT"] == 2 and namespace["MAIN"] is True and "__file__" not in namespace
    shell.run_line_magic("run", "uses_outer.py")  # its own namespace: OUTER is not there
    assert "INNER" not in namespace
    shell.run_line_magic("run", "-i uses_outer.py")
    assert namespace["INNER"] == 2
    shell.run_line_magic("run", "raises.py")
    shell.run_line_magic("run", "missing.py")
    shell.run_line_magic("run", "other.ipynb")
    assert namespace["BEFORE"] == 1
