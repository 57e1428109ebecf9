"""A second exercise, made of content alone (tests/second_exercise), goes through the
whole engine: its generated files, a course build, the release's self-check, grading by
`mhakit grade` and by nbgrader, and the naming of its own catalogued mistakes.

The exercise is loaded explicitly (``load(FOLDER)``) in this process; the commands get it
with ``--exercise`` or, for nbgrader, MHAKIT_EXERCISE in their own environment only.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mhakit.authoring.build import (exercise_files, solution_cell_source, tool_environment,
                                    vendored)
from mhakit.authoring.sample_class import fill, write_sample_class
from mhakit.exercise import BUILT_IN, FOLDER_VARIABLE, current, load
from mhakit.grader.diagnosis import catalogue
from mhakit.grader.grading import ordered_checks
from mhakit.selfcheck.fingerprints import MISTAKE_LABEL
from tests.conftest import NBGRADER

REPO = Path(__file__).resolve().parent.parent
FOLDER = Path(__file__).resolve().parent / "second_exercise"
EXERCISE = load(FOLDER)
ASSIGNMENT, ENGLISH = "weighted", "weighted_en"
NOTEBOOK = EXERCISE.notebook
TOTAL = EXERCISE.total
STUDENTS = ("alice_correct", "bob_whole_array", "carol_unimplemented", "dan_not_normalised")
# The sample students' catalogued mistakes (see second_exercise/sample_class.py).
MISTAKES = {"bob_whole_array": "normalise/whole-array",
            "dan_not_normalised": "weighted_average/weights-not-normalised"}
SEED = 11
_SCRIPT = Path(sys.executable).with_name("mhakit")
MHAKIT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m",
                                                   "mhakit.integrations.cli"]


def mhakit(*args, cwd=None):
    return subprocess.run(MHAKIT + ["--exercise", str(FOLDER), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def exercise_environment():
    """The environment of nbgrader's subprocesses: the venv's tools, and the exercise."""
    env = tool_environment()
    env[FOLDER_VARIABLE] = str(FOLDER)
    return env


def nbgrader(course, *args):
    done = subprocess.run([*NBGRADER, *args], cwd=course,
                          env=exercise_environment(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def selfcheck(folder, notebook=NOTEBOOK):
    """The release's own `python selfcheck.py`, run from inside its folder."""
    return subprocess.run([sys.executable, "selfcheck.py", notebook], cwd=folder,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(autouse=True)
def _environment_left_alone():
    before = os.environ.get(FOLDER_VARIABLE)
    yield
    assert os.environ.get(FOLDER_VARIABLE) == before, "a test left MHAKIT_EXERCISE set"


# ------------------------------------------------------------------ the content alone

def test_the_exercise_loads_from_its_folder_beside_the_kits_own_second_exercise():
    assert EXERCISE.folder == FOLDER and EXERCISE.name == "weighted"
    assert EXERCISE.reference_file == FOLDER / "reference.py"
    assert EXERCISE.parts == ("weighted_sum", "normalise", "weighted_average", "quiz")
    # Loading it changes nothing for this process, which still grades the kit's own.
    assert current().folder == BUILT_IN / "mha" and current() is not EXERCISE
    assert sum(chk.points for chk in ordered_checks(EXERCISE)) == TOTAL == 30
    assert {chk.function for chk in ordered_checks(EXERCISE) if chk.tier == "public"} == set(
        EXERCISE.parts)
    own = [chk.name for chk in ordered_checks(EXERCISE) if "own pieces" in chk.name]
    assert own == ["weighted_average: also right with your own pieces (no points: feedback only)"]


def test_the_generated_files_match_a_fresh_build_second_exercise():
    files = exercise_files(EXERCISE)
    assert set(files) == {FOLDER / "release_layout.json",
                          FOLDER / "shipped" / "fingerprints.json",
                          FOLDER / "shipped" / "known_answers.json"}
    for path, text in files.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} is stale, run "
            "`mhakit --exercise tests/second_exercise build --exercise-files`")


