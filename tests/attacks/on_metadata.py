"""Attacks on metadata: see tests/attacks/corpus.py for how an Attack is graded.

Each tampering kind (points, grade ids, cell types, extra or duplicated graded cells,
outputs planted in test cells) must be flagged on both grading paths, and must earn
nothing. What honest students change by running their notebook (outputs in answer
cells, the kernelspec) must never be flagged. Whatever a cell's metadata says, the
graded definitions are those left when the code cells run from top to bottom: a later
cell that redefines softmax wins on both paths.
"""

import copy
import json
import shutil
import tempfile
from functools import lru_cache

import nbformat

from tests.mha_exercise import sample_answers

from .corpus import (RELEASE, UNIFORM_SOFTMAX, Attack, _cells_where, _duplicate_with,
                            _rename)

REFERENCE_SOFTMAX = sample_answers()["alice_correct"]["answer_softmax"]


def _set_meta(grade_id, **changes):
    """Change fields of the nbgrader metadata of the cell(s) named ``grade_id``."""
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            notebook["cells"][index]["metadata"]["nbgrader"].update(changes)
        return notebook
    return edit


def _then(*edits):
    def edit(notebook):
        for one in edits:
            notebook = one(notebook)
        return notebook
    return edit


def _as_markdown(grade_id):
    """The cell becomes a markdown cell, as Jupyter's "M" key makes it."""
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            cell = notebook["cells"][index]
            cell["cell_type"] = "markdown"
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        return notebook
    return edit


def _as_code(grade_id, source):
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            cell = notebook["cells"][index]
            cell.update(cell_type="code", source=source, outputs=[], execution_count=None)
        return notebook
    return edit


def _swap_ids(first, second):
    """The two cells trade grade ids (and nothing else)."""
    def edit(notebook):
        [a], [b] = _cells_where(notebook, first), _cells_where(notebook, second)
        meta_a = notebook["cells"][a]["metadata"]["nbgrader"]
        meta_b = notebook["cells"][b]["metadata"]["nbgrader"]
        meta_a["grade_id"], meta_b["grade_id"] = second, first
        return notebook
    return edit


def _added_cell(source, **nbgrader):
    """A code cell at the end whose nbgrader metadata the student wrote by hand."""
    def edit(notebook):
        cell = nbformat.v4.new_code_cell(source)
        cell["metadata"]["nbgrader"] = dict(
            {"grade": False, "locked": False, "schema_version": 3, "solution": False},
            **nbgrader)
        cell["id"] = "added-by-hand"
        notebook["cells"].append(json.loads(json.dumps(cell)))
        return notebook
    return edit


def _outputs(grade_id, outputs, execution_count):
    """Outputs written into the saved file by hand."""
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            cell = notebook["cells"][index]
            cell["outputs"], cell["execution_count"] = copy.deepcopy(outputs), execution_count
        return notebook
    return edit


