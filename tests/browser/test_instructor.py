"""The instructor's day, for each language's assignment: release through a local exchange,
a student fetches and submits, then collect, autograde, feedback; formgrader and the
feedback page, seen in the browser."""

import re

import nbformat
import pytest

from tests.mha_exercise import ASSIGNMENTS, EXERCISE
from tests.mha_exercise import CATALOGUE
from tests.mha_exercise import fill, sample_answers

from ..integrations.test_nbgrader_plugin import nbgrader
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


def student_fetches_fills_and_submits(home, exchange, assignment):
    """As the student, outside the course folder: fetch, answer, submit."""
    where = ["--course=mha-kit", f"--Exchange.root={exchange}"]
    nbgrader(home, "fetch_assignment", assignment, *where)
    path = home / assignment / "mha.ipynb"
    filled = fill(nbformat.read(str(path), as_version=4), partly_wrong_answers())
    nbformat.write(filled, str(path))
    nbgrader(home, "submit", assignment, *where, f"--student={STUDENT}")


@pytest.fixture(scope="module", params=list(ASSIGNMENTS), ids=ASSIGNMENTS.get)
def graded(request, lab, exchange, tmp_path_factory):
    """(course folder, assignment) after the whole exchange and grading, by the real
    commands; the second language's assignment joins the first in the same course."""
    course, assignment, exchanged = lab.root, request.param, [f"--Exchange.root={exchange}"]
    nbgrader(course, "generate_assignment", assignment, "--force")
    nbgrader(course, "release_assignment", assignment, *exchanged)
    assert (exchange / "mha-kit" / "outbound" / assignment / "mha.ipynb").is_file()
    student_fetches_fills_and_submits(tmp_path_factory.mktemp("student-home"), exchange,
                                      assignment)
    nbgrader(course, "db", "student", "add", STUDENT, "--first-name=Ada", "--last-name=Lovelace")
    nbgrader(course, "collect", assignment, *exchanged)
    assert (course / "submitted" / STUDENT / assignment / "mha.ipynb").is_file()
    nbgrader(course, "autograde", assignment, "--force", SEED)
    nbgrader(course, "generate_feedback", assignment, "--force")
    return course, assignment


def gradebook_scores(course, assignment):
    """(score, maximum) for the submission, its code cells, and the student overall."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(assignment, STUDENT)
        student = gradebook.find_student(STUDENT)
        return ((submission.score, submission.max_score),
                (submission.code_score, submission.max_code_score),
                (student.score, student.max_score))


def open_formgrader(page, lab):
    """Nbgrader menu → Formgrader, as an instructor would; it opens in an iframe."""
    page.goto(lab.url("/lab"))
    page.locator(".jp-DirListing-item").first.wait_for()  # the lab has loaded the course
    page.locator(".lm-MenuBar").get_by_text("Nbgrader", exact=True).click()
    page.locator(".lm-Menu").get_by_text("Formgrader", exact=True).click()
    return page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")


def test_formgrader_shows_the_students_score(graded, lab, page):
    from playwright.sync_api import expect

    course, assignment = graded
    total, code, overall = gradebook_scores(course, assignment)
    assert 0 < code[0] < code[1]  # partly right: softmax's points lost, the rest earned
    shot = f"instructor-{ASSIGNMENTS[assignment]}"
    formgrader = open_formgrader(page, lab)
    named = formgrader.get_by_role("link", name=assignment, exact=True)
    row = formgrader.locator("tbody tr").filter(has=named)
    expect(row).to_contain_text("released")
    headers = formgrader.locator("thead th").all_inner_texts()
    submissions = next(i for i, header in enumerate(headers) if "Submissions" in header)
    expect(row.locator("td").nth(submissions)).to_have_text("1")
    screenshot(page, f"{shot}-1-formgrader-assignments")

    formgrader.get_by_role("link", name="Manage Students").click()
    student = formgrader.locator("tbody tr").filter(has_text=STUDENT)
    expect(student).to_contain_text("Lovelace, Ada")
    expect(student).to_contain_text("{:g} / {:g}".format(*overall))
    screenshot(page, f"{shot}-2-formgrader-students")

    formgrader.get_by_role("link", name="Lovelace, Ada").click()
    submission = formgrader.locator("tbody tr").filter(
        has=formgrader.get_by_role("link", name=assignment, exact=True))
    expect(submission).to_contain_text("{:g} / {:g}".format(*total))
    expect(submission).to_contain_text("{:g} / {:g}".format(*code))
    screenshot(page, f"{shot}-3-formgrader-submission")


def hidden_test_lines(course, assignment):
    """The lines inside the source's hidden test regions, which feedback must not show."""
    notebook = nbformat.read(str(course / "source" / assignment / "mha.ipynb"), as_version=4)
    lines = []
    for cell in notebook.cells:
        for region in cell.source.split("### BEGIN HIDDEN TESTS")[1:]:
            body = region.split("### END HIDDEN TESTS")[0]
            lines += [line.strip() for line in body.splitlines() if line.strip()]
    return lines


def test_feedback_page_names_the_mistake_and_hides_the_tests(graded, page):
    from mhakit.grader import hidden_checks

    from ..authoring.test_build import _names_defined_in

    course, assignment = graded
    hint = WRONG_AXIS.text(ASSIGNMENTS[assignment])  # in the notebook's language
    page.goto((course / "feedback" / STUDENT / assignment / "mha.html").as_uri())
    # Long output lines scroll sideways; wrap them so that the screenshot shows the hint.
    page.add_style_tag(content="pre { white-space: pre-wrap !important; }")
    page.get_by_text(hint).first.scroll_into_view_if_needed()
    screenshot(page, f"instructor-{ASSIGNMENTS[assignment]}-4-feedback-diagnosis")
    text = page.locator("body").inner_text()
    named = [line for line in text.splitlines() if hint in line]
    # Each line that names the mistake is one of softmax's checks (marker, then the name).
    assert named and all(re.match(r"\W*softmax\b", line) for line in named), named

    hidden = hidden_test_lines(course, assignment)
    assert len(hidden) >= 9  # one region per graded part at least: the check can bite
    hidden += ["BEGIN HIDDEN TESTS", "hidden_checks"]
    assert [line for line in hidden if line in text] == []
    # The hidden checks' helpers, as whole words (`_heads` is also the end of split_heads).
    helpers = _names_defined_in(hidden_checks) + _names_defined_in(EXERCISE.content("cases"))
    names = [name for name in helpers if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)]
    assert names == []