def test_the_fingerprints_can_name_every_catalogued_mistake_second_exercise():
    shipped = json.loads(EXERCISE.fingerprints_file.read_text(encoding="utf-8"))
    ids = {m.id for mistakes in catalogue(EXERCISE).values() for m in mistakes}
    assert len(ids) == 9 and all(len(ms) >= 2 for ms in catalogue(EXERCISE).values())
    assert set(shipped["hints"]) == ids
    assert set().union(*(set(t.values()) for t in shipped["probes"].values())) == ids


# ------------------------------------------------------------------ one course for the rest

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`mhakit build --course` in an empty course folder: (course, a pristine copy of it,
    taken before anything is graded, for `mhakit grade --gradebook`)."""
    course = tmp_path_factory.mktemp("weighted-course")
    shutil.copy(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
    done = mhakit("build", "--course", str(course))
    assert done.returncode == 0, done.stdout + done.stderr
    pristine = tmp_path_factory.mktemp("weighted-pristine") / "course"
    shutil.copytree(course, pristine)
    for folder in (course, pristine):
        write_sample_class(EXERCISE, folder / "assignments" / ASSIGNMENT / NOTEBOOK,
                           folder / "submitted", ASSIGNMENT)
    return course, pristine


@pytest.fixture(scope="module")
def course(built):
    return built[0]


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """`mhakit grade` over the sample class: (the printed results, the --out folder)."""
    out = tmp_path_factory.mktemp("weighted-results")
    done = mhakit("grade", "submitted", "--out", str(out), "--seed", str(SEED), "--quiet",
                  "--json", cwd=course)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


@pytest.fixture(scope="module")
def autograded(course):
    """`nbgrader autograde` over the same class: {student: score} from its gradebook."""
    from nbgrader.api import Gradebook

    nbgrader(course, "autograde", ASSIGNMENT, "--force", f"--IsolatedAutograde.seed={SEED}")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {student: gradebook.find_submission(ASSIGNMENT, student).score
                for student in STUDENTS}


def _solution_lines():
    lines = set()
    for name in EXERCISE.function_names:
        body = solution_cell_source(EXERCISE, name).split("### BEGIN SOLUTION")[1]
        lines |= {line.strip() for line in body.split("### END SOLUTION")[0].splitlines()
                  if len(line.strip()) >= 12 and not line.strip().startswith("#")}
    return lines


def _key_patterns():
    quiz = EXERCISE.quiz
    patterns = [re.compile(rf"{name}\s*=\s*['\"]{key}['\"]") if isinstance(key, str)
                else re.compile(rf"{name}\s*=\s*{re.escape(str(key))}")
                for name, key in quiz.KEY.items()]
    assert all(p.search(f"{name} = {key!r}") for p, (name, key) in zip(patterns,
                                                                       quiz.KEY.items()))
    return patterns


@pytest.mark.slow
def test_the_build_releases_both_languages_without_answers_second_exercise(course):
    answer_lines = _solution_lines()
    assert len(answer_lines) >= 4  # the scan has something to look for
    explanations = [text[lang][:25] for text in EXERCISE.quiz.EXPLANATIONS.values()
                    for lang in text]
    forbidden = ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "CATALOGUE", "_normalise_other_axis",
                 "hidden_checks", "REFERENCE", "import reference"] + explanations
    for assignment, lang in EXERCISE.assignments.items():
        release = course / "assignments" / assignment
        notebook = nbformat.read(str(release / NOTEBOOK), as_version=4)
        assert notebook.metadata["mhakit"]["language"] == lang
        answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
                   if c.metadata.get("nbgrader", {}).get("solution")}
        assert set(answers) == {f"answer_{p}" for p in EXERCISE.function_names} | {
            "answer_quiz_1", "answer_quiz_2"}
        for name in EXERCISE.function_names:
            assert f"def {name}(" in answers[f"answer_{name}"]
            assert "raise NotImplementedError()" in answers[f"answer_{name}"]
        points = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
                  for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")}
        assert points == {"test_weighted_sum": 8, "test_normalise": 8,
                          "test_weighted_average": 10, "test_quiz": 4}
        # The self-check ships: the engine's half and the exercise's shipped half.
        shipped = release / "mhakit_student"
        assert (release / "selfcheck.py").is_file() and (shipped / "runner.py").is_file()
        shipped_checks = (shipped / "exercise" / "checks.py").read_text(encoding="utf-8")
        assert shipped_checks == vendored((FOLDER / "shipped" / "checks.py").read_text(
            encoding="utf-8"), "checks.py")
        assert "from ..framework import" in shipped_checks  # the release's own self-check
        assert (shipped / "exercise" / "fingerprints.json").read_bytes() == (
            EXERCISE.fingerprints_file.read_bytes())
        assert f'LANGUAGE = "{lang}"' in (shipped / "language.py").read_text(encoding="utf-8")
        assert not (shipped / "exercise" / "mistakes.py").exists()
        files = [p for p in release.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert len(files) > 10
        for path in files:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":
                text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
            found = [line for line in answer_lines if line in text]
            assert not found, f"{path} contains solution code: {found}"
            hits = [word for word in forbidden if word in text]
            assert not hits, f"{path} mentions {hits}"
            keys = [p.pattern for p in _key_patterns() if p.search(text)]
            assert not keys, f"{path} holds quiz keys: {keys}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [ASSIGNMENT, ENGLISH])
def test_the_releases_selfcheck_passes_the_source_and_fails_the_stubs_second_exercise(
        course, assignment):
    done = selfcheck(course / "source" / assignment)  # the notebook with the reference in
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 of 4 parts pass" in done.stdout
    done = selfcheck(course / "assignments" / assignment)  # the untouched release
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0 of 4 parts pass" in done.stdout
    assert done.stdout.count("not yet implemented") >= 4
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_selfcheck_names_the_exercises_own_mistakes_second_exercise(course, tmp_path):
    hints = {m.id: m for ms in catalogue(EXERCISE).values() for m in ms}
    # bob, in the Chinese release as submitted
    chinese = tmp_path / "zh"
    shutil.copytree(course / "assignments" / ASSIGNMENT, chinese)
    shutil.copy(course / "submitted" / "bob_whole_array" / ASSIGNMENT / NOTEBOOK,
                chinese / NOTEBOOK)
    done = selfcheck(chinese)
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("normalise"))
    assert MISTAKE_LABEL["zh"] + hints["normalise/whole-array"].zh in row
    assert "2 of 4 parts pass" in done.stdout  # weighted_average uses his normalise
    # dan, in the English release
    english = tmp_path / "en"
    shutil.copytree(course / "assignments" / ENGLISH, english)
    answers = EXERCISE.content("sample_class").sample_answers(EXERCISE)["dan_not_normalised"]
    nbformat.write(fill(nbformat.read(str(english / NOTEBOOK), as_version=4), answers),
                   str(english / NOTEBOOK))
    done = selfcheck(english)
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("weighted_average"))
    assert "Likely mistake: " + hints["weighted_average/weights-not-normalised"].en in row
    assert "3 of 4 parts pass" in done.stdout


@pytest.mark.slow
def test_mhakit_grade_gives_the_class_its_scores_and_names_the_mistakes_second_exercise(
        graded):
    results, out = graded
    assert set(results) == set(STUDENTS)
    scores = {student: result["score"] for student, result in results.items()}
    assert scores["alice_correct"] == TOTAL
    assert scores["carol_unimplemented"] == 0
    # bob's normalise loses its 8 points; weighted_average is graded with a stand-in for
    # normalise and keeps its 10. dan loses weighted_average's 10 and quiz_2's 2.
    assert scores["bob_whole_array"] == TOTAL - 8
    assert scores["dan_not_normalised"] == TOTAL - 10 - 2
    for student, mistake in MISTAKES.items():
        saved = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert saved["score"] == scores[student]
        tags = {tag for test in saved["tests"] for tag in test.get("tags", [])}
        assert mistake in tags, (student, tags)
        failed = {test["name"].split(":")[0] for test in saved["tests"]
                  if test.get("tags") and mistake in test["tags"]}
        assert failed == {mistake.split("/")[0]}
    alice = json.loads((out / "alice_correct" / "results.json").read_text(encoding="utf-8"))
    assert not any(test.get("tags") for test in alice["tests"])
    # The own-pieces check catches bob's normalise inside his weighted_average, for 0 points.
    bob = json.loads((out / "bob_whole_array" / "results.json").read_text(encoding="utf-8"))
    own = next(t for t in bob["tests"] if t["name"].startswith("weighted_average: also right"))
    assert own["status"] == "failed" and own["max_score"] == 0
    header = (out / "grades.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "student,total,weighted_sum,normalise,weighted_average,quiz,status"


@pytest.mark.slow
def test_mhakit_grade_grades_one_notebook_alone_second_exercise(course, tmp_path):
    english = nbformat.read(str(course / "assignments" / ENGLISH / NOTEBOOK), as_version=4)
    answers = EXERCISE.content("sample_class").sample_answers(EXERCISE)
    for student, expected in (("alice_correct", TOTAL), ("dan_not_normalised", TOTAL - 12)):
        path = tmp_path / f"{student}.ipynb"
        nbformat.write(fill(english, answers[student]), str(path))
        done = mhakit("grade", str(path), "--seed", "5", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)  # stdout holds the result and nothing else
        assert result["score"] == expected
        assert result["extra_data"]["seed"] == 5
        assert {t["name"].split(":")[0] for t in result["tests"]} == set(EXERCISE.parts)


@pytest.mark.slow
def test_nbgrader_autograde_gives_the_same_scores_as_mhakit_grade_second_exercise(
        graded, autograded):
    results, _ = graded
    assert autograded["alice_correct"] == TOTAL and autograded["carol_unimplemented"] == 0
    assert autograded == {student: result["score"] for student, result in results.items()}


@pytest.mark.slow
def test_mhakit_grade_fills_the_gradebook_as_nbgrader_does_second_exercise(
        built, autograded, tmp_path):
    from nbgrader.api import Gradebook

    pristine = built[1]
    done = mhakit("grade", "submitted", "--out", str(tmp_path / "results"), "--seed",
                  str(SEED), "--quiet", "--gradebook", ".", cwd=pristine)
    assert done.returncode == 0, done.stderr
    with Gradebook(f"sqlite:///{pristine / 'gradebook.db'}") as gradebook:
        mine = {student: gradebook.find_submission(ASSIGNMENT, student).score
                for student in STUDENTS}
    assert mine == autograded
    assert (pristine / "autograded" / "bob_whole_array" / ASSIGNMENT / NOTEBOOK).is_file()


@pytest.mark.slow
def test_the_gradescope_bundle_carries_the_exercise_and_grades_it_second_exercise(
        course, tmp_path):
    """`mhakit --exercise FOLDER gradescope`: the zip holds the exercise's folder, and
    run_autograder, in a folder laid out like /autograder, grades with it."""
    import zipfile

    done = mhakit("gradescope", "--out", str(tmp_path / "autograder.zip"))
    assert done.returncode == 0, done.stderr
    root = tmp_path / "mhakit"
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = set(archive.namelist())
        archive.extractall(root / "source")
    assert {"exercise/__init__.py", "exercise/reference.py", "exercise/shipped/checks.py",
            "exercise/release_layout.json"} <= names
    for student, expected in (("alice_correct", TOTAL), ("bob_whole_array", TOTAL - 8)):
        shutil.rmtree(root / "submission", ignore_errors=True)
        (root / "submission").mkdir()
        shutil.copy(course / "submitted" / student / ASSIGNMENT / NOTEBOOK,
                    root / "submission" / NOTEBOOK)
        env = {k: v for k, v in os.environ.items() if k != FOLDER_VARIABLE}
        env.update(MHAKIT_AUTOGRADER_ROOT=str(root), MHAKIT_PYTHON=sys.executable)
        ran = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                             capture_output=True, text=True, timeout=600)
        assert ran.returncode == 0, ran.stderr
        result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        assert result["score"] == expected, student
        assert {t["name"].split(":")[0] for t in result["tests"]} == set(EXERCISE.parts)


# ------------------------------------------------------------------ one course, two exercises

def class_of_both(submitted, own):
    """nbgrader's submitted/ folder of a course with both exercises: ann and ben handed in
    each, cy only the kit's own. (Empty files: finding them reads no notebook.)"""
    for student, exercises in (("ann", (EXERCISE, own)), ("ben", (EXERCISE, own)),
                               ("cy", (own,))):
        for exercise in exercises:
            path = submitted / student / exercise.default_assignment / exercise.notebook
            path.parent.mkdir(parents=True)
            path.write_text("{}")


