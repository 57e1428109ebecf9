"""The instructor's day: release through a local exchange, a student fetches and submits,
then collect, autograde, feedback; formgrader and the feedback page, seen in the browser."""

import re

import nbformat
import pytest

from autograder.mistakes import CATALOGUE
from autograder.sample_class import fill, sample_answers

from ..test_nbgrader import nbgrader
from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STUDENT = "ada"
SEED = "--IsolatedAutograde.seed=11"  # the hidden inputs the diagnosis below was seen on
WRONG_AXIS = next(m for m in CATALOGUE["softmax"] if m.id == "softmax/wrong-axis")


def partly_wrong_answers():
    """Everything right but softmax, which normalises over axis 0."""
    answers = dict(sample_answers()["alice_correct"])
    wrong = answers["answer_softmax"].replace("axis=axis", "axis=0")
    assert wrong != answers["answer_softmax"]
    answers["answer_softmax"] = wrong
    return answers


def student_fetches_fills_and_submits(home, exchange):
    """As the student, outside the course folder: fetch, answer, submit."""
    where = ["--course=mha-kit", f"--Exchange.root={exchange}"]
    nbgrader(home, "fetch_assignment", "mha", *where)
    path = home / "mha" / "mha.ipynb"
    filled = fill(nbformat.read(str(path), as_version=4), partly_wrong_answers())
    nbformat.write(filled, str(path))
    nbgrader(home, "submit", "mha", *where, f"--student={STUDENT}")


@pytest.fixture(scope="module")
def graded(lab, exchange, tmp_path_factory):
    """The course folder after the whole exchange and grading, run by the real commands."""
    course, exchanged = lab.root, [f"--Exchange.root={exchange}"]
    nbgrader(course, "generate_assignment", "mha", "--force")
    nbgrader(course, "release_assignment", "mha", *exchanged)
    assert (exchange / "mha-kit" / "outbound" / "mha" / "mha.ipynb").is_file()
    student_fetches_fills_and_submits(tmp_path_factory.mktemp("student-home"), exchange)
    nbgrader(course, "db", "student", "add", STUDENT, "--first-name=Ada", "--last-name=Lovelace")
    nbgrader(course, "collect", "mha", *exchanged)
    assert (course / "submitted" / STUDENT / "mha" / "mha.ipynb").is_file()
    nbgrader(course, "autograde", "mha", "--force", SEED)
    nbgrader(course, "generate_feedback", "mha", "--force")
    return course


def gradebook_score(course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("mha", STUDENT)
        return submission.score, submission.max_score


def open_formgrader(page, lab):
    """Nbgrader menu → Formgrader, as an instructor would; it opens in an iframe."""
    page.goto(lab.url("/lab"))
    page.locator(".jp-DirListing-item").first.wait_for()  # the lab has loaded the course
    page.locator(".lm-MenuBar").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu").get_by_text("Formgrader", exact=True).click()
    return page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")


def test_formgrader_shows_the_students_score(graded, lab, page):
    from playwright.sync_api import expect

    score, max_score = gradebook_score(graded)
    assert 0 < score < 100  # partly right: softmax's points are lost, the rest earned
    formgrader = open_formgrader(page, lab)
    assignments = formgrader.locator("tr").filter(has_text="mha").filter(has_text="released")
    expect(assignments).to_have_count(1)
    headers = formgrader.locator("thead th").all_inner_texts()
    submissions = next(i for i, header in enumerate(headers) if "Submissions" in header)
    expect(assignments.locator("td").nth(submissions)).to_have_text("1")
    screenshot(page, "instructor-1-formgrader-assignments")

    formgrader.get_by_role("link", name="Manage Students").click()
    row = formgrader.locator("tbody tr").filter(has_text=STUDENT)
    expect(row).to_contain_text(f"{score:g} / {max_score:g}")
    expect(row).to_contain_text("Lovelace, Ada")
    screenshot(page, "instructor-2-formgrader-students")


def hidden_test_lines(course):
    """The lines inside the source's hidden test regions, which feedback must not show."""
    notebook = nbformat.read(str(course / "source" / "mha" / "mha.ipynb"), as_version=4)
    lines = []
    for cell in notebook.cells:
        for region in cell.source.split("### BEGIN HIDDEN TESTS")[1:]:
            body = region.split("### END HIDDEN TESTS")[0]
            lines += [line.strip() for line in body.splitlines() if line.strip()]
    return lines


def test_feedback_page_names_the_mistake_and_hides_the_tests(graded, page):
    from autograder import hidden_checks

    from ..test_release import _names_defined_in

    feedback = graded / "feedback" / STUDENT / "mha" / "mha.html"
    page.goto(feedback.as_uri())
    # Long output lines scroll sideways; wrap them so that the screenshot shows the hint.
    page.add_style_tag(content="pre { white-space: pre-wrap !important; }")
    diagnosis = page.get_by_text(WRONG_AXIS.zh).first
    diagnosis.scroll_into_view_if_needed()
    screenshot(page, "instructor-3-feedback-diagnosis")
    text = page.locator("body").inner_text()
    named = [line for line in text.splitlines() if WRONG_AXIS.zh in line]
    assert named and all(line.startswith("✗ softmax:") for line in named), named
    hidden = hidden_test_lines(graded)
    assert len(hidden) >= 9  # one region per graded part at least: the check can bite
    hidden += ["BEGIN HIDDEN TESTS", "hidden_checks"]
    assert [line for line in hidden if line in text] == []
    # The hidden checks' helpers, as whole words (`_heads` is also the end of split_heads).
    names = [name for name in _names_defined_in(hidden_checks)
             if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)]
    assert names == []
