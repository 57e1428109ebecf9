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
    of the exercise's total. ``model``: the model answer, {"zh": ..., "en": ...}."""
    id: str
    zh: str
    en: str
    model: dict
    points: int = 1
