"""mhakit/integrations/export.py: `nbgrader export` (the course's ExportApp.plugin_class)
writes one row per student for the exercise, whichever language they submitted, out of
100, with the written answers' extra credit in a column of its own; after either door."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mhakit.integrations.export import listed
from mhakit.integrations.gradebook import database_url
from tests.integrations.test_batch import mhakit
from tests.integrations.test_nbgrader_plugin import nbgrader
from tests.mha_exercise import fill, sample_answers
from tests.conftest import NBGRADER

STUDENTS = {  # id: (first name, last name, email); the export lists them by last name
    "ann": ("Ann", "Alpha", "ann@example.org"), "ben": ("Ben", "Beta", ""),
    "cat": ("Cat", "Gamma", ""), "dan": ("Dan", "Delta", ""), "eve": ("Eve", "Epsilon", "")}


def _answers(sample, written=True):
    answers = sample_answers()[sample]
    return {cell: source for cell, source in answers.items()
            if written or not cell.startswith("written_")}


# student: [(assignment, the sample student's answers, nbgrader's timestamp or None)]
SUBMISSIONS = {
    "ann": [("mha", _answers("alice_correct"), "2024-05-06 09:00:00")],
    "ben": [("mha_en", _answers("bob_partly_correct", written=False), "2024-05-06 09:30:00")],
    # the earlier one scores better: the later counts all the same
    "cat": [("mha_en", _answers("alice_correct"), "2024-05-06 09:00:00"),
            ("mha", _answers("bob_partly_correct", written=False), "2024-05-06 10:30:00")],
    "eve": [("mha", {}, None), ("mha_en", _answers("alice_correct"), None)],
}
# (student, assignment, written cell): (score, extra credit), as a grader enters them in
# formgrader ("Full credit" on a 0-point cell, then the extra credit)
WRITTEN_GRADES = {("ann", "mha", "written_1"): (0, 1), ("ann", "mha", "written_2"): (0, 0.5),
                  ("cat", "mha_en", "written_1"): (0, 1)}  # cat's earlier one: not counted

HEADER = ["assignment", "submitted", "duedate", "timestamp", "student_id", "last_name",
          "first_name", "email", "raw_score", "late_submission_penalty", "score", "max_score",
          "written_extra_credit", "status"]


def row(student, submitted, timestamp, score, written, status):
    first, last, email = STUDENTS[student]
    return ["mha", submitted, "", timestamp, student, last, first, email, score, "0", score,
            "100", written, status]


EXPECTED = [
    row("ann", "mha", "2024-05-06 09:00:00", "100", "1.5",
        "written answers to grade in formgrader: 2"),
    row("ben", "mha_en", "2024-05-06 09:30:00", "85", "0", "graded"),
    row("dan", "", "", "0", "0", "no submission"),
    row("eve", "mha", "", "0", "0", "also submitted mha_en, neither later by timestamp: "
                                    "mha counts"),
    row("cat", "mha", "2024-05-06 10:30:00", "85", "0",
        "also submitted mha_en at 2024-05-06 09:00:00: the later mha counts"),
]


def _two_language_class(course, target, submissions=SUBMISSIONS):
    """A course with both releases in its gradebook, the students, their submissions."""
    shutil.copytree(course, target, ignore=shutil.ignore_patterns(
        "autograded", "feedback", "submitted", "gradebook.db", "*.csv"))
    for assignment in ("mha", "mha_en"):
        nbgrader(target, "generate_assignment", assignment, "--force")
    for student, (first, last, email) in STUDENTS.items():
        nbgrader(target, "db", "student", "add", student, f"--first-name={first}",
                 f"--last-name={last}", f"--email={email}")
    for student, made in submissions.items():
        for assignment, answers, timestamp in made:
            folder = target / "submitted" / student / assignment
            folder.mkdir(parents=True)
            release = nbformat.read(str(target / "assignments" / assignment / "mha.ipynb"),
                                    as_version=4)
            nbformat.write(fill(release, answers), str(folder / "mha.ipynb"))
            if timestamp:
                (folder / "timestamp.txt").write_text(f"{timestamp}.000000 UTC")
    return target


def _grade_the_written_answers(course, grades=WRITTEN_GRADES):
    from nbgrader.api import Gradebook

    with Gradebook(database_url(course)) as gradebook:
        for (student, assignment, cell), (score, extra) in grades.items():
            grade = gradebook.find_grade(cell, "mha", assignment, student)
            grade.manual_score, grade.extra_credit = score, extra
            grade.needs_manual_grade = False  # what formgrader does when a score is entered
        gradebook.db.commit()


@pytest.fixture(scope="module")
def by_nbgrader(course, tmp_path_factory):
    target = _two_language_class(course, tmp_path_factory.mktemp("export") / "nbgrader")
    for assignment in ("mha", "mha_en"):
        nbgrader(target, "autograde", assignment, "--force", "--IsolatedAutograde.seed=11")
    _grade_the_written_answers(target)
    return target


def export(course, *options):
    # nbgrader runs alembic, from this venv, to create a gradebook that does not exist yet
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ.get("PATH", "")]))
    return subprocess.run([*NBGRADER, "export", *options], cwd=course,
                          env=env, capture_output=True, text=True, timeout=600)


def exported_rows(course, *options, to="grades.csv"):
    done = export(course, "--to", to, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(Path(course) / to, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.mark.slow
def test_one_row_per_student_out_of_100_with_the_written_answers_apart(by_nbgrader):
    assert exported_rows(by_nbgrader) == [HEADER] + EXPECTED


@pytest.mark.slow
def test_the_same_rows_after_mhakit_grade_gradebook(course, tmp_path):
    # Students who submitted one language: which of two submissions this door grades is
    # the door's choice (test_gradebook.py); the export shows what the gradebook holds.
    one_language = {student: made for student, made in SUBMISSIONS.items() if len(made) == 1}
    target = _two_language_class(course, tmp_path / "mhakit", one_language)
    done = mhakit("submitted", "--out", "results", "--seed", "11", "--quiet", "--gradebook",
                  ".", cwd=target)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    _grade_the_written_answers(target, {key: grade for key, grade in WRITTEN_GRADES.items()
                                        if key[0] in one_language})
    nothing = {student: row(student, "", "", "0", "0", "no submission")
               for student in STUDENTS if student not in one_language}
    assert exported_rows(target) == [HEADER] + [nothing.get(line[4], line) for line in EXPECTED]


@pytest.mark.slow
def test_the_filters_choose_students_and_which_language_counts(by_nbgrader):
    rows = exported_rows(by_nbgrader, "--assignment=[mha_en]", "--student=[ann,cat,eve]",
                         to="english.csv")
    assert rows == [HEADER,
                    row("ann", "", "", "0", "0", "no submission to mha_en"),
                    row("eve", "mha_en", "", "100", "0",
                        "written answers to grade in formgrader: 4"),
                    row("cat", "mha_en", "2024-05-06 09:00:00", "100", "1",
                        "written answers to grade in formgrader: 3")]


@pytest.mark.slow
@pytest.mark.parametrize("options, error", [
    (["--assignment=[mha_fr]"], "--assignment mha_fr: this exporter writes the grades of mha "
                                "only; its assignments are mha, mha_en"),
    (["--student=[ann,zoe]"], "--student zoe: no such student in the gradebook (`nbgrader db "
                              "student list` shows them)"),
    (["--to", "submitted"], "cannot write submitted: Is a directory; choose another file "
                            "with --to"),
])
def test_a_wrong_option_is_one_line_and_exit_2(by_nbgrader, options, error):
    done = export(by_nbgrader, *options)
    lines = [line for line in done.stderr.splitlines() if "| INFO]" not in line]
    assert (done.returncode, lines) == (2, [f"mha-kit export: {error}"])


@pytest.mark.slow
def test_a_course_without_the_exercise_is_one_line_and_exit_2(tmp_path):
    shutil.copy(Path(__file__).resolve().parents[2] / "nbgrader_config.py", tmp_path)
    done = export(tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "mha-kit export: the gradebook holds no assignment mha, mha_en: run `mhakit build` "
        "in the course folder first")
    assert "Traceback" not in done.stderr and not (tmp_path / "grades.csv").exists()


def test_nbgraders_documented_list_form_is_taken_apart():
    assert listed(["[ann,ben]"]) == ["ann", "ben"]
    assert listed(["['ann', \"ben\"]", "cat"]) == ["ann", "ben", "cat"]
    assert listed(["ann"]) == ["ann"]
    assert listed(["[]"]) == []
