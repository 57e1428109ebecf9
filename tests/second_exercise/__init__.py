"""Weighted averages by hand: a second, small exercise made of content alone.

It proves that the engine knows nothing about multi-head attention: this folder is the
whole exercise, its reference included (``reference.py``), and the engine loads it with
``mhakit --exercise tests/second_exercise`` or ``mhakit.exercise.load(folder)``.
The contract is in mhakit/exercise.py.
"""

from mhakit.exercise import Function

from . import reference as REFERENCE  # noqa: F401 - read by the engine

NAME = "weighted"
TITLE = {"zh": "加权平均", "en": "weighted averages"}
NOTEBOOK = "weighted.ipynb"
ASSIGNMENTS = {"weighted": "zh", "weighted_en": "en"}

FUNCTIONS = (
    Function("weighted_sum", (4, 2, 1, 1), short="wsum"),
    Function("normalise", (4, 2, 1, 1), short="norm"),
    Function("weighted_average", (5, 2, 1, 2), own_pieces=True, short="wavg"),
)
TOTAL = 30  # the code's 26 and the quiz's 4
NOT_GRADED = ("lesson.py", "sample_class.py")