def test_a_run_finds_only_its_own_exercises_submissions_second_exercise(tmp_path, monkeypatch):
    """`mhakit grade` grades one exercise a run: the folder's assignments say which, and a
    folder with both exercises' is refused in one line that names each. Told which, it
    takes each student's notebook of that exercise, never the other's, and a student who
    handed in only the other is not in the run."""
    from mhakit.integrations.batch import discover, exercise_of

    monkeypatch.setenv(FOLDER_VARIABLE, str(FOLDER))
    own = load(BUILT_IN / "mha")
    submitted = tmp_path / "submitted"
    class_of_both(submitted, own)
    with pytest.raises(ValueError) as refused:
        exercise_of(submitted)
    said = str(refused.value)
    assert "\n" not in said and "2 exercises" in said and "--exercise" in said, said
    assert f"{EXERCISE.name} ({ASSIGNMENT})" in said and f"{own.name} (mha)" in said, said
    found = discover(submitted, EXERCISE)
    assert {student: path.parent.name for student, path in found.paths.items()} == {
        "ann": ASSIGNMENT, "ben": ASSIGNMENT}
    assert found.problems == found.notes == {}  # cy's lone notebook is the kit's exercise's
    found = discover(submitted, own)
    assert {student: path.parent.name for student, path in found.paths.items()} == {
        "ann": "mha", "ben": "mha", "cy": "mha"}
    for student in ("ann", "ben"):
        shutil.rmtree(submitted / student / "mha")
    shutil.rmtree(submitted / "cy")
    assert exercise_of(submitted) is EXERCISE  # by its assignments, whichever is named first
    monkeypatch.setenv(FOLDER_VARIABLE, os.pathsep.join([str(BUILT_IN / "mha"), str(FOLDER)]))
    assert exercise_of(submitted) is EXERCISE
    assert exercise_of(submitted / "ann" / ASSIGNMENT) is current() is own  # a flat folder


