"""How a submission's calls travel: planned once, sent in one batch, replayed.

The rule behind the single batch: the child may hold every check's inputs at once, as
long as no sealed answer that travels with the batch is also a question the batch asks.
"""

import numpy as np
import pytest

from mhakit.grader.grading import ordered_checks, prepared_for
from mhakit.grader.planning import ReplayingStudent, batch_groups, same_call
from mhakit.sandbox import Outcome, PlannedCall
from mhakit.sandbox.student import IsolatedStudent
from tests.conftest import grade_answers
from tests.mha_exercise import EXERCISE, sample_answers


def test_every_check_of_the_exercise_goes_in_one_batch():
    plans, batches = prepared_for(5, EXERCISE)
    assert len(batches) == 1
    positions, encoded = batches[0]
    assert positions == list(range(len(plans)))
    assert len(encoded.requests) == sum(len(calls) for calls in plans) > 100


def _call_with_sealed(name, args, answer_name, answer_args):
    call = PlannedCall(name, args, {}, stand_ins=True)
    call.answers.append((answer_name, answer_args, {}, np.zeros(2)))
    return call


def test_a_sealed_answer_that_another_check_asks_for_starts_a_new_batch():
    reference = EXERCISE.reference
    x = np.arange(6.0).reshape(2, 3)
    scores = np.ones((2, 2))
    # Check 0 asks attention, whose stand-in answer softmax(scores) travels sealed;
    # check 1 asks softmax(scores) itself, so it must not share check 0's batch.
    first = [_call_with_sealed("attention", (x, x, x), "softmax", (scores,))]
    second = [PlannedCall("softmax", (scores,), {})]
    third = [PlannedCall("softmax", (x,), {})]
    assert batch_groups([first, second, third], reference) == [[0], [1, 2]]
    # The same the other way round: the question first, the sealed answer later.
    assert batch_groups([second, first], reference) == [[0], [1]]
    # Unrelated inputs share a batch.
    assert batch_groups([first, third], reference) == [[0, 1]]


def test_a_correct_submission_costs_one_batch(reference_answers, monkeypatch):
    sent = []
    original = IsolatedStudent._send_batch

    def counting(self, calls, encoded, todo, *rest):
        sent.append(len(todo))
        return original(self, calls, encoded, todo, *rest)

    monkeypatch.setattr(IsolatedStudent, "_send_batch", counting)
    result = grade_answers(reference_answers, seed=3)
    assert result.score == 100
    plans, _ = prepared_for(3, EXERCISE)
    assert sent == [sum(len(calls) for calls in plans)]  # the quiz's second reads included


class _NoLive:
    def variable(self, name):
        raise AssertionError(f"{name} was read from the child again")


def test_a_second_read_of_a_variable_in_one_check_reuses_the_first():
    planned = [PlannedCall("quiz_1", variable=True)]
    replay = ReplayingStudent(planned, [Outcome("returned", "B")], _NoLive())
    assert replay.variable("quiz_1") == "B"
    assert replay.variable("quiz_1") == "B"
    with pytest.raises(AssertionError, match="quiz_2"):
        replay.variable("quiz_2")  # never read: it goes to the child


def test_a_result_says_where_its_time_went(reference_answers):
    seconds = grade_answers(reference_answers, seed=3).extra["seconds"]
    for phase in ("child start and loading the cells", "round trips",
                  "comparison and diagnosis", "teardown"):
        assert seconds[phase] > 0, seconds


@pytest.mark.parametrize("planned, asked, same", [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0]), True),
    (np.array([0.0, np.nan]), np.array([-0.0, np.nan]), True),  # equal, not equal bytes
    (np.array([1.0, 2.0]), np.array([1.0, 2.5]), False),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0], dtype=np.float32), False),
    (np.zeros((2, 3)), np.zeros((3, 2)), False),  # the same bytes, another shape
])
def test_a_replayed_call_is_the_planned_one_when_its_arrays_are_equal(planned, asked, same):
    assert same_call(PlannedCall("softmax", (planned,), {}),
                     PlannedCall("softmax", (asked,), {})) is same


def test_a_replayed_call_compares_with_the_planned_result_which_no_one_can_change(
        reference_answers, monkeypatch):
    plans, _ = prepared_for(3, EXERCISE)
    calls = [call for mine in plans for call in mine if not call.variable]
    assert sum(call.expected is not None for call in calls) > 100  # not those that raise
    shared = next(call.expected for call in calls if isinstance(call.expected, np.ndarray))
    with pytest.raises(ValueError, match="read-only"):
        shared[...] = 0  # every submission of the run compares with it
    ran = []
    for name, function in EXERCISE.reference.items():
        monkeypatch.setitem(EXERCISE.reference, name,
                            lambda *a, _f=function, _n=name, **k: ran.append(_n) or _f(*a, **k))
    assert grade_answers(reference_answers, seed=3).score == 100
    assert ran == []  # not once more per call: the plan holds the reference's results


def _replayed(monkeypatch):
    """The names of the checks that grading replays, as it replays them."""
    from mhakit.selfcheck import runner

    replayed, original = [], runner.run_check
    monkeypatch.setattr(runner, "run_check", lambda check, student, *rest: (
        replayed.append(check.name) if isinstance(student, ReplayingStudent) else None,
        original(check, student, *rest))[1])
    return replayed


def test_a_check_answered_with_the_references_very_bits_is_not_replayed(reference_answers,
                                                                         monkeypatch):
    replayed = _replayed(monkeypatch)
    assert grade_answers(reference_answers, seed=3).score == 100
    plans, _ = prepared_for(3, EXERCISE)
    assert replayed == [chk.name for chk, calls in zip(ordered_checks(EXERCISE), plans)
                        if not calls.passes]  # the quiz's: planning has no answers to read
    assert len(replayed) < len(plans) // 4


def test_an_answer_off_in_its_last_bit_is_replayed_and_passes_all_the_same(reference_answers,
                                                                           monkeypatch):
    replayed = _replayed(monkeypatch)
    answers = dict(reference_answers)
    answers["answer_softmax"] += ("\n_exact = softmax\n\ndef softmax(x, axis=-1):\n"
                                  "    return np.nextafter(_exact(x, axis), 0)\n")
    result = grade_answers(answers, seed=3)
    assert result.score == 100
    assert sum(name.startswith("softmax:") for name in replayed) >= 4


@pytest.mark.parametrize("student", ["alice_correct", "bob_partly_correct", "dave_tries_to_cheat"])
def test_checks_that_are_not_replayed_come_to_the_verdicts_a_replay_would(student, monkeypatch):
    from mhakit.grader import planning

    answers = sample_answers()[student]
    fast = grade_answers(answers, seed=4)
    monkeypatch.setattr(planning, "as_planned", lambda calls, outcomes: False)
    replayed = grade_answers(answers, seed=4)
    assert fast.tests == replayed.tests and fast.score == replayed.score
