"""What runs in a student's kernel earns its points when graded (issue 23): IPython's own
syntax, the packages the release lets students import, a time limit per cell. Each
notebook goes the whole way: saved file, IPython's reading, the confined child."""


from mhakit.grader.grading import grade_notebook, part_summary
from tests.attacks.corpus import Attack
from tests.mha_exercise import sample_answers

CORRECT = sample_answers()["alice_correct"]


def graded(tmp_path, extra_cells=(), **edits):
    path = tmp_path / "mha.ipynb"
    path.write_bytes(Attack("kernel", edits=edits, extra_cells=extra_cells).make())
    return grade_notebook(path, seed=5)


def test_ipython_syntax_around_correct_definitions_costs_nothing(tmp_path):
    split = CORRECT["answer_split_heads"].replace(
        "if num_heads < 1 or d_model % num_heads != 0:",
        "if (num_heads < 1\n            or d_model\n            % num_heads != 0):")
    assert split != CORRECT["answer_split_heads"]
    result = graded(
        tmp_path,
        answer_split_heads=split + "\nnp.swapaxes?\nt = %timeit -o split_heads(np.ones((2, 4)), 2)\n"
                                   "files = !ls /\nprint(t.best * 1e3, files)\n",
        answer_concat_heads="%%time\n" + CORRECT["answer_concat_heads"],
        answer_attention="%load_ext autoreload\n%autoreload 2\n" + CORRECT["answer_attention"]
                         + "\nout = %time attention(np.ones((1, 2, 3)), np.ones((1, 2, 3)), "
                           "np.ones((1, 2, 3)))\nassert out[0].shape == (1, 2, 3)\n")
    assert result.score == 100, result.extra["load_errors"]
    assert not result.extra["load_errors"]


def test_plots_and_ipython_display_in_answer_cells_cost_nothing(tmp_path):
    header = ("import matplotlib.pyplot as plt\nfrom IPython.display import display, HTML, "
              "Markdown\nimport IPython\n%matplotlib inline\n")
    plot = ("\nfigure, axes = plt.subplots()\naxes.imshow(np.eye(3))\nplt.title('heads')\n"
            "plt.savefig('heads.png')\nplt.show()\ndisplay(HTML('<b>done</b>'), Markdown('*x*'))\n"
            "IPython.display.display(np.ones(2))\n")
    result = graded(tmp_path,
                    answer_output_projection=header + CORRECT["answer_output_projection"] + plot,
                    extra_cells=("display(np.arange(3))\nget_ipython().system('ls')\n",))
    assert result.score == 100, result.extra["load_errors"]


def test_an_import_that_grading_lacks_is_named_with_what_it_cost(tmp_path):
    result = graded(tmp_path,
                    answer_split_heads="import scipy.special\n" + CORRECT["answer_split_heads"])
    assert result.parts["split_heads"] == 0
    assert result.score == 100 - 10
    note = result.extra["imports"]["split_heads"]
    assert "scipy" in note and "answer_split_heads" in note and "split_heads" in note
    assert note in part_summary(result, "split_heads")


def test_cells_that_each_finish_within_the_cell_limit_are_graded_in_full(tmp_path,
                                                                        monkeypatch):
    # Three scratch cells of 1.2 s each: more than a 2 s limit together, not one by one.
    monkeypatch.setenv("MHAKIT_CELL_SECONDS", "2")
    monkeypatch.setenv("MHAKIT_CALL_SECONDS", "2")
    monkeypatch.setenv("MHAKIT_ZYGOTE", "1")
    scratch = "import time\ntime.sleep(1.2)\n"
    result = graded(tmp_path, extra_cells=(scratch,) * 3)
    assert result.score == 100, result.extra["crashes"]


def test_a_cell_over_its_limit_still_stops_the_load(tmp_path, monkeypatch):
    monkeypatch.setenv("MHAKIT_CELL_SECONDS", "1")
    monkeypatch.setenv("MHAKIT_CALL_SECONDS", "1")
    monkeypatch.setenv("MHAKIT_SUBMISSION_SECONDS", "6")
    result = graded(tmp_path, extra_cells=("import time\ntime.sleep(30)\n",))
    assert result.score < 100
    assert any("超过了 1 秒" in crash for crash in result.extra["crashes"]), result.extra[
        "crashes"]


def test_a_submission_that_plots_is_forked_from_a_parent_that_has_pyplot_imported(tmp_path):
    from mhakit.grader.imports import slow_imports
    from tests.mha_exercise import EXERCISE

    cells = [("a", "import matplotlib.pyplot as plt\n"), ("b", "import numpy as np\n")]
    assert slow_imports(cells, EXERCISE.student_imports) == ("matplotlib.pyplot",)
    assert slow_imports([("b", "import numpy, json\nfrom IPython.display import HTML\n")],
                        EXERCISE.student_imports) == ()
    result = graded(tmp_path, answer_dot_product="from matplotlib import pyplot\n"
                    + CORRECT["answer_dot_product"])
    assert result.score == 100
    assert any("matplotlib.pyplot" in layer for layer in result.extra["isolation"])


def test_a_patch_of_numpy_that_a_cell_makes_holds_for_the_later_calls_as_in_a_kernel(tmp_path):
    # Code written for numpy before 1.24 brings back np.int with a shim; in a kernel the
    # shim holds for every cell and call after it.
    split = CORRECT["answer_split_heads"].replace("d_k = d_model // num_heads",
                                                  "d_k = np.int(d_model / num_heads)")
    assert split != CORRECT["answer_split_heads"]
    result = graded(tmp_path, answer_split_heads="np.int = int  # gone since numpy 1.24\n" + split)
    assert result.score == 100, result.tests