def test_one_notebook_alone_is_graded_by_the_exercise_that_releases_its_assignment_second_exercise(
        tmp_path):
    """`mhakit grade NOTEBOOK` and pytest_checks.py, not told --exercise, in a course whose
    MHAKIT_EXERCISE names this exercise first: the kit's own notebook at
    submitted/<student>/mha/ is graded by the kit's exercise, which releases that
    assignment, as a folder's run and nbgrader grade it; the same notebook elsewhere, by
    the first named. (Before, always by the first named: the correct notebook scored 2,
    with 40 tampering findings.) The test of both exercises in one course grades each
    exercise's notebook alone."""
    own = load(BUILT_IN / "mha")
    release = REPO / "assignments" / own.default_assignment / own.notebook
    answers = own.content("sample_class").sample_answers(own)["alice_correct"]
    notebook = fill(nbformat.read(str(release), as_version=4), answers)
    path = tmp_path / "submitted" / "ann" / own.default_assignment / own.notebook
    path.parent.mkdir(parents=True)
    nbformat.write(notebook, str(path))
    flat = tmp_path / "flat.ipynb"
    nbformat.write(notebook, str(flat))
    link = tmp_path / "submitted" / "ben" / own.default_assignment / own.notebook
    link.parent.mkdir(parents=True)
    link.symlink_to(flat)  # the folder it lies in counts, as in a folder's run
    graded = {where: grade_alone(where) for where in (path, flat, link)}
    for where, by in ((path, own), (flat, EXERCISE), (link, own)):
        assert graded[where][0]["extra_data"]["exercise"] == by.name, where
    result, done = graded[path]
    assert done.returncode == 0, done.stderr
    assert result["score"] == own.total and not result["extra_data"]["tampering"]
    # The graders' own checks as pytest tests of one notebook choose alike.
    checks = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                             str(REPO / "mhakit" / "integrations" / "pytest_checks.py")],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env=dict(exercise_environment(), MHAKIT_SUBMISSION=str(path)))
    assert checks.returncode == 0, checks.stdout[-3000:]
    assert f"{len(ordered_checks(own))} passed" in checks.stdout.splitlines()[-1]


