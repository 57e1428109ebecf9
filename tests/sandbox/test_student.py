"""mhakit/sandbox/student.py: the grader's handle on the child. Every message of a call
counts against the call's one deadline, and a submission has one wall clock in all."""

import numpy as np
import pytest

from mhakit.sandbox import IsolatedStudent, Limits
from mhakit.sandbox.process import ChildProcess, Zygote
from mhakit.sandbox.student import EncodedBatch, PlannedCall
from tests.mha_exercise import EXERCISE

PINGING = ("import time\n"
           "def softmax(x, axis=-1):\n"
           "    while True:\n"
           "        time.sleep(0.2)\n"
           "        dot_product(np.ones(2), np.ones(2))  # a message now and then\n")


def test_every_message_of_a_call_counts_against_its_one_deadline():
    call = PlannedCall("softmax", (np.ones(3),), stand_ins=True,
                       answers=[("dot_product", (np.ones(2), np.ones(2)), {}, 2.0)])
    with IsolatedStudent([("a", PINGING)], EXERCISE.reference,
                         Limits(call_seconds=1.5)) as student:
        (outcome,) = student.run_calls([call])
    assert outcome.status == "crashed"
    assert "1.5" in outcome.error  # "took longer than 1.5 s"


def test_a_submission_has_one_wall_clock_limit_for_all_its_calls():
    slow = "import time\ndef dot_product(u, v):\n    time.sleep(0.4)\n    return 0.0\n"
    calls = [PlannedCall("dot_product", (np.ones(2), np.ones(2))) for _ in range(30)]
    with IsolatedStudent([("a", slow)], EXERCISE.reference,
                         Limits(call_seconds=5, submission_seconds=2)) as student:
        outcomes = student.run_calls(calls)
    statuses = [o.status for o in outcomes]
    first_crash = statuses.index("crashed")
    assert 0 < first_crash < 30 and set(statuses[first_crash:]) == {"crashed"}
    assert "整份作业可运行的 2 秒" in outcomes[first_crash].error
    assert len(student.crashes) == 1  # no fresh child is started once the time is up


QUICK_THEN_STUCK = (
    "import os, time\n"
    "def dot_product(u, v):\n"
    "    return float(np.sum(u * v))\n"
    "def softmax(x, axis=-1):\n"
    "    if x.shape == (7,):  # the call to hang or die on\n"
    "        {stuck}\n"
    "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
    "    return e / e.sum(axis=axis, keepdims=True)\n")


def _calls_around_a_stuck_one():
    """Quick calls of dot_product, then softmax twice, the second hanging or dying, then
    more: the child still holds softmax's first answer back (it sends a function's run of
    answers together), so the stuck call is not the one awaited."""
    quick = [PlannedCall("dot_product", (np.ones(2), np.full(2, float(n)))) for n in range(3)]
    before = [PlannedCall("softmax", (np.arange(3.0),))]
    after = [PlannedCall("softmax", (np.arange(4.0),)),
             PlannedCall("dot_product", (np.ones(2), np.ones(2)))]
    return quick + before + [PlannedCall("softmax", (np.zeros(7),))] + after


@pytest.mark.parametrize("stuck, said", [("time.sleep(60)", "1.5"), ("os._exit(3)", "3")])
def test_the_call_that_hangs_or_dies_is_blamed_not_the_one_awaited(stuck, said):
    calls = _calls_around_a_stuck_one()
    cells = [("a", QUICK_THEN_STUCK.replace("{stuck}", stuck))]
    with IsolatedStudent(cells, EXERCISE.reference, Limits(call_seconds=1.5)) as student:
        outcomes = student.run_calls(calls)
    statuses = [outcome.status for outcome in outcomes]
    # The answers held back when the child was lost were asked again, of a fresh child.
    assert statuses == ["returned"] * 4 + ["crashed"] * 2 + ["returned"], statuses
    assert [o.value for o in outcomes[:3]] == [0.0, 2.0, 4.0]
    assert said in outcomes[4].error and "softmax" in outcomes[4].error
    assert outcomes[6].value == 2.0
    assert len(student.crashes) == 1


