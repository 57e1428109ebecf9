"""autograder/grader/result.py: a result's status, read in one place."""

import pytest

from autograder.grader.result import Status, graded_status, status_of


@pytest.mark.parametrize("text, status", [
    ("graded", Status.GRADED), ("graded (crashes, unconfined)", Status.GRADED),
    ("unreadable", Status.UNREADABLE), ("grading failed", Status.FAILED),
    ("refused", Status.REFUSED)])
def test_every_status_a_grader_writes_reads_back(text, status):
    assert status_of({"status": text}) is status


@pytest.mark.parametrize("text", ["gradedness", "graded (", "Graded", "", None, 3, "failed"])
def test_a_status_no_grader_writes_is_refused(text):
    with pytest.raises(ValueError):
        status_of({"status": text})


def test_a_grade_says_its_notes_in_brackets_and_reads_back_as_a_grade():
    assert graded_status() == "graded"
    assert graded_status(["crashes", "tampering"]) == "graded (crashes, tampering)"
    assert status_of({"status": graded_status(["tampering"])}) is Status.GRADED
    assert Status.FAILED.value == "grading failed"  # the text on disk and in Gradescope