def _stdout(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


# What the self-check prints for a passing softmax, as a kernel wrote it (see below).
PASSING_TABLE = ("函数 function  状态 status  说明 details\n" + "-" * 68 + "\n"
                 "softmax        通过 passed  4/4 项检查通过\n\n1 of 1 passed\n")


def _other_kernelspec(notebook):
    notebook["metadata"]["kernelspec"] = {"display_name": "Python 3.11 (course env)",
                                          "language": "python", "name": "conda-env-course-py"}
    notebook["metadata"]["language_info"] = {"name": "python", "version": "3.11.9"}
    return notebook


def _untouched_release(notebook):
    return json.loads(RELEASE.read_text(encoding="utf-8"))


def _answer_outputs(notebook):
    """Outputs in every answer cell, of every kind a kernel writes, left from a run."""
    answers = [c for c in notebook["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")
               and c["cell_type"] == "code"]
    for count, cell in enumerate(answers, start=1):
        cell["execution_count"] = count
        cell["outputs"] = [
            _stdout("debug: shapes look right\n"),
            {"output_type": "stream", "name": "stderr", "text": "RuntimeWarning: overflow\n"},
            {"output_type": "execute_result", "execution_count": count, "metadata": {},
             "data": {"text/plain": "12"}},
            {"output_type": "display_data", "metadata": {},
             "data": {"text/plain": "<Figure size 640x480 with 1 Axes>"}},
            {"output_type": "error", "ename": "NameError", "evalue": "name 'x' is not defined",
             "traceback": ["NameError: name 'x' is not defined"]},
        ]
    return notebook


@lru_cache(maxsize=2)
def _executed_text(text, release_folder):
    """The notebook run from top to bottom in a real Jupyter kernel, beside the release's
    self-check files, as a student leaves it who runs every cell in order, failing
    self-checks included (cached: both grading paths make this attack)."""
    from nbclient import NotebookClient

    notebook = nbformat.reads(text, as_version=4)
    with tempfile.TemporaryDirectory(prefix="mhakit-run-") as folder:
        shutil.copytree(release_folder, folder, dirs_exist_ok=True)
        NotebookClient(notebook, timeout=120, kernel_name="python3",
                       allow_errors=True, resources={"metadata": {"path": folder}}).execute()
    return nbformat.writes(notebook)


def _run_top_to_bottom(notebook, release_folder=RELEASE.parent):
    return json.loads(_executed_text(json.dumps(notebook), str(release_folder)))


# Answer cells that show something when run, so that the run leaves outputs in them.
SHOWING_SOFTMAX = (REFERENCE_SOFTMAX + "\n\nprint(softmax(np.array([1.0, 2.0, 3.0])))\n"
                   "softmax(np.zeros(4))\n")

METADATA_ATTACKS = [
    # --- what honest students change: never flagged, full marks
    Attack("run-top-to-bottom-in-jupyter", notebook=_run_top_to_bottom,
           edits={"answer_softmax": SHOWING_SOFTMAX}),
    Attack("outputs-in-answer-cells", notebook=_answer_outputs),
    Attack("another-kernelspec", notebook=_other_kernelspec),
    Attack("untouched-release", zero="all", notebook=_untouched_release),
    # --- points
    Attack("test-cell-points-raised", tampering=True,
           notebook=_set_meta("test_softmax", points=100)),
    Attack("written-answer-points-raised", tampering=True,
           notebook=_set_meta("written_1", points=40)),
    # --- grade ids
    Attack("test-cell-id-renamed", tampering=True,
           notebook=_rename("test_attention", "test_attention_v2")),
    Attack("answer-ids-swapped", tampering=True,
           notebook=_swap_ids("answer_softmax", "answer_attention")),
    # --- cell types
    Attack("test-cell-made-markdown", tampering=True, notebook=_as_markdown("test_softmax")),
    Attack("answer-cell-made-markdown", zero=("softmax",), tampering=True,
           notebook=_as_markdown("answer_softmax")),
    Attack("written-answer-made-code-redefining-softmax", zero=("softmax",), tampering=True,
           notebook=_as_code("written_2", UNIFORM_SOFTMAX)),
    # --- flags
    Attack("answer-cell-marked-graded", tampering=True,
           notebook=_set_meta("answer_softmax", grade=True, points=12)),
    Attack("answer-cell-marked-locked", tampering=True,
           notebook=_set_meta("answer_softmax", locked=True)),
    Attack("test-cell-not-graded", tampering=True,
           notebook=_set_meta("test_multi_head_attention", grade=False)),
    Attack("test-cell-unlocked-redefining-softmax", zero=("softmax",), tampering=True,
           notebook=_then(_set_meta("test_softmax", locked=False),
                          _as_code("test_softmax", UNIFORM_SOFTMAX))),
    # --- extra or duplicated graded cells
    Attack("extra-graded-cell", tampering=True, notebook=_added_cell(
        "print('bonus')\n", grade=True, grade_id="test_bonus", points=50)),
    Attack("extra-graded-cell-redefining-softmax", zero=("softmax",), tampering=True,
           notebook=_added_cell(UNIFORM_SOFTMAX, grade=True, locked=True,
                                grade_id="test_softmax_again", points=12)),
    Attack("test-cell-duplicated", tampering=True, notebook=_duplicate_with(
        "test_softmax", '# 自查 / self-check: softmax\ncheck("softmax")')),
    Attack("test-cell-duplicated-redefining-softmax", zero=("softmax",), tampering=True,
           notebook=_duplicate_with("test_softmax", UNIFORM_SOFTMAX)),
    # --- outputs planted in test cells (they earn nothing: softmax is wrong in each)
    Attack("planted-pass-in-test-cell", zero=("softmax",), tampering=True,
           edits={"answer_softmax": UNIFORM_SOFTMAX},
           notebook=_outputs("test_softmax", [_stdout("All tests passed!\n")], 9)),
    Attack("planted-points-in-test-cell", zero=("softmax",), tampering=True,
           edits={"answer_softmax": UNIFORM_SOFTMAX},
           notebook=_outputs("test_softmax", [
               _stdout(PASSING_TABLE), {"output_type": "execute_result", "execution_count": 9,
                                        "metadata": {}, "data": {"text/plain": "12"}}], 9)),
    Attack("planted-table-in-a-cell-never-run", zero=("softmax",), tampering=True,
           edits={"answer_softmax": UNIFORM_SOFTMAX},
           notebook=_outputs("test_softmax", [_stdout(PASSING_TABLE)], None)),
]

# The attacks above in which a later cell redefines softmax, whatever its metadata.
REDEFINING_SOFTMAX = [a for a in METADATA_ATTACKS if a.name.endswith("redefining-softmax")]
