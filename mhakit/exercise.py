"""Exercises are content. This module finds one and hands the engine what it holds.

An exercise is a folder that is a Python package. Its ``__init__.py`` is the contract:

- ``NAME``, ``TITLE`` ({"zh": ..., "en": ...}), ``NOTEBOOK`` (the notebook's file name)
  and ``ASSIGNMENTS`` ({assignment id: language}; the first is the default);
- ``REFERENCE``: the module of reference functions, never released;
- ``FUNCTIONS``: a tuple of ``Function``, in the order the notebook teaches them;
- ``TOTAL``: the points of the hidden checks, which the engine holds them to;
- ``NOT_GRADED``: files of the folder that decide no grade (the lesson, the story).

Beside it, by name: ``cases.py`` (``CASES``: hidden inputs per function), ``mistakes.py``
(``CATALOGUE``), ``quiz.py`` (``KEY``, ``EXPLANATIONS``, ``POINTS``; optional; its
variables are named ``quiz_<n>``, and a choice has at most four options, A to D),
``style.py`` (``HINTS``), ``lesson.py`` (``LESSON``), ``sample_class.py``
(``sample_answers``) and ``shipped/``, which ships to students inside the self-check
(its .py and .json files, subfolders too). Its ``__init__.py`` may say in
``STUDENT_IMPORTS`` which modules beside the standard library a learner's cells may
import, each with its whole package, as in their kernel (numpy and IPython.display, which
every kernel has, when it does not say): grading offers them to the child, and the
self-check and the feedback name any other import. Its modules import the self-check by
the kit's name (``from mhakit.selfcheck.framework import ...``); the build vendors them into
the release's ``mhakit_student/exercise/``, as ``from ..framework import ...``.
``release_layout.json``, ``shipped/fingerprints.json`` and ``shipped/known_answers.json``
are generated (``mhakit build --exercise-files``) and committed.

A course may hold several exercises: ``MHAKIT_EXERCISE`` names their folders, with
os.pathsep between them as in PATH, and the kit's own are always there. The first named
is the one that ``mhakit`` commands build and grade (``current``); nbgrader grades each
assignment by the exercise whose ``ASSIGNMENTS`` name it (``for_assignment``), and a
result names its own (``of_result``).

The engine reads every function's name from here and never writes one of its own. An
exercise that breaks these promises does not load, and the error names each one: a
function that its reference or ``cases.py`` lacks, cases of no function, a quiz name or key
of another form, a file in ``NOT_GRADED`` that is not there.
"""

import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from .settings import exercise_folder, settings

BUILT_IN = Path(__file__).resolve().with_name("exercises")
DEFAULT = "mha"
FOLDER_VARIABLE = "MHAKIT_EXERCISE"  # a folder: grade, build and check that exercise
LAYOUT_NAME = "release_layout.json"
FINGERPRINTS_NAME = "fingerprints.json"
KNOWN_ANSWERS_NAME = "known_answers.json"


@dataclass(frozen=True)
class Items:
    """How a function works item by item, as a numpy gufunc does: each array parameter
    it loops over spans some trailing core dims per item, and its leading dims are loop
    dims that broadcast; each returned array likewise. While another function is
    graded, a call of this one on a slice of a call the reference made (one head, one
    batch item) is answered with the same slice of the recorded answer
    (sandbox/stand_ins.py). Declare only what the function really does item by item."""

    args: tuple  # ((array parameter, its core dims), ...)
    returns: tuple  # the core dims of each returned array, in order
    # ((parameter, position of the returned array it broadcasts against), ...): two such
    # masks mean the same when they broadcast to the same array of that one's shape
    masks: tuple = ()
    # an axis parameter (see Function.axes): each item is that one axis, wherever it
    # lies, of every looped and returned array, and all their other dims loop (as in a
    # normalisation along one axis)
    core_at: str = ""
    # with core_at: an item means the same with one number added to all its entries
    # (a normalised exponential), so a call with one row at -1e9 where the reference's
    # row is 0 is met
    same_when_shifted: bool = False


@dataclass(frozen=True)
class Function:
    """One function the learner writes, as the hidden checks grade it."""

    name: str
    points: tuple  # (values on random inputs, edge cases, float32 kept, inputs unchanged)
    returns: tuple = ()  # the names of the two arrays it returns, when it returns a pair
    own_pieces: bool = False  # also checked with the learner's own pieces, for feedback
    short: str = ""  # its column in the grade table
    # ((axis parameter, the array parameter it is an axis of), ...): a stand-in call
    # with -1 and one with ndim - 1 mean the same
    axes: tuple = ()
    items: Items | None = None  # how it works item by item, if it does (see Items)

    @property
    def total(self):
        return sum(self.points)


REQUIRED = ("NAME", "TITLE", "NOTEBOOK", "ASSIGNMENTS", "REFERENCE", "FUNCTIONS", "TOTAL")


