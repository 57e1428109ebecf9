"""What became of a submission, as every door reads it.

A result is a dict in Gradescope's results.json schema; its ``extra_data["status"]`` is
text, for people and for the files already on disk: "graded", with what a person should
know in brackets ("graded (crashes, unconfined)"), "unreadable", "grading failed" or, on
Gradescope, "refused".
Code reads it through ``status_of`` and compares with ``Status``, never the text.
"""

from enum import StrEnum


class Status(StrEnum):
    GRADED = "graded"            # scored, perhaps with notes for a person
    UNREADABLE = "unreadable"    # not a notebook the grader could read: zero, and why
    FAILED = "grading failed"    # the grading itself failed: zero, and why, never silent
    REFUSED = "refused"          # nothing here could confine student code (Gradescope's door)


def status_of(extra):
    """The Status of a result's ``extra_data``; ValueError for a status that no grader
    writes (a results.json that is not one of ours)."""
    text = extra.get("status")
    if text in (Status.UNREADABLE, Status.FAILED, Status.REFUSED):
        return Status(text)
    if text == Status.GRADED or (isinstance(text, str) and text.startswith("graded (")
                                 and text.endswith(")")):
        return Status.GRADED
    raise ValueError(f"no grader writes the status {text!r}")


def graded_status(notes=()):
    """The status text of a grade, with ``notes`` (what a person should know) in brackets."""
    return Status.GRADED.value + (f" ({', '.join(notes)})" if notes else "")
