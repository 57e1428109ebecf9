"""What became of a submission, as every door reads it: a ``Result`` of ``Outcome``s.

Inside the kit a result is typed: its ``status`` is a ``Status``, each check's verdict an
``Outcome``. On disk it is Gradescope's results.json schema, written by ``as_json`` alone
and read back by ``from_json`` alone, which refuses what no grader writes. There the
status is text under ``extra_data``: "graded", with what a person should know in brackets
("graded (crashes, unconfined)"), "unreadable", "grading failed" or "refused".
"""

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

from ..selfcheck.notebook_file import clean, clean_text
from ..selfcheck.runner import FAILED, NOT_IMPLEMENTED, PASSED
from ..selfcheck.wording import LANGUAGES


class Status(StrEnum):
    GRADED = "graded"            # scored, perhaps with notes for a person
    UNREADABLE = "unreadable"    # not a notebook the grader could read: zero, and why
    FAILED = "grading failed"    # the grading itself failed: zero, and why, never silent
    REFUSED = "refused"          # nothing here could confine student code (Gradescope's door)


def status_of(text: Any) -> Status:
    """The Status that a results.json's status text stands for; ValueError for a status
    that no grader writes (a results.json that is not one of ours)."""
    if text in (Status.UNREADABLE, Status.FAILED, Status.REFUSED):
        return Status(text)
    if text == Status.GRADED or (isinstance(text, str) and text.startswith("graded (")
                                 and text.endswith(")")):
        return Status.GRADED
    raise ValueError(f"no grader writes the status {text!r}")


def graded_status(notes: list[str] | tuple[str, ...] = ()) -> str:
    """The status text of a grade, with ``notes`` (what a person should know) in brackets."""
    return Status.GRADED.value + (f" ({', '.join(notes)})" if notes else "")


VERDICTS = (PASSED, FAILED, NOT_IMPLEMENTED)  # what a check of a graded submission comes to


@dataclass(frozen=True)
class Outcome:
    """One check's verdict: a test of results.json. ``status`` is the self-check's word
    for it, one of VERDICTS (passed, failed, not yet implemented); ``tags`` name the
    mistakes a diagnosis found, as "<function>/<what went wrong>"."""

    name: str
    score: float
    max_score: float
    status: str
    output: str
    visibility: str
    tags: tuple[str, ...] = ()

    @cached_property
    def part(self) -> str:
        """The function (or quiz) the check belongs to: its name up to the colon."""
        return self.name.split(":", 1)[0]

    def as_json(self) -> dict:
        shaped = {"name": self.name, "score": self.score, "max_score": self.max_score,
                  "status": self.status, "output": self.output, "visibility": self.visibility}
        if self.tags:
            shaped["tags"] = list(self.tags)
        return shaped

    @classmethod
    def from_json(cls, data: Any) -> "Outcome":
        if not isinstance(data, dict):
            raise ValueError("a test is not an object")
        name, status, output = (_text(data.get(key)) for key in ("name", "status", "output"))
        tags = data.get("tags", [])
        if status not in VERDICTS:
            raise ValueError(f"no check comes to {status!r}")
        if not isinstance(tags, list):
            raise ValueError("a test's tags are not a list")
        return cls(name, _number(data.get("score")), _number(data.get("max_score")), status,
                   output, str(data.get("visibility", "visible")), tuple(map(_text, tags)))

    def cleaned(self) -> "Outcome":
        return replace(self, name=clean_text(self.name), status=clean_text(self.status),
                       output=clean_text(self.output), visibility=clean_text(self.visibility),
                       tags=tuple(clean_text(tag) for tag in self.tags))


@dataclass(frozen=True)
class Result:
    """A submission's grade. ``extra`` holds the kit's facts about it (seed, parts, the
    exercise, versions, isolation, notes, ...), as results.json's ``extra_data`` holds
    them less the status; ``output`` is the line shown above the tests, if any."""

    score: float
    tests: tuple[Outcome, ...]
    extra: dict = field(default_factory=dict)
    status: Status = Status.GRADED
    output: str | None = None

    @property
    def parts(self) -> dict:
        """{part: points earned}."""
        return self.extra.get("parts", {})

    @property
    def seed(self) -> int | None:
        return self.extra.get("seed")

    @property
    def language(self) -> str | None:
        """The feedback's language ("zh" or "en"); None where nothing was graded."""
        return self.extra.get("language")

    @property
    def max_score(self) -> float:
        return self.extra.get("max_score", 0)

    @property
    def notes(self) -> list[str]:
        """What a person should know of a grade, as its status text says in brackets."""
        extra = self.extra
        return ([label for label in ("crashes", "tampering") if extra.get(label)]
                + (["unconfined"] if extra.get("confinement") == "plain" else []))

    def status_text(self) -> str:
        return graded_status(self.notes) if self.status is Status.GRADED else self.status.value

    def tests_of(self, part: str) -> list[Outcome]:
        return list(self._by_part.get(part, ()))

    @cached_property
    def _by_part(self) -> dict[str, list[Outcome]]:
        """The tests grouped by part once: feedback and the gradebook ask for every part."""
        grouped: dict[str, list[Outcome]] = {}
        for test in self.tests:
            grouped.setdefault(test.part, []).append(test)
        return grouped

    def with_extra(self, **facts: Any) -> "Result":
        """The result with ``facts`` added to (or replacing those in) its extra."""
        return replace(self, extra={**self.extra, **facts})

    def as_json(self) -> dict:
        """Gradescope's results.json schema: the one place that writes it."""
        shaped: dict[str, Any] = {"score": self.score,
                                  "tests": [test.as_json() for test in self.tests],
                                  "extra_data": {**self.extra, "status": self.status_text()}}
        if self.output is not None:
            shaped["output"] = self.output
        return shaped

    @classmethod
    def from_json(cls, data: Any) -> "Result":
        """A results.json's Result; ValueError where it lacks the shape every reader of a
        result relies on (one a grader did not write: corrupt, or planted)."""
        if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
            raise ValueError("not a results.json: no list of tests")
        extra = data.get("extra_data")
        if not isinstance(extra, dict):
            raise ValueError("not a results.json: no extra_data")
        extra = dict(extra)
        status = status_of(extra.pop("status", None))
        _check_facts(extra)
        output = data.get("output")
        return cls(_number(data.get("score")), tuple(map(Outcome.from_json, data["tests"])),
                   extra, status, None if output is None else _text(output))

    def cleaned(self) -> "Result":
        """Every string valid UTF-8 and bounded, before any file or gradebook holds it:
        student code writes into a result (exception text, load errors)."""
        return replace(self, tests=tuple(test.cleaned() for test in self.tests),
                       extra=clean(self.extra),
                       output=None if self.output is None else clean_text(self.output))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{type(value).__name__} where text belongs")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    return value


def _check_facts(extra: dict) -> None:
    """The facts that readers of a result take for granted: its parts' points, its total,
    its seed, its language and its style notes."""
    parts, seed, style = extra.get("parts"), extra.get("seed"), extra.get("style", {})
    if not isinstance(parts, dict):
        raise ValueError("its parts are not a table")
    for points in [*parts.values(), extra.get("max_score")]:
        _number(points)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise ValueError("its seed is not a seed")
    if extra.get("language", "zh") not in LANGUAGES:
        raise ValueError("its language is not one the kit speaks")
    if not isinstance(style, dict) or not all(isinstance(v, str) for v in style.values()):
        raise ValueError("its style notes are not text")