class Exercise:
    """The exercise whose content package is ``package``."""

    def __init__(self, package):
        missing = [name for name in REQUIRED if not hasattr(package, name)]
        if missing:
            raise ValueError(f"{package.__file__} is not an exercise's contract: it has no "
                             f"{', '.join(missing)}")
        self.package = package
        self.folder = Path(package.__file__).resolve().parent
        self.name = package.NAME
        self.title = dict(package.TITLE)
        self.notebook = package.NOTEBOOK
        self.assignments = dict(package.ASSIGNMENTS)
        self.functions = tuple(package.FUNCTIONS)
        self.total = package.TOTAL
        # A stale name here would quietly count a story's edit as a change of graders.
        unheld = [name for name in getattr(package, "NOT_GRADED", ())
                  if not (self.folder / name).is_file()]
        if unheld:
            raise ValueError(f"{package.__file__}: NOT_GRADED names files the exercise does "
                             f"not hold: {', '.join(unheld)}")
        problems = self._broken_promises()
        if problems:
            raise ValueError(f"{package.__file__}: the exercise breaks its contract: "
                             + "; ".join(problems))

    def _broken_promises(self):
        """What the contract promises that the content does not hold, one line each: a
        function without a reference or without cases, cases of no function, a quiz
        whose names or keys are not of the contract's form."""
        names, problems = self.function_names, []
        missing = [n for n in names if not callable(getattr(self.package.REFERENCE, n, None))]
        if missing:
            problems.append(f"the reference has no {', '.join(missing)}")
        cases = set(getattr(self.content("cases"), "CASES", {}) if (
            self.folder / "cases.py").is_file() else ())
        if set(names) - cases:
            problems.append(f"cases.py has no cases of {', '.join(sorted(set(names) - cases))}")
        if cases - set(names):
            problems.append(f"cases.py has cases of no function: "
                            f"{', '.join(sorted(cases - set(names)))}")
        if (self.folder / "quiz.py").is_file():
            problems += _quiz_problems(self.content("quiz"))
        return problems

    def __repr__(self):
        return f"<exercise {self.name} in {self.folder}>"

    def __reduce__(self):
        # Sent to a grading worker (or a Dask worker) as its folder, loaded there once
        # (load is cached), which also tells that process's sandbox what to hide.
        return load, (self.folder,)

    def content(self, module):
        """One of the exercise's content modules (``cases``, ``mistakes``...)."""
        return importlib.import_module(f"{self.package.__name__}.{module}")

    @property
    def default_assignment(self):
        return next(iter(self.assignments))

    @property
    def function_names(self):
        return tuple(function.name for function in self.functions)

    def function(self, name):
        return next(function for function in self.functions if function.name == name)

    @cached_property
    def reference(self):
        """{function name: the reference function}."""
        return {name: getattr(self.package.REFERENCE, name) for name in self.function_names}

    @property
    def reference_file(self):
        return Path(self.package.REFERENCE.__file__).resolve()

    @cached_property
    def quiz(self):
        """The quiz's module (``KEY``, ``EXPLANATIONS``, ``POINTS``), or None."""
        if not (self.folder / "quiz.py").exists():
            return None
        return self.content("quiz")

    @property
    def parts(self):
        """The rows of the self-check and the columns of the grades, in notebook order."""
        return self.function_names + (("quiz",) if self.quiz else ())

    def part_points(self, part):
        if part == "quiz":
            return float(sum(self.quiz.POINTS.values()))
        return float(self.function(part).total)

    @property
    def student_imports(self):
        """The packages, beside the standard library, that the learner's cells may import."""
        from .selfcheck.imports import allowed_by

        return allowed_by(self.shipped)

    @cached_property
    def shipped(self):
        """The package that ships to students (the public checks, the story, the
        demonstrations): the exercise's ``shipped`` subpackage."""
        return importlib.import_module(f"{self.package.__name__}.shipped")

    @property
    def shipped_folder(self):
        return self.folder / "shipped"

    @property
    def layout_file(self):
        return self.folder / LAYOUT_NAME

    @property
    def fingerprints_file(self):
        return self.shipped_folder / FINGERPRINTS_NAME

    @property
    def known_answers_file(self):
        return self.shipped_folder / KNOWN_ANSWERS_NAME

    @cached_property
    def layout(self):
        """The release's layout: what the tampering check compares a submission with."""
        return json.loads(self.layout_file.read_text(encoding="utf-8"))

    @cached_property
    def kit_sources(self):
        """The normalised sources of the release's locked cells (setup, checks, demos)."""
        return frozenset(self.layout["locked"].values())

    def grading_files(self):
        """The exercise's files whose content decides a grade: all but what it calls not
        graded (its lesson, its story). The reference is ``reference_file``."""
        skipped = {self.folder / name for name in getattr(self.package, "NOT_GRADED", ())}
        return [path for path in content_files(self.folder) if path not in skipped]

    def hidden_paths(self):
        """What student code must never read: the exercise's folder and its reference's
        (usually one and the same)."""
        return list(dict.fromkeys([self.folder, self.reference_file.parent]))


