"""The kinds of cell an exercise's lesson is made of (its ``lesson.LESSON``, a list).

The build turns each into notebook cells, in both languages (see build.py).
"""

from dataclasses import dataclass


@dataclass
class Text:
    id: str
    zh: str
    en: str


@dataclass
class Demo:
    """A locked code cell of the kit's own: run by students, never graded."""
    id: str
    source: str


@dataclass
class Task:
    """A function to implement: its answer cell, then its test cell."""
    function: str


@dataclass
class Choice:
    """A multiple-choice question: an answer cell setting ``variable``."""
    variable: str
    zh: str
    en: str
    options: tuple  # ((zh, en), ...), lettered A, B, C, D


@dataclass
class Number:
    variable: str
    zh: str
    en: str


@dataclass
class Written:
    """An optional short answer in a markdown cell, graded by hand in formgrader, on top
    of the exercise's total. ``model``: the model answer, {"zh": ..., "en": ...}.

    Worth 0 points: the grader pays it as formgrader's extra credit. nbgrader 0.9.6 has no
    extra-credit cell; against 1-point cells, tried in formgrader and in Validate:

    - Validate (``nbgrader validate`` and the student's Validate button, the same
      Validator) fails a 1-point cell left empty, "You did not provide a response", and
      warns "you WILL NOT receive full credit": every student who skips an optional
      answer is told so. A 0-point cell passes, answered or not.
    - nbgrader's totals (formgrader, feedback, its own export) count 1-point cells in the
      maximum: a perfect student has 100 / 104. With 0 points, 100 / 100, and a grader's
      extra credit above it (formgrader shows 102 / 100, written 2 / 0).
    - In formgrader an answered 0-point cell still needs a manual grade (an empty one is
      0 and needs none). The grader clicks "Full credit" (0) or types 0, then enters the
      extra credit; a 1 typed into the score box is cut to the cell's 0. Extra credit with
      an empty score box counts for nothing and leaves the cell waiting, as it does on a
      1-point cell: nbgrader adds extra credit only to a score.
    """
    id: str
    zh: str
    en: str
    model: dict
    points: int = 0