def test_a_batch_every_submission_gets_is_decoded_once_and_later_children_get_its_key(
        monkeypatch):
    sent = []  # (child, bytes) of every batch request: the messages that carry files
    send = ChildProcess.send_bytes

    def counting(child, data, deadline=None, fds=()):
        if fds:
            sent.append((child, len(data)))
        return send(child, data, deadline, fds)

    monkeypatch.setattr(ChildProcess, "send_bytes", counting)
    calls = _calls_around_a_stuck_one()
    shared = EncodedBatch(calls, EXERCISE.reference, shared=True)
    cells = [("a", QUICK_THEN_STUCK.replace("{stuck}", "os._exit(3)"))]
    # Sent whole twice (a plan of one notebook's own is never preloaded), then decoded by
    # the zygote; the spares forked before that still get it whole.
    for _ in range(3):
        sent.clear()
        with IsolatedStudent(cells, EXERCISE.reference, Limits(call_seconds=5)) as student:
            outcomes = student.run_calls(calls, shared)
        # The same answers, the crash blamed as before, and what the crash left unanswered
        # asked again of a fresh child: by the key and the calls' places, in a few bytes.
        assert [o.status for o in outcomes] == ["returned"] * 4 + ["crashed"] * 2 + ["returned"]
        assert [o.value for o in outcomes[:3]] == [0.0, 2.0, 4.0] and outcomes[6].value == 2.0
        assert len({child for child, _ in sent}) == 2
    assert [size < 200 for _, size in sent] == [True, True], sent
    assert len(shared.whole_message()) > 2000


def test_a_batch_the_zygote_could_not_decode_is_not_sent_to_it_again():
    zygote = Zygote.shared(EXERCISE.student_imports)
    zygote.preload("not-a-batch", b"\0" * 7)  # shorter than a frame's length
    assert "not-a-batch" in zygote.refused and "not-a-batch" not in zygote.preloaded
    calls = [PlannedCall("dot_product", (np.ones(2), np.ones(2)))]
    with IsolatedStudent([("a", QUICK_THEN_STUCK)], EXERCISE.reference) as student:
        assert student.run_calls(calls)[0].value == 2.0  # and it forks children still
    assert Zygote.shared(EXERCISE.student_imports) is zygote


def test_a_zygote_gone_before_a_preload_costs_the_grading_nothing():
    zygote = Zygote.shared(EXERCISE.student_imports)
    zygote.process.kill()
    zygote.process.wait()
    zygote.preload("any", b"\0" * 16)  # no error: the batch goes whole to its children
    assert "any" in zygote.refused
    calls = [PlannedCall("dot_product", (np.ones(2), np.ones(2)))]
    with IsolatedStudent([("a", QUICK_THEN_STUCK)], EXERCISE.reference) as student:
        assert student.run_calls(calls)[0].value == 2.0  # from a zygote started afresh
    assert Zygote.shared(EXERCISE.student_imports) is not zygote


def test_a_false_word_on_its_progress_blames_only_the_call_awaited():
    calls = _calls_around_a_stuck_one()
    liar = QUICK_THEN_STUCK.replace("{stuck}", (
        "import gc, mmap, struct\n"
        "        for held in [o for o in gc.get_objects() if type(o) is mmap.mmap]:\n"
        "            if len(held) == 8:\n"
        "                struct.pack_into('<q', held, 0, 10 ** 9)  # no call of the batch\n"
        "        os._exit(3)"))
    with IsolatedStudent([("a", liar)], EXERCISE.reference, Limits(call_seconds=1.5)) as student:
        outcomes = student.run_calls(calls)
    # Out of range, the claim counts for nothing: the first call not answered is blamed,
    # softmax's first, held back when its child died (only one function's calls are).
    statuses = [outcome.status for outcome in outcomes]
    assert statuses == ["returned"] * 3 + ["crashed"] * 3 + ["returned"], statuses
    assert "softmax" in outcomes[3].error


def test_an_answer_refused_for_its_size_costs_its_own_call_and_no_other():
    big = ("def dot_product(u, v):\n"
           "    return np.zeros(300_000)  # more than the grader takes for a number\n"
           "def softmax(x, axis=-1):\n"
           "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
           "    return e / e.sum(axis=axis, keepdims=True)\n")
    calls = ([PlannedCall("softmax", (np.arange(3.0),))]
             + [PlannedCall("dot_product", (np.ones(2), np.ones(2)), reply_bytes=8)]
             + [PlannedCall("softmax", (np.arange(float(n)),)) for n in range(2, 6)])
    with IsolatedStudent([("a", big)], EXERCISE.reference, Limits(call_seconds=5)) as student:
        outcomes = student.run_calls(calls)
    assert [o.status for o in outcomes] == ["returned", "crashed"] + ["returned"] * 4
    assert "dot_product" in outcomes[1].error
