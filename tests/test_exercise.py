"""mhakit/exercise.py: exercises are content, and the engine names none of their functions."""

import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from mhakit.authoring.build import write_source
from mhakit.exercise import BUILT_IN, load
from mhakit.grader.grading import graders_hash, ordered_checks, seeded
from mhakit.grader.result import Result
from mhakit.grader.planning import plan, same_call
from mhakit.selfcheck.framework import Checks
from tests.mha_exercise import EXERCISE

REPO = Path(__file__).resolve().parent.parent
ENGINE = [path for path in sorted((REPO / "mhakit").rglob("*.py"))
          if not path.is_relative_to(BUILT_IN)] + [REPO / "nbgrader_config.py"]
SECOND = REPO / "tests" / "second_exercise"


def _learner_functions():
    names = set(EXERCISE.function_names)
    if (SECOND / "__init__.py").exists():
        names |= set(load(SECOND).function_names)
    return names


def test_the_engine_names_no_function_a_learner_writes():
    names = _learner_functions()
    assert {"softmax", "attention", "multi_head_attention"} <= names
    pattern = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    found = []
    for path in ENGINE:
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            # Identifiers, string literals (docstrings too) and comments.
            if token.type in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT) and \
                    pattern.search(token.string):
                found.append(f"{path.relative_to(REPO)}:{token.start[0]}: {token.string[:60]}")
    assert len(ENGINE) > 40 and found == []


def test_the_scan_would_find_a_name():
    pattern = re.compile(r"\b(softmax)\b")
    tokens = tokenize.generate_tokens(io.StringIO('x = "softmax"  # softmax\n').readline)
    assert sum(bool(pattern.search(t.string)) for t in tokens) == 2


def _copy(tmp_path, name, edit=None):
    """A copy of the kit's exercise in its own folder, loaded as a folder exercise."""
    folder = tmp_path / name / "mha"
    shutil.copytree(BUILT_IN / "mha", folder, ignore=shutil.ignore_patterns("__pycache__"))
    if edit:
        path, old, new = edit
        text = (folder / path).read_text(encoding="utf-8")
        assert old in text
        (folder / path).write_text(text.replace(old, new, 1), encoding="utf-8")
    return load(folder)


def test_the_graders_hash_follows_what_decides_a_grade_and_not_the_lesson(tmp_path):
    base = graders_hash(_copy(tmp_path, "base"))
    assert base == graders_hash(EXERCISE)  # the same content, wherever it lies
    lesson = _copy(tmp_path, "lesson", ("lesson.py", "# 多头注意力", "# 多头注意力，改过"))
    assert graders_hash(lesson) == base
    story = (EXERCISE.folder / "shipped" / "show.py").read_text(encoding="utf-8")
    first_line = story.splitlines()[0]
    shown = _copy(tmp_path, "story", ("shipped/show.py", first_line, first_line + "  # edited"))
    assert graders_hash(shown) == base  # the story's demonstrations decide no grade
    for name, edit in {"cases": ("cases.py", "B, T_q, T_k, d_k, d_v = 2, 3, 5, 4, 6",
                                 "B, T_q, T_k, d_k, d_v = 2, 3, 5, 4, 7"),
                       "layout": ("release_layout.json", '"points": 12', '"points": 13'),
                       "shipped": ("shipped/checks.py", "large logits", "huge logits")}.items():
        assert graders_hash(_copy(tmp_path, name, edit)) != base, name


def test_hidden_inputs_are_seeded_by_the_checks_name_not_its_place():
    checks = ordered_checks(EXERCISE)
    extra = Checks()

    @extra.add(checks[0].function, "a public example added first")
    def _(student, _rng):
        student.call(checks[0].function, 1.0, 2.0)

    hidden = [i for i, chk in enumerate(checks) if chk.tier == "hidden" and chk.points]
    assert len(hidden) > 30
    before = plan(checks, EXERCISE.reference, seeded(7))
    after = plan(list(extra) + list(checks), EXERCISE.reference, seeded(7))[1:]
    another = plan(checks, EXERCISE.reference, seeded(8))
    pairs = [(a, b) for i in hidden for a, b in zip(before[i], after[i])]
    assert len(pairs) > 100 and all(same_call(a, b) for a, b in pairs)
    assert all(len(before[i]) == len(after[i]) for i in hidden)
    assert not all(same_call(a, b) for i in hidden for a, b in zip(before[i], another[i]))


