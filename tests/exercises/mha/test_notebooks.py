"""The released notebooks, run top to bottom in a real kernel, in both languages."""

import math
import shutil

import nbformat
import pytest

from mhakit.exercises.mha import reference
from tests.mha_exercise import EXERCISE, ASSIGNMENTS
from tests.mha_exercise import lending
from tests.mha_exercise import fill, sample_answers

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def execute(folder):
    from nbclient import NotebookClient

    notebook = nbformat.read(str(folder / "mha.ipynb"), as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    return notebook


def text_of(cell):
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", "") + output.get("evalue", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def by_id(notebook):
    return {cell.get("id"): cell for cell in notebook.cells}


def errors(notebook):
    return [(cell.get("id"), text_of(cell)[:300]) for cell in notebook.cells
            if any(o.output_type == "error" for o in cell.get("outputs", []))]


@pytest.fixture(scope="module", params=list(ASSIGNMENTS))
def release(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param) / request.param
    shutil.copytree(REPO / "assignments" / request.param, folder)
    return folder


def test_the_untouched_notebook_runs_to_the_end_and_says_what_is_missing(release):
    notebook = execute(release)
    assert errors(notebook) == []
    cells = by_id(notebook)
    for name in EXERCISE.function_names:
        assert "not yet implemented" in text_of(cells[f"test_{name}"])
    assert "0 of 9 parts pass" in text_of(cells["selfcheck_all"])
    demo = text_of(cells["demo_three_heads"])
    assert "multi_head_attention" in demo and "Traceback" not in demo
    assert len(demo.strip().splitlines()) == 2  # one line per demonstration, no traceback


def test_with_the_reference_every_cell_and_every_self_check_passes(release):
    path = release / "mha.ipynb"
    filled = fill(nbformat.read(str(path), as_version=4), sample_answers()["alice_correct"])
    nbformat.write(filled, str(path))
    notebook = execute(release)
    assert errors(notebook) == []
    cells = by_id(notebook)
    assert "9 of 9 parts pass" in text_of(cells["selfcheck_all"])
    for name in EXERCISE.function_names:
        assert "passed" in text_of(cells[f"test_{name}"]), name
    # The quiz's key is not shipped: answered, graded later, never "passed".
    quiz = text_of(cells["test_quiz"])
    assert "answered" in quiz and "passed" not in quiz
    one = lending.compare_sentences(reference.multi_head_attention, 1)
    three = lending.compare_sentences(reference.multi_head_attention, 3)
    shown = text_of(cells["demo_three_heads"])
    assert f"{one:.2f}" in shown and f"{three:.2f}" in shown  # the numbers come from the code
    for plot in ("demo_one_set", "demo_three_heads", "demo_shape_flow", "demo_remove_heads"):
        assert any("image/png" in o.get("data", {}) for o in cells[plot].outputs), plot
        assert sum("image/png" in o.get("data", {}) for o in cells[plot].outputs) == 1, plot
    assert "1,048,576" in text_of(cells["demo_cost"])
    assert f"{math.sqrt(64):g}" in text_of(cells["demo_divide_by_eight"])