def test_patches_of_what_the_childs_runtime_uses_leave_its_work_alone(tmp_path):
    # The runtime reads requests and writes replies with json, struct, numpy and the
    # builtins, through its own copies: the student's patches of the modules do not reach it.
    patches = ("import builtins, json, struct\n"
               "json.dumps = json.loads = struct.pack = struct.unpack = None\n"
               "np.frombuffer = np.ascontiguousarray = None\n"
               "builtins.callable = builtins.enumerate = None\n")
    result = graded(tmp_path, extra_cells=(patches,))
    assert result.score == 100, result.extra["load_errors"]


def test_a_builtin_replaced_by_an_object_whose_equality_raises_leaves_the_runtime_working(
        tmp_path):
    patch = ("import builtins\n\nclass Loud:\n    def __eq__(self, other):\n"
             "        raise RuntimeError('compared')\n    __hash__ = object.__hash__\n\n"
             "builtins.breakpoint = Loud()\n")
    result = graded(tmp_path, extra_cells=(patch,))
    assert result.score == 100, result.extra["crashes"]


def test_a_name_a_cell_adds_to_builtins_is_found_by_later_code_as_in_a_kernel(tmp_path):
    split = CORRECT["answer_split_heads"].replace("X = np.asarray(X)", "X = TO_ARRAY(X)")
    assert split != CORRECT["answer_split_heads"]
    result = graded(tmp_path, answer_split_heads=(
        "import builtins\nbuiltins.TO_ARRAY = np.asarray\n" + split))
    assert result.score == 100, result.tests


def test_any_module_of_ipython_imports_and_does_nothing_as_the_kernel_shows(tmp_path):
    # IPython.core.display is where older lessons import HTML from; InteractiveShell's
    # setting is a common first cell; capture_output hides a cell's prints.
    result = graded(tmp_path, answer_softmax=(
        "from IPython.core.display import HTML, Markdown\n"
        "from IPython.core.display_functions import display\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.ast_node_interactivity = 'all'\n"
        "from IPython.utils.capture import capture_output\n"
        "from IPython import embed\n"
        "with capture_output() as captured:\n"
        "    display(HTML('<b>softmax</b>'))\n" + CORRECT["answer_softmax"]))
    assert result.score == 100, result.extra["load_errors"]


def test_a_future_import_holds_for_the_later_cells_as_in_a_kernel(tmp_path):
    # IPython's compiler keeps a cell's future imports for the cells after it: softmax's
    # annotation names a type that is never defined, which postponed annotations allow.
    softmax = CORRECT["answer_softmax"].replace("def softmax(x, axis=-1):",
                                                "def softmax(x: ArrayLike, axis=-1):")
    assert softmax != CORRECT["answer_softmax"]
    result = graded(tmp_path, answer_softmax=softmax, answer_dot_product=(
        "from __future__ import annotations\n" + CORRECT["answer_dot_product"]))
    assert result.score == 100, result.extra["load_errors"]


def test_a_dataclass_with_postponed_annotations_finds_its_module_as_in_a_kernel(tmp_path):
    # dataclasses reads string annotations through sys.modules[cls.__module__]: the
    # cells' namespace is a registered module's, as the kernel's is __main__'s.
    result = graded(tmp_path, answer_multi_head_attention=(
        "from __future__ import annotations\nfrom dataclasses import dataclass\n\n"
        "@dataclass\nclass Heads:\n    count: int\n    width: int = 0\n\n"
        "assert Heads(2).width == 0\n" + CORRECT["answer_multi_head_attention"]))
    assert result.score == 100, result.extra["load_errors"]


def test_doctest_examples_in_every_answer_cell_cost_nothing(tmp_path):
    # Prompts and "?" in docstrings only look like IPython's syntax: reading them costs
    # the notebook's IPython budget one pass per cell, not one per such line.
    examples = "".join(f"    >>> helper({n})\n    {n}\n    ... # why?\n" for n in range(16))
    helper = f'\n\ndef helper(x):\n    """x itself.\n\n{examples}    """\n    return x\n'
    edits = {cell: source + helper for cell, source in CORRECT.items()
             if cell.startswith("answer_") and "def " in source}
    assert len(edits) == 8
    result = graded(tmp_path, **edits)
    assert result.score == 100, result.extra["load_errors"]


def test_a_helper_file_that_the_notebook_writes_is_run_imported_and_read_as_in_a_kernel(
        tmp_path):
    # %%writefile writes into the child's own folder; %run, import and open find it there,
    # as the kernel finds it in the student's folder.
    result = graded(
        tmp_path,
        answer_dot_product="%%writefile helper.py\nimport numpy as np\n\n"
                           + CORRECT["answer_dot_product"],
        answer_attention_scores="%run helper.py\n" + CORRECT["answer_attention_scores"],
        answer_softmax="import helper\nassert helper.dot_product(np.ones(2), np.ones(2)) == 2\n"
                       + CORRECT["answer_softmax"],
        answer_attention="exec(open('helper.py').read())\n" + CORRECT["answer_attention"])
    assert result.score == 100, result.extra["load_errors"]
    assert result.extra["imports"] == {}  # the notebook's own module is no foreign import


def test_pylab_puts_numpys_and_pyplots_names_in_the_namespace_as_in_a_kernel(tmp_path):
    softmax = ("%pylab inline\n\ndef softmax(x, axis=-1):\n"
               "    e = exp(x - amax(x, axis=axis, keepdims=True))\n"
               "    return e / e.sum(axis=axis, keepdims=True)\n")
    result = graded(tmp_path, answer_softmax=softmax)
    assert result.score == 100, (result.extra["load_errors"], result.parts)