QUIZ_NAME = re.compile(r"quiz_[1-9][0-9]*")


def _quiz_problems(quiz):
    """How ``quiz`` (its KEY, EXPLANATIONS and POINTS) strays from the contract's form."""
    key = getattr(quiz, "KEY", {})
    problems = [f"quiz.py names {name!r}, not quiz_<n>" for name in key
                if not QUIZ_NAME.fullmatch(str(name))]
    for name, answer in key.items():
        numbers = answer if isinstance(answer, tuple) else (answer,)
        letter = isinstance(answer, str) and answer in ("A", "B", "C", "D")
        if not letter and not all(isinstance(n, (int, float)) and not isinstance(n, bool)
                                  for n in numbers):
            problems.append(f"quiz.py's key of {name} is {answer!r}: a letter A to D, a "
                            "number or a tuple of numbers")
    for table in ("EXPLANATIONS", "POINTS"):
        if set(getattr(quiz, table, {})) != set(key):
            problems.append(f"quiz.py's {table} and KEY name different questions")
    return problems


def loaded():
    """Every exercise this process has loaded: student code must read none of them."""
    return [_load(folder) for folder in _LOADED]


_LOADED: list = []


@lru_cache(maxsize=None)
def _load(folder):
    from .sandbox.hidden import hide

    exercise = _open(folder)
    _LOADED.append(folder)  # only what loaded: a folder that failed holds nothing to hide
    # Told before any child can run: no child of this process reads any loaded exercise.
    hide(*exercise.hidden_paths(), sentinels=[exercise.reference_file])
    return exercise


def _open(folder):
    if folder.parent == BUILT_IN:
        return Exercise(importlib.import_module(f"{__package__}.exercises.{folder.name}"))
    if not (folder / "__init__.py").is_file():
        raise ValueError(f"{folder} is not an exercise: it has no __init__.py")
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
    stem = re.sub(r"\W", "_", folder.name)
    name = f"mhakit_exercise_{stem}_{digest}"  # one name per folder, whatever the folder
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    try:
        spec.loader.exec_module(package)
        return Exercise(package)
    except BaseException:
        del sys.modules[name]
        raise


def load(folder=None):
    """The exercise in ``folder``; by default the first that ``MHAKIT_EXERCISE`` names,
    else the package's own."""
    folder = folder or _first(settings().exercise) or BUILT_IN / DEFAULT
    return _load(Path(folder).resolve())


def _first(folders):
    """The first of MHAKIT_EXERCISE's folders (os.pathsep between them, as in PATH)."""
    return next((folder for folder in (folders or "").split(os.pathsep) if folder), None)


def current():
    """The exercise this process grades and builds by default: the first that
    ``MHAKIT_EXERCISE`` names, else the kit's."""
    return _current(exercise_folder())


@lru_cache(maxsize=8)
def _current(folders):
    # Asked for many times per result (titles, parts, points): resolved once per folder.
    return load(_first(folders))


def course_exercises():
    """Every exercise a course may hold: those ``MHAKIT_EXERCISE`` names, then the kit's
    own (exercises/)."""
    listed = [Path(folder).resolve()
              for folder in (exercise_folder() or "").split(os.pathsep) if folder]
    built_in = sorted(path for path in BUILT_IN.iterdir() if (path / "__init__.py").is_file())
    return [_load(folder) for folder in dict.fromkeys(listed + built_in)]


def for_assignment(assignment):
    """The exercise that releases ``assignment`` (its ASSIGNMENTS name it): how nbgrader's
    door grades each assignment of a course that holds several exercises. An assignment
    that no exercise names is the default exercise's (``current``), as before there could
    be several."""
    for exercise in course_exercises():
        if assignment in exercise.assignments:
            return exercise
    return current()


def for_notebook(path):
    """The exercise that grades one notebook alone: the one that releases the assignment
    its folder is named after (nbgrader's submitted/<student>/<assignment>/), else the
    default one, as a folder's run and nbgrader choose. The folder is the one the path
    names, as in a folder's run: a link to a notebook elsewhere is not followed."""
    return for_assignment(Path(path).absolute().parent.name)


def of_result(result):
    """The exercise a Result was graded against (its ``extra["exercise"]``)."""
    name = result.extra.get("exercise")
    default = current()
    if name in (None, default.name):
        return default
    return _named(name, exercise_folder()) or default


@lru_cache(maxsize=8)
def _named(name, _folders):
    # Asked for every line of a result's feedback; the folders are part of the key.
    return next((exercise for exercise in course_exercises() + loaded()
                 if exercise.name == name), None)


def content_files(folder):
    """The .py and .json files under ``folder``, sorted, without Python's caches: what an
    exercise's folder (or the kit's) is made of, as the build, the hash and the zip read it."""
    return [path for path in sorted(Path(folder).rglob("*"))
            if path.suffix in (".py", ".json") and path.is_file()
            and "__pycache__" not in path.parts]
