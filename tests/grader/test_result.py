"""mhakit/grader/result.py: a result is typed inside the kit, and results.json is
written and read in one place each."""

import json

import pytest

from mhakit.grader.result import Outcome, Result, Status, graded_status, status_of

PARTS = {"softmax": 5.0, "quiz": 0.0}


def a_result(**extra):
    tests = (Outcome("softmax: sums to 1", 5.0, 5.0, "passed", "passed", "visible"),
             Outcome("quiz: question 1", 0.0, 2.0, "failed", "wrong", "after_published",
                     ("quiz/wrong-choice",)))
    return Result(5.0, tests, {"parts": PARTS, "seed": 7, "max_score": 7.0, "language": "en",
                               **extra})


@pytest.mark.parametrize("text, status", [
    ("graded", Status.GRADED), ("graded (crashes, unconfined)", Status.GRADED),
    ("unreadable", Status.UNREADABLE), ("grading failed", Status.FAILED),
    ("refused", Status.REFUSED)])
def test_every_status_a_grader_writes_reads_back(text, status):
    assert status_of(text) is status


@pytest.mark.parametrize("text", ["gradedness", "graded (", "Graded", "", None, 3, "failed"])
def test_a_status_no_grader_writes_is_refused(text):
    with pytest.raises(ValueError):
        status_of(text)


def test_a_grade_says_its_notes_in_brackets_and_reads_back_as_a_grade():
    assert graded_status() == "graded"
    assert graded_status(["crashes", "tampering"]) == "graded (crashes, tampering)"
    assert status_of(graded_status(["tampering"])) is Status.GRADED
    assert Status.FAILED.value == "grading failed"  # the text on disk and in Gradescope


def test_results_json_round_trips_through_its_one_writer_and_its_one_reader():
    result = a_result(crashes=["softmax: the process ended"], confinement="plain")
    shaped = json.loads(json.dumps(result.as_json()))
    assert shaped["extra_data"]["status"] == "graded (crashes, unconfined)"
    assert shaped["tests"][1]["tags"] == ["quiz/wrong-choice"]
    assert "tags" not in shaped["tests"][0] and "output" not in shaped
    assert Result.from_json(shaped) == result


def test_a_status_other_than_graded_is_written_without_notes():
    failed = Result(0, (), {"parts": {}, "seed": 1, "max_score": 0, "crashes": ["x"]},
                    Status.FAILED, "mha-kit could not grade this submission")
    shaped = failed.as_json()
    assert shaped["extra_data"]["status"] == "grading failed"
    assert Result.from_json(shaped).status is Status.FAILED


@pytest.mark.parametrize("status, kept", [("graded (crashes)", True), ("unreadable", True),
                                          ("graded, honestly", False), ("perfect", False)])
def test_a_results_json_whose_status_no_grader_writes_is_refused(status, kept):
    shaped = a_result().as_json()
    shaped["extra_data"]["status"] = status
    if kept:
        assert Result.from_json(shaped).status is status_of(status)
    else:
        with pytest.raises(ValueError):
            Result.from_json(shaped)


@pytest.mark.parametrize("spoil", [
    lambda r: r.pop("tests"), lambda r: r.update(score="100"), lambda r: r.update(score=True),
    lambda r: r.update(score=float("nan")), lambda r: r.update(extra_data=[]),
    lambda r: r["tests"].append("passed"), lambda r: r["tests"][0].update(name=3),
    lambda r: r["tests"][0].update(score=None), lambda r: r["tests"][1].update(tags=[1]),
    lambda r: r["tests"][0].update(status="perfect"),
    lambda r: r["extra_data"].update(parts={"softmax": "5"}),
    lambda r: r["extra_data"].update(seed=-1), lambda r: r["extra_data"].update(seed=True),
    lambda r: r["extra_data"].update(language="fr"),
    lambda r: r["extra_data"].update(style={"softmax": 1}), lambda r: r.update(output=[]),
    lambda r: r["extra_data"].pop("max_score")])
def test_a_results_json_of_another_shape_is_refused_with_a_value_error(spoil):
    shaped = a_result().as_json()
    spoil(shaped)
    with pytest.raises(ValueError):
        Result.from_json(shaped)


def test_a_result_reads_its_tests_by_part_and_adds_facts_without_changing_itself():
    result = a_result()
    assert [t.name for t in result.tests_of("quiz")] == ["quiz: question 1"]
    for part in {test.part for test in result.tests} | {"no such part"}:
        assert result.tests_of(part) == [t for t in result.tests if t.name.startswith(part + ":")]
    result.tests_of("quiz").clear()  # a list of the caller's own
    assert result.tests_of("quiz")
    more = result.with_extra(batch_notes=["two notebooks"])
    assert more.extra["batch_notes"] == ["two notebooks"] and "batch_notes" not in result.extra
    assert (result.parts, result.seed, result.language, result.max_score) == (PARTS, 7, "en", 7.0)


def test_cleaning_bounds_and_repairs_every_string_a_submission_wrote():
    dirty = a_result(load_errors={"answer_softmax": "\ud800" + "x" * 9000})
    dirty = Result(dirty.score, (Outcome("softmax: x", 0, 5, "failed", "\udfff!", "visible"),),
                   dirty.extra, output="y" * 9000)
    clean = dirty.cleaned()
    error = clean.extra["load_errors"]["answer_softmax"]
    assert error.startswith("\ufffd") and len(error) <= 4000
    assert clean.tests[0].output == "\ufffd!" and len(clean.output) <= 4000
    json.dumps(clean.as_json()).encode("utf-8")  # valid UTF-8 throughout
