"""The kit's own exercise, multi-head attention, as the tests use it: its contract and
content in the names the tests read them by."""

from mhakit.authoring import sample_class as _samples
from mhakit.authoring.sample_class import fill  # noqa: F401 - for the tests
from mhakit.exercise import BUILT_IN, load
from mhakit.grader.diagnosis import catalogue

EXERCISE = load(BUILT_IN / "mha")
ASSIGNMENTS = EXERCISE.assignments
POINTS = {function.name: function.points for function in EXERCISE.functions}
QUIZ_KEY = EXERCISE.quiz.KEY
QUIZ_EXPLANATIONS = EXERCISE.quiz.EXPLANATIONS
QUIZ_POINTS = EXERCISE.quiz.POINTS
CATALOGUE = catalogue(EXERCISE)
SECTIONS = EXERCISE.parts
WRONG_ANSWER = EXERCISE.content("sample_class").WRONG_ANSWER
PUBLIC = EXERCISE.shipped  # the shipped package (public checks, story), as the self-check loads it


def sample_answers():
    return EXERCISE.content("sample_class").sample_answers(EXERCISE)


def reference_body(function):
    return _samples.reference_body(EXERCISE, function)


def public_module(name):
    """A module of the exercise's shipped package (the story, the demonstrations)."""
    import importlib

    return importlib.import_module(f"{PUBLIC.__name__}.{name}")


lending, show, plots, checks = (public_module(name) for name in ("lending", "show", "plots",
                                                                  "checks"))