def grade_alone(path, seed=SEED):
    """`mhakit grade NOTEBOOK` in a course whose MHAKIT_EXERCISE names this exercise, not
    told --exercise: (the result it prints, the finished process)."""
    done = subprocess.run(MHAKIT + ["grade", str(path), "--seed", str(seed)],
                          capture_output=True, text=True, timeout=600,
                          env=exercise_environment())
    return json.loads(done.stdout), done


@pytest.mark.slow
def test_one_course_holds_both_exercises_and_nbgrader_grades_each_by_its_own_second_exercise(
        tmp_path):
    """MHAKIT_EXERCISE names this exercise, and the kit's own is always there: each
    assignment is autograded by the exercise that releases it, and the export writes a
    row per student for each. (Before, every assignment was graded as the exercise that
    MHAKIT_EXERCISE named.)"""
    import csv

    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
    own = load(BUILT_IN / "mha")
    for command in (MHAKIT + ["--exercise", str(FOLDER)], MHAKIT):
        done = subprocess.run(command + ["build", "--course", str(course)], capture_output=True,
                              text=True, timeout=600, env=tool_environment())
        assert done.returncode == 0, done.stdout + done.stderr
    for exercise, assignment in ((EXERCISE, ASSIGNMENT), (own, own.default_assignment)):
        write_sample_class(exercise, course / "assignments" / assignment / exercise.notebook,
                           course / "submitted", assignment)
    # `mhakit doctor` looks at every exercise the course holds, each out of its own total.
    doctor = subprocess.run(MHAKIT + ["doctor", "--course", str(course)], capture_output=True,
                            text=True, timeout=600, env=exercise_environment())
    for assignment in (*EXERCISE.assignments, *own.assignments):
        assert f"{assignment}: source and release are fresh" in doctor.stdout, doctor.stdout
    assert f"out of {2 * TOTAL + 2 * own.total:g}" in doctor.stdout, doctor.stdout
    for assignment in (ASSIGNMENT, own.default_assignment):
        nbgrader(course, "autograde", assignment, "--force", f"--IsolatedAutograde.seed={SEED}")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        weighted = {s.student_id: s.score for s in gradebook.assignment_submissions(ASSIGNMENT)}
        kits = {s.student_id: s.score
                for s in gradebook.assignment_submissions(own.default_assignment)}
    assert weighted["alice_correct"] == TOTAL and weighted["carol_unimplemented"] == 0
    assert kits["alice_correct"] == own.total
    assert len(set(kits.values())) > 1  # graded, not all alike
    # `mhakit grade` grades one exercise a run: not told which, it names both; told, it
    # grades that one's notebooks as nbgrader did.
    submitted = str(course / "submitted")
    refused = subprocess.run(MHAKIT + ["grade", submitted, "--out", str(tmp_path / "both")],
                             capture_output=True, text=True, timeout=600,
                             env=exercise_environment())
    assert refused.returncode == 2 and "2 exercises" in refused.stderr, refused.stderr
    for folder, exercise, by_nbgrader in ((FOLDER, EXERCISE, weighted),
                                          (BUILT_IN / "mha", own, kits)):
        done = subprocess.run(MHAKIT + ["--exercise", str(folder), "grade", submitted, "--out",
                                        str(tmp_path / exercise.name), "--seed", str(SEED),
                                        "--json", "--quiet"], capture_output=True, text=True,
                              timeout=600, env=exercise_environment())
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)
        assert {student: result["score"] for student, result in results.items()} == by_nbgrader
        assert {result["extra_data"]["exercise"] for result in results.values()} == {
            exercise.name}
    # And a notebook graded alone, not told which exercise: its assignment's, as nbgrader.
    for exercise, assignment, student, by_nbgrader in (
            (EXERCISE, ASSIGNMENT, "bob_whole_array", weighted),
            (own, own.default_assignment, "bob_partly_correct", kits)):
        result, done = grade_alone(course / "submitted" / student / assignment / exercise.notebook)
        assert result["extra_data"]["exercise"] == exercise.name, done.stderr
        assert result["score"] == by_nbgrader[student] < exercise.total
    nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_exercise = {(row["assignment"], row["student_id"]): float(row["score"]) for row in rows}
    assert by_exercise[(EXERCISE.name, "alice_correct")] == TOTAL
    assert by_exercise[(own.name, "alice_correct")] == own.total
    assert {row["assignment"] for row in rows} == {EXERCISE.name, own.name}
