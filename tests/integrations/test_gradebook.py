"""mhakit/integrations/gradebook.py: `mhakit grade --gradebook` fills nbgrader's
gradebook as `nbgrader autograde` does, for every student it can hold."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mhakit.grader.result import Result

from tests.integrations.test_batch import (HONEST, SHOWN, check_the_class, mhakit,  # noqa: F401
                                           odd_class, read_grades)  # odd_class: a fixture
from tests.integrations.test_cli import fresh_python
from tests.integrations.test_nbgrader_plugin import flags, nbgrader, unconfined_course
from tests.conftest import NBGRADER


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
    listed = target / "submitted" / "henry_list_metadata" / "mha"  # nbformat cannot read it
    shutil.copytree(target / "submitted" / "alice_correct" / "mha", listed)
    notebook = json.loads((listed / "mha.ipynb").read_text(encoding="utf-8"))
    notebook["metadata"], notebook["cells"][0]["metadata"] = [], []
    (listed / "mha.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    broken = target / "submitted" / "ivy_broken_json" / "mha"
    broken.mkdir(parents=True)
    (broken / "mha.ipynb").write_text('{"cells": [', encoding="utf-8")
    copied = target / "submitted" / "judy_keeps_a_copy" / "mha"  # JupyterLab's File > Duplicate
    shutil.copytree(target / "submitted" / "alice_correct" / "mha", copied)
    shutil.copy(target / "submitted" / "carol_unimplemented" / "mha" / "mha.ipynb",
                copied / "mha-Copy1.ipynb")
    return target


def _code_points(row):
    return sum(score or 0 for name, score, _ in row[0] if name.startswith("test_"))


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


@pytest.mark.slow
def test_mhakit_grade_fills_the_gradebook_as_nbgrader_autograde_does(course, tmp_path):
    by_nbgrader = _class_course(course, tmp_path / "nbgrader")
    done = nbgrader(by_nbgrader, "autograde", "mha", "--force", "--IsolatedAutograde.seed=5")
    log = done.stdout + done.stderr
    # nbgrader's OverwriteCells once warned of a changed checksum for every test cell of
    # every notebook; now only for the one edited test cell.
    assert log.count("has changed!") == 1 and "test_softmax has changed" in log
    assert "Traceback" not in log
    by_mhakit = _class_course(course, tmp_path / "mhakit")
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade", "submitted",
                           "--out", "results", "--seed", "5", "--quiet", "--gradebook", "."],
                          cwd=by_mhakit, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    mine, theirs = _gradebook_rows(by_mhakit), _gradebook_rows(by_nbgrader)
    assert set(mine) == {"alice_correct", "bob_partly_correct", "carol_unimplemented",
                         "dave_tries_to_cheat", "frank_edits_a_test", "gina_saves_format_3",
                         "henry_list_metadata", "ivy_broken_json", "judy_keeps_a_copy"}
    assert mine == theirs  # every grade, every review flag, every comment
    for student in ("henry_list_metadata", "judy_keeps_a_copy"):  # graded as alice is
        assert _code_points(mine[student]) == _code_points(mine["alice_correct"]) == 100
    grades, comments = mine["ivy_broken_json"]  # unreadable: zero, flagged, and why
    assert grades and all(score in (0, None) and flagged for _, score, flagged in grades)
    assert comments and all(c[1] == "mha-kit: unreadable: the file is not valid JSON "
                                    "(JSONDecodeError)" for c in comments)
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


def test_the_gradebook_is_read_without_importing_nbgraders_server():
    """`mhakit grade --gradebook` imports nbgrader's API and rules, not the Jupyter server
    extensions that nbgrader's package imports (about 0.25 s of every run's start)."""
    code = ("import sys\n"
            "from mhakit.integrations.gradebook import import_nbgrader_meanwhile\n"
            "import_nbgrader_meanwhile()\n"
            "from nbgrader.api import Gradebook\n"
            "from nbgrader.utils import compute_checksum\n"
            "import nbgrader\n"
            "print(nbgrader.__version__, sorted(m for m in ('nbconvert', 'jupyter_server') "
            "if m in sys.modules))\n")
    done = fresh_python(code)
    assert done.returncode == 0, done.stderr
    version, loaded = done.stdout.split(" ", 1)
    assert version[0].isdigit() and loaded.strip() == "[]"


def test_with_a_gradebook_everyone_it_can_hold_is_in_it(odd_class):
    from nbgrader.api import Gradebook, MissingEntry

    for attempt in range(2):  # and a rerun, over the first run's results, does not abort
        done = mhakit("submitted", "--out", "out", "--seed", "3", "--quiet", "--gradebook",
                      ".", cwd=odd_class)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        grades = read_grades(odd_class / "out")
        check_the_class(odd_class / "out", grades)
        assert "not in the gradebook" in grades[SHOWN]["status"]
        with Gradebook(f"sqlite:///{odd_class / 'gradebook.db'}") as gradebook:
            for student in HONEST + ("gina_two_notebooks", "ivy_list_metadata",
                                     "[red]kim[bold]", "report.md"):
                submission = gradebook.find_submission("mha", student)
                code = sum(g.auto_score or 0 for nb in submission.notebooks
                           for g in nb.grades if g.name.startswith("test_"))
                assert code == 100, (student, code)
            for student, words in (("hank_nested_700_deep", "levels deep"),
                                   ("jack_forty_megabytes", "20 MB")):
                submission = gradebook.find_submission("mha", student)
                comments = [c.auto_comment or "" for nb in submission.notebooks
                            for c in nb.comments]
                assert comments and all(c.startswith("mha-kit: unreadable: ") and words in c
                                        for c in comments), comments
                assert all(g.needs_manual_grade for nb in submission.notebooks
                           for g in nb.grades)
            with pytest.raises(MissingEntry):
                gradebook.find_submission("mha", SHOWN)


@pytest.mark.slow
def test_an_unconfined_grade_is_flagged_through_mhakit_grade_gradebook(course, tmp_path):
    root = unconfined_course(course, tmp_path)
    env = dict(os.environ, MHAKIT_SANDBOX="plain")
    env.pop("MHAKIT_ALLOW_UNCONFINED", None)
    subprocess.run([*NBGRADER, "db", "student", "add", "honest"],
                   cwd=root, env=env, capture_output=True, timeout=600, check=True)
    command = [sys.executable, "-m", "mhakit.integrations.cli", "grade", str(root / "submitted"),
               "--gradebook", str(root), "--out", str(tmp_path / "out"), "--quiet"]
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "--allow-unconfined" in refused.stderr
    done = subprocess.run(command + ["--allow-unconfined"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    flagged, comments = flags(root / "gradebook.db", "honest")
    assert flagged and "graded unconfined" in comments


def test_a_grade_id_that_is_not_text_is_no_grade_id():
    """nbgrader's schema wants text; a list there once raised in autograded_notebook, and
    the gradebook door then gave the student zeros."""
    from mhakit.integrations.gradebook import autograded_notebook

    cell = {"cell_type": "code", "source": "x = 1", "outputs": [],
            "metadata": {"nbgrader": {"grade_id": ["answer_softmax"], "solution": True}}}
    stored = {"answer_softmax": {"cell_type": "code", "source": "", "locked": False,
                                 "solution": True}}
    notebook = autograded_notebook({"cells": [cell]}, stored, Result(0, (), {"parts": {}}))
    assert notebook["cells"][0]["metadata"] == {}  # not graded, like any unknown cell
    assert notebook["cells"][0]["source"] == "x = 1"


def test_the_autograded_notebook_leaves_the_submitted_one_as_it_was():
    """It is built from the notebook grading read, without a deep copy of it: whatever it
    changes (a locked cell restored, unknown metadata dropped, outputs) is its own."""
    import copy

    from mhakit.integrations.gradebook import autograded_notebook

    def code(grade_id, source, **flags):
        return {"cell_type": "code", "source": source, "execution_count": 3,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi\n"}],
                "metadata": {"nbgrader": {"grade_id": grade_id, **flags}, "tags": ["x"]}}

    submitted = {"cells": [code("test_softmax", "edited", grade=True, locked=True, points=1),
                           code("not_released", "x = 1", solution=True)],
                 "metadata": {"kernelspec": {"name": "python3"}}}
    before = copy.deepcopy(submitted)
    stored = {"test_softmax": {"cell_type": "code", "source": "check('softmax')",
                               "locked": True, "grade": True, "points": 1},
              "intro": {"cell_type": "markdown", "source": "# MHA", "locked": True}}
    notebook = autograded_notebook(submitted, stored, Result(0, (), {"parts": {}}))
    assert submitted == before
    test, unknown, restored = notebook["cells"]
    assert test["source"] == "check('softmax')" and test["execution_count"] is None
    assert unknown["metadata"] == {"tags": ["x"]} and unknown["outputs"] == []
    assert restored["source"] == "# MHA"


def _bilingual_course(course, target):
    """A course that released both languages: alice submitted mha, bob mha_en, and carol
    mha first and mha_en later."""
    import shutil

    from mhakit.authoring.sample_class import write_sample_class
    from tests.mha_exercise import EXERCISE

    shutil.copytree(course, target, ignore=shutil.ignore_patterns(
        "autograded", "feedback", "submitted", "gradebook.db", "*.csv"))
    for assignment in ("mha", "mha_en"):
        nbgrader(target, "generate_assignment", assignment, "--force")
    english = write_sample_class(EXERCISE, target / "assignments" / "mha_en" / "mha.ipynb",
                                 target / "english", assignment="mha_en")
    chinese = course / "submitted"
    for student, sample, assignment, when in (
            ("alice", chinese / "alice_correct" / "mha" / "mha.ipynb", "mha", "10:00"),
            ("bob", english["bob_partly_correct"], "mha_en", "10:00"),
            ("carol", chinese / "carol_unimplemented" / "mha" / "mha.ipynb", "mha", "09:00"),
            ("carol", english["alice_correct"], "mha_en", "11:00")):
        folder = target / "submitted" / student / assignment
        folder.mkdir(parents=True)
        shutil.copy(sample, folder / "mha.ipynb")
        (folder / "timestamp.txt").write_text(f"2026-12-01 {when}:00.000000 UTC")
    return target


@pytest.fixture(scope="module")
def bilingual(course, tmp_path_factory):
    """A course made by _bilingual_course once (it runs nbgrader twice); each test that
    takes it works on a copy of its own, ``copy_of(bilingual, tmp_path)``."""
    return _bilingual_course(course, tmp_path_factory.mktemp("bilingual") / "course")


def copy_of(course, tmp_path):
    import shutil

    return Path(shutil.copytree(course, tmp_path / "course"))


def _scores(course, assignment):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {submission.student_id: submission.score
                for submission in gradebook.assignment_submissions(assignment)}


@pytest.mark.slow
def test_one_run_grades_both_languages_each_into_its_own_assignment(bilingual, tmp_path):
    root = copy_of(bilingual, tmp_path)
    done = mhakit("submitted", "--out", "results", "--seed", "5", "--quiet", "--gradebook", ".",
                  cwd=root)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert _scores(root, "mha") == {"alice": 100, "carol": 0}  # carol's earlier one too
    english = _scores(root, "mha_en")
    assert english["carol"] == 100 and 0 < english["bob"] < 100 and set(english) == {
        "bob", "carol"}
    carol = read_grades(root / "results")["carol"]
    assert carol["total"] == "100"
    assert "submitted 2 times; graded the latest, mha_en/mha.ipynb" in carol["status"]
    assert (root / "autograded" / "bob" / "mha_en" / "mha.ipynb").exists()


@pytest.mark.parametrize("paths", [("submitted/alice/mha", "submitted/carol/mha"),
                                   ("submitted/alice", "submitted/carol"),
                                   ("submitted/carol",),
                                   ("submitted/alice/mha/mha.ipynb",)])
def test_gradebook_refuses_folders_it_cannot_map_to_students(bilingual, tmp_path, paths):
    """A student's folder or an assignment's would make its subfolders students (a
    student "mha" once appeared in the gradebook, one result overwriting another). One
    notebook's grade, printed, would not reach the gradebook (it was printed, and the
    gradebook left as it was, without a word)."""
    import hashlib

    root = copy_of(bilingual, tmp_path)
    before = hashlib.sha256((root / "gradebook.db").read_bytes()).hexdigest()
    done = mhakit(*paths, "--gradebook", ".", "--quiet", cwd=root)
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 2 and "submitted/ folder as a whole" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert hashlib.sha256((root / "gradebook.db").read_bytes()).hexdigest() == before
    assert not (root / "autograded").exists() and not (root / "mhakit-results").exists()


def test_gradebook_without_a_gradebook_says_to_build_first(course, tmp_path):
    import shutil

    root = tmp_path / "course"
    shutil.copytree(course, root, ignore=shutil.ignore_patterns("gradebook.db", "autograded"))
    done = mhakit("submitted", "--gradebook", ".", "--quiet", cwd=root)
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 2 and "run `mhakit build`" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def _rows_of(database, student):
    """A student's rows in every table a submission fills, without their ids."""
    import sqlite3

    db = sqlite3.connect(database)
    joined = ("join submitted_notebook sn on x.notebook_id = sn.id "
              "join submitted_assignment sa on sn.assignment_id = sa.id "
              "join notebook n on sn.notebook_id = n.id "
              "join base_cell bc on x.cell_id = bc.id where sa.student_id = ?")
    rows = {name: sorted(db.execute(sql, (student,)).fetchall(), key=repr) for name, sql in {
        "grades": "select n.name || '/' || bc.name, x.auto_score, x.manual_score, x.extra_credit, "
                  "x.needs_manual_grade from grade x " + joined,
        "comments": "select n.name || '/' || bc.name, x.auto_comment, x.manual_comment from comment x " + joined,
        "notebooks": "select n.name, sn.flagged, sn.late_submission_penalty from "
                     "submitted_notebook sn join submitted_assignment sa on "
                     "sn.assignment_id = sa.id join notebook n on sn.notebook_id = n.id "
                     "where sa.student_id = ?",
        "submissions": "select timestamp, extension from submitted_assignment where "
                       "student_id = ?",
        "students": "select first_name, last_name, email, lms_user_id from student where id = ?",
    }.items()}
    db.close()
    return rows


