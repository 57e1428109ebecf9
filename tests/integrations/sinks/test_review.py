"""mhakit/integrations/sinks/review.py: review.csv lists every grade a person should
look at, with why, and nothing else."""

import csv

from mhakit.grader.result import Result, Status
from mhakit.integrations.sinks.review import Review


def graded(status=Status.GRADED, **more):
    return Result(0, (), {"parts": {}, "seed": 1, **more}, status)


def test_review_lists_each_reason_of_each_student_who_needs_a_look(tmp_path):
    results = {
        "cleo": graded(),
        "ann": graded(tampering=["a locked cell was changed: test_softmax"]),
        "ben": graded(Status.FAILED, error="the grading process died"),
        "dan": graded(confinement="plain", tampering=["the notebook's metadata was edited"]),
    }
    Review(tmp_path).finish(results)
    with open(tmp_path / "review.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student", "reason"]
    assert [row[0] for row in rows[1:]] == ["ann", "ben", "dan", "dan"]
    reasons = dict((row[0], row[1]) for row in rows[1:3])
    assert reasons["ann"] == "a locked cell was changed: test_softmax"
    assert "the grading process died" in reasons["ben"]
    assert rows[3][1] == "the notebook's metadata was edited"
    assert "unconfined" in rows[4][1]
