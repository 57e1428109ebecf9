"""The README's commands are the ones that CI, the demo and an instructor really run."""

import re
from pathlib import Path

import pytest

from tests.conftest import files_under

REPO = Path(__file__).resolve().parent.parent


def readme_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)[:2]


def test_the_readme_opens_with_the_demo_and_the_test_command():
    demo, tests = readme_commands()
    assert demo.startswith("python3 -m venv .venv") and demo.endswith("mhakit demo")
    assert tests.startswith("python3 -m venv .venv")
    # Every test, on three processes: none has to run alone.
    assert tests.endswith(".venv/bin/python -m pytest -n 3")


def test_ci_runs_the_readmes_test_command_verbatim():
    _, tests = readme_commands()
    assert tests in (REPO / ".ci" / "run").read_text(encoding="utf-8")


# ------------------------------------------------ the instructor's first week, as written

INSTRUCTOR = "### A course, from a clone to exported grades"
# The students' side of the exchange, for a test that has one OS account: nbgrader
# names a submission after the account, so each student's nbgrader is told its name.
AS_STUDENT = ("import sys, nbgrader.utils; name = sys.argv.pop(1); "
              "nbgrader.utils.get_osusername = lambda: name; "
              "from nbgrader.apps.nbgraderapp import main; sys.argv[0] = 'nbgrader'; main()")
# Who submits what, in this order: one student per language, and carol in both, the
# English one later.
STUDENTS = (("alice", "mha", "alice_correct"), ("bob", "mha_en", "bob_partly_correct"),
            ("carol", "mha", "carol_unimplemented"), ("carol", "mha_en", "alice_correct"))


def instructor_commands():
    """The lines of the bash block under the README's instructor heading."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(INSTRUCTOR, 1)[1]
    return re.search(r"```bash\n(.*?)\n```", section, flags=re.S).group(1).splitlines()


def copy_of_the_repository(target):
    """What a clone of this working tree holds: its tracked and unignored files."""
    import shutil
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)


def play_students(run_as_student, home):
    from tests.mha_exercise import fill, sample_answers

    import nbformat

    answers = sample_answers()
    for student, assignment, sample in STUDENTS:
        folder = home / "students" / student
        folder.mkdir(parents=True, exist_ok=True)
        run_as_student(student, ["fetch_assignment", assignment, "--course", "mha-kit"],
                       folder)
        notebook = folder / assignment / "mha.ipynb"
        released = nbformat.read(str(notebook), as_version=4)
        nbformat.write(fill(released, answers[sample]), str(notebook))
        run_as_student(student, ["submit", assignment, "--course", "mha-kit"], folder)


@pytest.mark.slow
def test_the_instructor_section_runs_from_a_clone_to_exported_grades(tmp_path):
    import csv
    import os
    import subprocess
    import sys

    course, home = tmp_path / "course", tmp_path / "home"
    course.mkdir()
    home.mkdir()
    copy_of_the_repository(course)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "MHAKIT_EXERCISE", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                     env.get("PATH", "")]))
    outputs = []

    def run(command, cwd):
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=900)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"[-4000:]

    def run_as_student(student, args, cwd):
        run([sys.executable, "-c", AS_STUDENT, student, *args], cwd)

    release = None
    for line in instructor_commands():
        if line.startswith("python3 -m venv"):  # CI's venv serves: this one is installed
            assert "pip install -e ." in line
            continue
        if line.startswith("# 4. students"):
            assert "fetch_assignment" in line and "submit" in line
            play_students(run_as_student, home)
            continue
        if line.startswith("#"):
            continue
        if line.startswith("mhakit build"):
            release = files_under(course, "source", "assignments")
        run(["bash", "-c", line], course)
        if line.startswith("mhakit build"):  # a clone's release is already the build's
            assert files_under(course, "source", "assignments") == release

    log = "\n".join(outputs)
    assert release is not None and "Traceback" not in log and "has changed!" not in log
    exchange = home / "nbgrader-exchange" / "mha-kit"
    assert {p.name for p in (exchange / "outbound").iterdir()} == {"mha", "mha_en"}
    assert len(list((exchange / "feedback").iterdir())) == len(STUDENTS)  # carol's both
    for student, assignment, _ in STUDENTS:
        assert (course / "feedback" / student / assignment / "mha.html").is_file()
    with open(course / "mhakit-results" / "grades.csv", newline="", encoding="utf-8") as handle:
        graded = {row["student"]: row for row in csv.DictReader(handle)}
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert set(exported) == {"alice", "bob", "carol"}
    assert {row["assignment"] for row in exported.values()} == {"mha"}
    assert {float(row["max_score"]) for row in exported.values()} == {100}
    for student, submitted in (("alice", "mha"), ("bob", "mha_en"), ("carol", "mha_en")):
        row = exported[student]
        assert row["submitted"] == submitted
        assert float(row["score"]) == float(graded[student]["total"])
    assert float(exported["alice"]["score"]) == float(exported["carol"]["score"]) == 100
    assert 0 < float(exported["bob"]["score"]) < 100
    assert "mha" in exported["carol"]["status"] and "later" in exported["carol"]["status"]