def test_an_exercise_is_held_to_its_total(tmp_path):
    exercise = _copy(tmp_path, "total", ("__init__.py", "TOTAL = 100", "TOTAL = 99"))
    with pytest.raises(ValueError, match="worth 100 points; its contract says 99"):
        ordered_checks(exercise)


@pytest.mark.parametrize("edit, said", [
    (("__init__.py", 'Function("concat_heads",', 'Function("layer_norm", (1, 1, 1, 1)),\n'
      '    Function("concat_heads",'), "the reference has no layer_norm; cases.py has no "
                                      "cases of layer_norm"),
    (("cases.py", "def cases_concat_heads(", "def concat_heads_cases("),
     "cases.py has no cases of concat_heads"),
    (("cases.py", "def cases_softmax(", "def cases_soft_max(rng, edge):\n    return []\n\n\n"
                                        "def cases_softmax("),
     "cases.py has cases of no function: soft_max"),
    (("quiz.py", '"quiz_1": "B"', '"quiz_one": "B"'),
     "quiz.py names 'quiz_one', not quiz_<n>; quiz.py's EXPLANATIONS and KEY name different"),
    (("quiz.py", '"quiz_1": "B"', '"quiz_1": "E"'),
     "quiz.py's key of quiz_1 is 'E': a letter A to D, a number or a tuple of numbers"),
])
def test_an_exercise_is_held_to_its_contract_when_it_loads(tmp_path, edit, said):
    with pytest.raises(ValueError, match="the exercise breaks its contract: " + re.escape(said)):
        _copy(tmp_path, "broken", edit)


def test_an_exercise_that_names_a_missing_file_not_graded_is_refused(tmp_path):
    with pytest.raises(ValueError, match="NOT_GRADED names files the exercise does not hold: "
                                         "shipped/gone.py"):
        _copy(tmp_path, "stale", ("__init__.py", '"shipped/plots.py")',
                                  '"shipped/plots.py", "shipped/gone.py")'))


def test_a_folder_that_is_no_exercise_is_refused_in_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "empty", tmp_path / "missing"):
        done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli",
                               "--exercise", str(folder), "grade", "x.ipynb"],
                              capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and "is not an exercise" in done.stderr


def test_a_course_build_writes_nothing_into_the_kit(tmp_path):
    def snapshot():
        return {p: p.stat().st_mtime_ns for p in (REPO / "mhakit").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}

    before = snapshot()
    folders = write_source(EXERCISE, tmp_path)
    assert [f.name for f in folders] == ["mha", "mha_en"]
    assert (folders[0] / "mhakit_student" / "exercise" / "checks.py").is_file()
    assert snapshot() == before


def test_a_course_of_several_exercises_finds_each_assignments_own(monkeypatch):
    """MHAKIT_EXERCISE names folders as PATH does; the kit's own exercise is always there,
    and each assignment, and each result, finds the exercise it belongs to."""
    from mhakit.exercise import course_exercises, current, for_assignment, of_result

    second = Path(__file__).resolve().parent / "second_exercise"
    monkeypatch.setenv("MHAKIT_EXERCISE", f"{second}{os.pathsep}")  # an empty entry too
    weighted = load(second)
    assert current() is weighted  # the first named: what `mhakit` commands build and grade
    assert [exercise.name for exercise in course_exercises()] == [weighted.name, EXERCISE.name]
    for assignment in weighted.assignments:
        assert for_assignment(assignment) is weighted
    for assignment in EXERCISE.assignments:
        assert for_assignment(assignment).name == EXERCISE.name
    assert for_assignment("no-such-assignment") is weighted  # as before: the default
    assert of_result(Result(0, (), {"exercise": EXERCISE.name})).name == EXERCISE.name
    assert of_result(Result(0, (), {"exercise": weighted.name})) is weighted
    assert of_result(Result(0, ())) is weighted


def test_the_shipped_package_is_the_exercises_own_subpackage_under_its_own_name():
    """No module is made up for it: tools and the import system find it where it lies,
    and two exercises' shipped packages never share a name."""
    assert EXERCISE.shipped.__name__ == "mhakit.exercises.mha.shipped"
    assert Path(EXERCISE.shipped.__file__).parent == EXERCISE.shipped_folder
    second = load(SECOND)
    assert second.shipped.__name__ == f"{second.package.__name__}.shipped"
    assert second.shipped is not EXERCISE.shipped
    assert not [name for name in sys.modules if name.startswith("mhakit.selfcheck.exercise_")]