def _small_gradebook(folder, monkeypatch):
    """An assignment of two notebooks, each with a test, a written answer and a task."""
    import nbgrader.api
    from nbgrader.api import Gradebook

    from mhakit.authoring.nbgrader_command import alembic_head

    # A new gradebook would ask a process of `alembic` for its version (2 s of CPU): it
    # reads it here, as the kit's nbgrader commands do (test_nbgrader_command compares).
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", alembic_head)
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("hw")
        for notebook in ("hw", "extra"):
            gradebook.add_notebook(notebook, "hw")
            gradebook.add_grade_cell("test_a", notebook, "hw", max_score=2, cell_type="code")
            gradebook.add_grade_cell("written_a", notebook, "hw", max_score=1,
                                     cell_type="markdown")
            gradebook.add_solution_cell("written_a", notebook, "hw")
            gradebook.add_solution_cell("answer_a", notebook, "hw")
            gradebook.add_task_cell("task_a", notebook, "hw", max_score=1, cell_type="markdown")
    return folder / "gradebook.db"


# nbgrader's own add_submission, called by hand here, warns of its own autoflush.
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
def test_the_writer_makes_the_rows_nbgraders_own_classes_make(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    from mhakit.integrations.gradebook import GradebookWriter

    database = _small_gradebook(tmp_path, monkeypatch)
    with Gradebook(f"sqlite:///{database}") as gradebook:  # nbgrader's own way, by hand
        gradebook.add_student("by_nbgrader")
        submission = gradebook.add_submission("hw", "by_nbgrader")
        for grade in next(nb for nb in submission.notebooks if nb.name == "hw").grades:
            grade.auto_score, grade.needs_manual_grade = {
                "test_a": (2.0, False), "written_a": (None, True)}.get(grade.name, (0, False))
        for comment in next(nb for nb in submission.notebooks if nb.name == "hw").comments:
            comment.auto_comment = "No response." if comment.name == "answer_a" else None
        gradebook.db.commit()
    writer = GradebookWriter(tmp_path, [("hw", "hw")])
    writer.record(("hw", "hw"), "by_writer", {"test_a": (2.0, False), "written_a": (None, True)},
                  {"answer_a": "No response."})
    writer.close()
    assert _rows_of(database, "by_writer") == _rows_of(database, "by_nbgrader")
    assert len(_rows_of(database, "by_writer")["grades"]) == 6  # both notebooks' rows


def test_a_regrade_keeps_what_a_person_gave_and_changes_what_the_grader_gave(tmp_path,
                                                                             monkeypatch):
    import sqlite3

    from mhakit.integrations.gradebook import GradebookWriter

    database = _small_gradebook(tmp_path, monkeypatch)
    stamp = tmp_path / "submitted" / "ann" / "hw" / "timestamp.txt"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("2026-12-01 10:00:00.000000 UTC", encoding="utf-8")
    for run, score in enumerate((1.0, 2.0)):
        writer = GradebookWriter(tmp_path, [("hw", "hw")])
        writer.record(("hw", "hw"), "ann", {"test_a": (score, False), "written_a": (None, True)},
                      {"answer_a": f"run {run}"})
        writer.close()
        if run == 0:  # a person grades the written answer, overrides the test's score
            db = sqlite3.connect(database)  # and comments on the code
            for cell, score in (("written_a", 1), ("test_a", 1.5)):
                db.execute("update grade set manual_score = ?, needs_manual_grade = 0 where "
                           "cell_id in (select bc.id from base_cell bc join notebook n on "
                           "bc.notebook_id = n.id where bc.name = ? and n.name = 'hw')",
                           (score, cell))
            db.execute("update comment set manual_comment = 'good' where cell_id in "
                       "(select bc.id from base_cell bc join notebook n on bc.notebook_id = "
                       "n.id where bc.name = 'answer_a' and n.name = 'hw')")
            db.commit()
            db.close()
    rows = _rows_of(database, "ann")
    graded = {name: row for name, *row in rows["grades"] if row[0] is not None or row[1]}
    # The grader's score changed; the person's kept, and flagged for a look again.
    assert graded["hw/test_a"] == [2.0, 1.5, None, 1]
    assert graded["hw/written_a"] == [None, 1.0, None, 1]
    assert ("hw/answer_a", "run 1", "good") in rows["comments"]
    assert ("extra/answer_a", None, None) in rows["comments"]  # not this run's notebook
    assert rows["submissions"] == [("2026-12-01 10:00:00.000000", None)]
    assert len(rows["grades"]) == 6  # no second submission


def test_a_score_a_person_gives_while_the_class_is_graded_is_flagged_for_a_look(
        tmp_path, monkeypatch):
    import sqlite3

    from mhakit.integrations.gradebook import GradebookWriter

    database = _small_gradebook(tmp_path, monkeypatch)
    first = GradebookWriter(tmp_path, [("hw", "hw")])
    first.record(("hw", "hw"), "ann", {"test_a": (2.0, False)}, {})
    first.close()
    writer = GradebookWriter(tmp_path, [("hw", "hw")])  # a regrade starts...
    db = sqlite3.connect(database)  # ...and meanwhile a person scores the test in formgrader
    db.execute("update grade set manual_score = 1.0, needs_manual_grade = 0 where cell_id in "
               "(select bc.id from base_cell bc join notebook n on bc.notebook_id = n.id "
               "where bc.name = 'test_a' and n.name = 'hw')")
    db.commit()
    db.close()
    writer.record(("hw", "hw"), "ann", {"test_a": (2.0, False)}, {})
    writer.close()
    graded = {name: row for name, *row in _rows_of(database, "ann")["grades"]}
    assert graded["hw/test_a"] == [2.0, 1.0, None, 1]  # the person's score, to be looked at
