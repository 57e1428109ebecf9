"""A cell compiles when graded exactly when it compiles in a kernel, and defines the same."""

import subprocess
import sys
import textwrap

import pytest

from mhakit.selfcheck import ipython_syntax
from mhakit.selfcheck.ipython_syntax import as_python
from mhakit.selfcheck.notebook import run_cells
from tests.conftest import REPO

BREAK_BEFORE_OPERATOR = textwrap.dedent("""\
    def split(X, num_heads):
        if (X.shape[-1]
                % num_heads != 0):
            raise ValueError("no")
        ok = (X.shape[-1] // num_heads
              != 0)
        return ok
    """)
IPYTHON_AFTER_A_DEFINITION = textwrap.dedent("""\
    def double(x):
        return 2 * x
    np.swapaxes?
    np.swapaxes??
    ?double
    t = %timeit -o double(3)
    files = !ls /
    !pip install scipy
    %matplotlib inline
    print(t.best * 1e3, files)
    def triple(x):
        return 3 * x
    """)


def run(source):
    namespace = {"__name__": "__student__"}
    errors = run_cells([("cell", as_python(source))], namespace)
    return namespace, errors


def test_a_continuation_line_that_begins_with_an_operator_is_left_as_it_is():
    assert as_python(BREAK_BEFORE_OPERATOR) == BREAK_BEFORE_OPERATOR
    namespace, errors = run(BREAK_BEFORE_OPERATOR)
    assert not errors and namespace["split"](np_ones((2, 6)), 3)


def np_ones(shape):
    import numpy as np
    return np.ones(shape)


def test_magics_shell_escapes_and_help_cost_no_definition_and_raise_nothing(capsys):
    namespace, errors = run(IPYTHON_AFTER_A_DEFINITION)
    assert not errors
    assert namespace["double"](2) == 4 and namespace["triple"](2) == 6
    assert capsys.readouterr().out.strip() == ""  # the inert values print as nothing
    assert not namespace["files"] and list(namespace["files"]) == []


@pytest.mark.parametrize("magic", ["%%time", "%%prun -s cumulative", "%%capture captured"])
def test_a_cell_magic_that_runs_its_cell_defines_what_the_cell_defines(magic):
    source = f"{magic}\ndef double(x):\n    return 2 * x\ny = double(4)\n"
    namespace, errors = run(source)
    assert not errors and namespace["double"](1) == 2 and namespace["y"] == 8


def test_a_cell_magic_that_does_not_run_its_cell_in_the_kernel_defines_nothing():
    namespace, errors = run("%%bash\nrm -rf /\n")
    assert not errors
    namespace, errors = run("%%timeit\ndef double(x):\n    return 2 * x\n")
    assert not errors and "double" not in namespace  # %%timeit's cell has its own scope


def test_time_gives_the_value_of_its_expression_and_runs_its_statement():
    namespace, errors = run("x = %time 6 * 7\n%time y = x + 1\n")
    assert not errors and namespace["x"] == 42 and namespace["y"] == 43


def test_what_does_not_compile_in_a_kernel_does_not_compile_when_graded():
    namespace, errors = run("def f(:\n    pass\n")
    assert "SyntaxError" in errors["cell"]
    namespace, errors = run("x = 1\n    %timeit x\n")  # IPython refuses the indent too
    assert "IndentationError" in errors["cell"]


def test_without_ipython_a_cell_that_compiles_is_left_alone_and_magic_lines_are_skipped(
        monkeypatch):
    monkeypatch.setattr(ipython_syntax, "manager", lambda: None)
    assert as_python(BREAK_BEFORE_OPERATOR) == BREAK_BEFORE_OPERATOR
    namespace, errors = run("%matplotlib inline\n!pip install x\ndef f(x):\n    return x\n")
    assert not errors and namespace["f"](3) == 3


