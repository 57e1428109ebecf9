"""A student's day in JupyterLab, in both languages: run the untouched release, write one
function, then everything, and press nbgrader's Validate button."""

import shutil

import pytest

from tests.mha_exercise import ASSIGNMENTS
from tests.mha_exercise import SECTIONS
from tests.mha_exercise import sample_answers

from .conftest import REPO, screenshot
from .notebook_page import NotebookPage, cell_indexes, table_rows

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FUNCTIONS = [name for name in SECTIONS if name != "quiz"]


@pytest.fixture(params=list(ASSIGNMENTS), ids=ASSIGNMENTS.get)
def student_notebook(request, lab):
    """A fresh copy of the committed release, inside the server's root."""
    folder = lab.root / "students" / request.param
    shutil.copytree(REPO / "assignments" / request.param, folder)
    return ASSIGNMENTS[request.param], folder / "mha.ipynb"


def show_cell(notebook, index, name):
    """A screenshot with the cell at the top, so that no answer above it shows."""
    notebook.cell(index).evaluate("cell => cell.scrollIntoView({block: 'start'})")
    screenshot(notebook.page, name)


def untouched_run_reports_what_is_missing(notebook, ids, shot):
    notebook.run_all()
    rows = table_rows(notebook.outputs(ids["selfcheck_all"]))
    assert sorted(rows) == sorted(SECTIONS)  # one row per part, nothing unparsed
    assert all(rows[name] == "not yet implemented" for name in FUNCTIONS), rows
    assert rows["quiz"] != "passed"
    # Each unfinished part's test cell tells Validate "0" in one line on stderr, and
    # nothing else is on stderr: no traceback, no warning.
    notes = notebook.error_outputs().all_inner_texts()
    assert len(notes) == len(SECTIONS) and all("Validate" in note for note in notes), notes
    assert "Traceback" not in notebook.all_outputs()
    show_cell(notebook, ids["selfcheck_all"], f"{shot}-1-untouched-selfcheck")


def one_function_turns_its_row_to_passed(notebook, ids, answers, shot):
    notebook.type_code(ids["answer_softmax"], answers["answer_softmax"])
    notebook.run_cell(ids["answer_softmax"])
    notebook.run_cell(ids["test_softmax"])
    assert table_rows(notebook.outputs(ids["test_softmax"])) == {"softmax": "passed"}
    show_cell(notebook, ids["test_softmax"], f"{shot}-2-softmax-passes")
    notebook.run_cell(ids["selfcheck_all"])
    rows = table_rows(notebook.outputs(ids["selfcheck_all"]))
    assert rows["softmax"] == "passed"
    assert all(rows[name] != "passed" for name in SECTIONS if name != "softmax"), rows


def finished_notebook_passes_and_draws(notebook, ids, sources, answers, shot):
    for grade_id, text in answers.items():
        if grade_id.startswith("written_"):
            notebook.type_markdown(ids[grade_id], text)
        elif grade_id != "answer_softmax":
            notebook.type_code(ids[grade_id], text)
    notebook.run_all()
    rows = table_rows(notebook.outputs(ids["selfcheck_all"]))
    assert rows == {name: "passed" for name in FUNCTIONS} | {"quiz": "answered"}
    assert notebook.error_outputs().count() == 0
    plot_cells = [i for i, source in enumerate(sources) if "plots." in source]
    assert len(plot_cells) >= 4
    for index in plot_cells:
        widths = notebook.images(index)
        assert widths and all(w > 0 for w in widths), (index, widths)
    show_cell(notebook, plot_cells[1], f"{shot}-3-plots")
    show_cell(notebook, ids["selfcheck_all"], f"{shot}-4-all-passed")


def test_student_runs_writes_and_validates(page, lab, student_notebook):
    language, path = student_notebook
    ids, sources = cell_indexes(path)
    answers = sample_answers()["alice_correct"]
    shot = f"student-{language}"
    notebook = NotebookPage(page, lab, path)
    notebook.open()
    screenshot(page, f"{shot}-0-opened")

    untouched_run_reports_what_is_missing(notebook, ids, shot)
    one_function_turns_its_row_to_passed(notebook, ids, answers, shot)
    finished_notebook_passes_and_draws(notebook, ids, sources, answers, shot)

    notebook.save()
    dialog = notebook.validate()
    dialog.wait_for()
    screenshot(page, f"{shot}-5-validated")
    assert "validation-success" in dialog.get_attribute("class")
    assert dialog.inner_text().strip() == "Success! Your notebook passes all the tests."
