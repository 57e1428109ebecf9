"""autograder/sandbox/student.py: the grader's handle on the child. Every message of a call
counts against the call's one deadline, and a submission has one wall clock in all."""

import numpy as np

from autograder.sandbox import IsolatedStudent, Limits
from autograder.sandbox.student import PlannedCall
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