@pytest.mark.slow
def test_the_selfcheck_reads_cells_in_a_python_without_ipython(numpy_only_python, tmp_path):
    # A student's bare Python: the shipped self-check imports no IPython and still runs.
    script = ("import sys; sys.path.insert(0, sys.argv[1])\n"
              "from mhakit.selfcheck.ipython_syntax import as_python\n"
              "print(repr(as_python('%time x = 1\\ny = 2\\n')))\n")
    from tests.conftest import REPO

    done = subprocess.run([str(numpy_only_python), "-c", script, str(REPO)],
                          capture_output=True, text=True, check=True)
    assert "pass  # %time x = 1" in done.stdout
    assert "y = 2" in done.stdout
    assert sys.executable != str(numpy_only_python)


def tokenized(monkeypatch):
    """[characters] of each pass IPython's transformer makes over a cell's tokens."""
    work = []
    one_pass = ipython_syntax.manager().do_one_token_transform
    monkeypatch.setattr(ipython_syntax.manager(), "do_one_token_transform",
                        lambda lines: work.append(sum(map(len, lines))) or one_pass(lines))
    return work


def test_a_notebook_cannot_make_the_reader_tokenize_without_bound(monkeypatch):
    # IPython tokenizes a cell again for each line it changes: the reader's budget caps
    # that work per notebook, and a cell past it fails to compile, saying why.
    work = tokenized(monkeypatch)
    reader = ipython_syntax.Reader()
    heavy = "%time x = 1\n" * 40 + "y = 2\n" * 200
    read = [reader.as_python(heavy) for _ in range(200)]
    assert 0 < sum(work) <= ipython_syntax.BUDGET
    assert "get_ipython()" in read[0] and read[-1].startswith("raise SyntaxError(")
    namespace, errors = run("%time x = 1\n" * 20_000)
    assert "IPython" in errors["cell"]


def doctested(number):
    """A function whose docstring holds 16 doctest examples, each with a comment that
    ends in a question mark: 48 lines that look like IPython's syntax and are not."""
    examples = "".join(f"    >>> scaled{number}({n})\n    {2 * n}\n    ... # and so on?\n"
                       for n in range(16))
    return f'def scaled{number}(x):\n    """Twice x.\n\n{examples}    """\n    return 2 * x\n'


def test_what_only_looks_like_ipython_costs_a_single_pass_as_in_the_kernel(monkeypatch):
    # Doctest prompts in docstrings and comments that end in "?" match the pattern that
    # sends a cell to IPython, which changes nothing in them: a notebook of such cells is
    # read whole, each cell in one pass, and runs as it does in a kernel.
    work = tokenized(monkeypatch)
    reader = ipython_syntax.Reader()
    cells = [doctested(number) for number in range(60)]
    suspected = sum(len(ipython_syntax.IPYTHON_SYNTAX.findall(cell)) * len(cell)
                    for cell in cells)
    assert suspected > 10 * ipython_syntax.BUDGET  # what the reader charged them before
    read = [reader.as_python(cell) for cell in cells]
    assert read == cells and work == [len(cell) for cell in cells]
    errors = run_cells([(str(number), cell) for number, cell in enumerate(read)], {})
    assert errors == {}


def test_plain_python_and_indented_cells_skip_the_tokenizer_and_read_the_same():
    plain = "x = 1\n" * 50_000
    assert as_python(plain) == plain
    indented = "    def f():\n        return 1\n"
    assert as_python(indented) == ipython_syntax.manager().transform_cell(indented)


def test_a_cell_without_ipython_syntax_imports_no_ipython():
    # IPython's import is a third of a self-check's time: only a cell that needs it pays.
    script = ("import sys\n"
              "from mhakit.selfcheck.ipython_syntax import as_python\n"
              "as_python('def f(x):\\n    return x % 2 != 0\\n')\n"
              "before = 'IPython' in sys.modules\n"
              "as_python('%time x = 1\\n')\n"
              "print(before, 'IPython' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.split() == ["False", "True"]


def test_many_cell_magics_on_top_of_each_other_are_read_without_recursion():
    namespace, errors = run("%%time\n" * 5000 + "def f(x):\n    return x\n")
    assert not errors and namespace["f"](1) == 1
