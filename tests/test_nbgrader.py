"""The real nbgrader commands, in a real course folder, give the kit's grades."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def nbgrader(course, *args):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def autograded(course):
    nbgrader(course, "autograde", "mha", "--force", "--IsolatedAutograde.seed=11")
    nbgrader(course, "export", "--to", "nbgrader_grades.csv")
    with open(course / "nbgrader_grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha"}


def test_nbgrader_autograde_gives_the_reference_100_and_the_stubs_0(autograded):
    assert autograded["alice_correct"] == 100
    assert autograded["carol_unimplemented"] == 0
    assert autograded["dave_tries_to_cheat"] < 100


def test_nbgrader_autograde_and_mhakit_grade_agree(course, autograded, tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder.integrations.cli", "grade",
                           str(course / "submitted"), "--out", str(tmp_path), "--seed", "11",
                           "--quiet", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    mine = {student: r["score"] for student, r in json.loads(done.stdout).items()}
    assert mine == autograded


def test_autograde_starts_no_kernel_and_explains_each_part(course, autograded):
    import nbformat

    path = course / "autograded" / "bob_partly_correct" / "mha" / "mha.ipynb"
    notebook = nbformat.read(str(path), as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in notebook.cells}
    # Answer cells keep no outputs: they were never executed.
    assert all(not cells[f"answer_{n}"].outputs for n in ("softmax", "split_heads"))
    split = cells["test_split_heads"].outputs
    assert split[0].output_type == "error" and "split_heads:" in "\n".join(split[0].traceback)
    softmax = cells["test_softmax"].outputs
    assert [o.output_type for o in softmax] == ["stream", "execute_result"]  # partial credit


def test_feedback_is_generated(course, autograded):
    nbgrader(course, "generate_feedback", "mha", "--force")
    html = (course / "feedback" / "bob_partly_correct" / "mha" / "mha.html").read_text("utf-8")
    assert "split_heads: 随机输入上与参考答案一致" in html  # the Chinese release


def test_nbgrader_validate_passes_a_finished_notebook_and_fails_an_untouched_one(course, tmp_path):
    import nbformat

    from tests.mha_exercise import fill, sample_answers

    import shutil

    student = tmp_path / "mha"
    shutil.copytree(course / "assignments" / "mha", student)
    release = student / "mha.ipynb"
    finished = student / "finished.ipynb"
    nbformat.write(fill(nbformat.read(str(release), as_version=4),
                        sample_answers()["alice_correct"]), str(finished))
    assert "Success! Your notebook passes all the tests." in nbgrader(
        student, "validate", str(finished)).stdout
    untouched = nbgrader(student, "validate", str(release)).stdout
    assert "VALIDATION FAILED" in untouched and "Traceback" not in untouched


def test_the_english_release_grades_to_the_same_scores(course, autograded, tmp_path):
    import nbformat

    from tests.mha_exercise import fill, sample_answers

    english = nbformat.read(str(course / "assignments" / "mha_en" / "mha.ipynb"), as_version=4)
    for student, answers in sample_answers().items():
        path = course / "submitted" / student / "mha_en" / "mha.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(english, answers), str(path))
    nbgrader(course, "autograde", "mha_en", "--force", "--IsolatedAutograde.seed=11")
    nbgrader(course, "export", "--to", "both_languages.csv")
    with open(course / "both_languages.csv", newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha_en"}
    assert scores == autograded


def _class_course(course, target):
    """A course with the release, a gradebook that knows only the release, and the sample
    class plus a student who edited a locked test cell and one who saved in format 3."""
    import shutil

    shutil.copytree(course, target, ignore=shutil.ignore_patterns(
        "autograded", "feedback", "submitted", "gradebook.db", "*.csv"))
    nbgrader(target, "generate_assignment", "mha", "--force")
    for student in sorted((course / "submitted").iterdir()):
        shutil.copytree(student / "mha", target / "submitted" / student.name / "mha")
    edited = target / "submitted" / "frank_edits_a_test" / "mha"
    shutil.copytree(target / "submitted" / "bob_partly_correct" / "mha", edited)
    notebook = json.loads((edited / "mha.ipynb").read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "test_softmax":
            cell["source"] = "pass  # no test here"
    (edited / "mha.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    old_format = target / "submitted" / "gina_saves_format_3" / "mha"
    shutil.copytree(target / "submitted" / "alice_correct" / "mha", old_format)
    import nbformat
    upgraded = nbformat.read(str(old_format / "mha.ipynb"), as_version=4)
    nbformat.write(nbformat.convert(upgraded, 3), str(old_format / "mha.ipynb"), version=3)
    return target


def _gradebook_rows(course):
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for submission in gradebook.assignment_submissions("mha"):
            notebook = submission.notebooks[0]
            rows[submission.student_id] = (
                sorted((g.name, g.auto_score, g.needs_manual_grade) for g in notebook.grades),
                sorted((c.name, c.auto_comment) for c in notebook.comments))
    return rows


def test_mhakit_grade_fills_the_gradebook_as_nbgrader_autograde_does(course, tmp_path):
    by_nbgrader = _class_course(course, tmp_path / "nbgrader")
    nbgrader(by_nbgrader, "autograde", "mha", "--force", "--IsolatedAutograde.seed=5")
    by_mhakit = _class_course(course, tmp_path / "mhakit")
    done = subprocess.run([sys.executable, "-m", "autograder.integrations.cli", "grade", "submitted",
                           "--out", "results", "--seed", "5", "--quiet", "--gradebook", "."],
                          cwd=by_mhakit, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    mine, theirs = _gradebook_rows(by_mhakit), _gradebook_rows(by_nbgrader)
    assert set(mine) == {"alice_correct", "bob_partly_correct", "carol_unimplemented",
                         "dave_tries_to_cheat", "frank_edits_a_test", "gina_saves_format_3"}
    assert mine == theirs  # every grade, every review flag, every comment
    grades, comments = mine["frank_edits_a_test"]
    test_softmax = next(g for g in grades if g[0] == "test_softmax")
    assert test_softmax[1] > 0 and test_softmax[2]  # graded anyway, flagged for review
    assert all(c[1] == "mha-kit: test cell test_softmax was edited" for c in comments)
    written = {g[0]: g for g in mine["alice_correct"][0] if g[0].startswith("written_")}
    assert written and all(g[1] is None and g[2] for g in written.values())  # for a human

    # What comes after autograde works on the gradebook mhakit wrote.
    nbgrader(by_mhakit, "generate_feedback", "mha", "--force")
    html = (by_mhakit / "feedback" / "bob_partly_correct" / "mha" / "mha.html").read_text("utf-8")
    assert "split_heads: 随机输入上与参考答案一致" in html  # the Chinese release
    exports = []
    for folder in (by_mhakit, by_nbgrader):
        nbgrader(folder, "export", "--to", "export.csv")
        exports.append(sorted((folder / "export.csv").read_text(encoding="utf-8").splitlines()))
    assert exports[0] == exports[1]  # rows in the order students entered the gradebook
