"""What may cross from the child to the grader: JSON and arrays of plain numbers only."""

import json

import numpy as np
import pytest

from autograder.sandbox.child.runtime import pack, unpack_arrays


def test_plain_arrays_cross_intact():
    arrays = [np.arange(6.0).reshape(2, 3), np.array([True, False]),
              np.ones((0, 4), np.int64), np.array(3 + 4j), np.arange(5, dtype=np.float32)[::2]]
    message = pack({"op": "x"}, arrays)
    header_size = int.from_bytes(message[:8], "big")
    header = json.loads(message[8:8 + header_size])
    data = message[8 + header_size + 8:]
    back = unpack_arrays(header["arrays"], data)
    for original, copy in zip(arrays, back):
        assert copy.dtype == original.dtype and np.array_equal(copy, original)
        assert copy.flags.writeable


@pytest.mark.parametrize("layout,data", [
    ([["|O", [1]]], b"\0" * 8),              # Python objects
    ([["|V8", [1]]], b"\0" * 8),             # structured or raw bytes
    ([["(2,)f8", [1]]], b"\0" * 16),         # a sub-array dtype
    ([["<f8", [2]]], b"\0" * 8),             # too few bytes
    ([["<f8", [1]]], b"\0" * 9),             # bytes left over
    ([["<f8", [-1]]], b""),                  # a negative length
    ([["<f8", "3"]], b"\0" * 24),            # a shape that is not a list
    ([["<f8"]], b""),                        # half an entry
    ("not a list", b""),
])
def test_anything_else_is_refused(layout, data):
    with pytest.raises((ValueError, TypeError)):
        unpack_arrays(layout, data)


# ------------------------------------------------ stand-ins answer only recorded calls

from autograder.sandbox.stand_ins import recorded_answer  # noqa: E402
from autograder.sandbox.student import parameters_of  # noqa: E402
import solutions  # noqa: E402

SOFTMAX = parameters_of(solutions.softmax)
ATTENTION = parameters_of(solutions.attention)


def _recorded(name, *args, **kwargs):
    return [(name, args, kwargs, f"the {name} answer")]


def test_a_recorded_call_is_answered_within_tolerance_however_its_arguments_are_passed():
    scores = np.random.default_rng(0).standard_normal((2, 3, 4))
    answers = _recorded("softmax", scores, axis=-1)
    nudged = scores * (1 + 1e-9)  # another order of sums changes the last bits
    for args, kwargs in (((nudged,), {}), ((nudged, -1), {}), ((), {"x": nudged})):
        assert recorded_answer("softmax", list(args), kwargs, answers, SOFTMAX) == \
            (True, "the softmax answer")
    as_float32 = scores.astype(np.float32)  # float32 of float64 values: off by ~1e-8
    assert recorded_answer("softmax", [as_float32], {}, answers, SOFTMAX)[0]


def test_a_very_negative_score_matches_minus_inf_and_a_mask_that_broadcasts_alike():
    scores = np.array([[0.5, -np.inf, 1.0], [-np.inf, 2.0, 0.0]])
    answers = _recorded("softmax", scores, axis=-1)
    low = np.where(np.isinf(scores), -1e9, scores)
    assert recorded_answer("softmax", [low], {}, answers, SOFTMAX)[0]
    assert not recorded_answer("softmax", [np.where(np.isinf(scores), -1.0, scores)], {},
                               answers, SOFTMAX)[0]
    Q = np.ones((2, 1, 3, 4))
    mask = np.tril(np.ones((3, 3), bool))
    answers = _recorded("attention", Q, Q, Q, mask[None, None])
    assert recorded_answer("attention", [Q, Q, Q, mask], {}, answers, ATTENTION)[0]
    assert not recorded_answer("attention", [Q, Q, Q, mask.T], {}, answers, ATTENTION)[0]


@pytest.mark.parametrize("args,kwargs", [
    ([np.zeros((2, 3, 4))], {}),                     # other values
    ([np.ones((2, 3, 4))[..., :3]], {}),             # another shape
    ([np.ones((2, 3, 4))], {"axis": 0}),             # another axis
    ([np.ones((2, 3, 4))], {"axis": True}),          # a bool is not the axis -1
    ([np.ones((2, 3, 4)), -1, 5], {}),               # too many arguments
    ([np.ones((2, 3, 4))], {"dim": -1}),             # an unknown keyword
    ([np.ones((2, 3, 4)).astype(complex)], {}),      # complex numbers
    ("not a list", {}),
])
def test_any_other_call_is_not_answered(args, kwargs):
    answers = _recorded("softmax", np.ones((2, 3, 4)), axis=-1)
    assert recorded_answer("softmax", args, kwargs, answers, SOFTMAX) == (False, None)
    assert recorded_answer("attention", args, kwargs, answers, ATTENTION) == (False, None)


# ------------------------------------------------ inputs in memory files

import mmap  # noqa: E402
import os  # noqa: E402

from autograder.sandbox.shared_inputs import SEALED, WRITABLE, InputLayout  # noqa: E402
from autograder.sandbox.student import PlannedCall  # noqa: E402


def test_read_only_inputs_cannot_be_written_or_mapped_for_writing():
    layout = InputLayout([PlannedCall("softmax", (np.arange(6.0),), readonly=True)])
    inputs = layout.open()
    try:
        fd = inputs.fd(SEALED)
        with pytest.raises(PermissionError):
            mmap.mmap(fd, 48, access=mmap.ACCESS_WRITE)
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"\0" * 8, 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        view = np.frombuffer(mmap.mmap(fd, 48, access=mmap.ACCESS_READ), np.float64)
        with pytest.raises(ValueError):
            view.flags.writeable = True
        assert not inputs.changed(0)
    finally:
        inputs.close()


def test_the_grader_sees_a_write_into_the_writable_inputs_itself():
    calls = [PlannedCall("softmax", (np.arange(6.0),)), PlannedCall("softmax", (np.ones(3),))]
    inputs = InputLayout(calls).open()
    try:
        fd = inputs.fd(WRITABLE)
        assert not inputs.changed(0) and not inputs.changed(1)
        shared = mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_WRITE)
        np.frombuffer(shared, np.float64, 6)[2] = -1.0  # the first call's array, in place
        assert inputs.changed(0) and not inputs.changed(1)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 8)  # nor can the file shrink under the grader
    finally:
        inputs.close()


# ------------------------------------------------ time: per call, and per submission

from tests.mha_exercise import EXERCISE  # noqa: E402
from autograder.sandbox import IsolatedStudent, Limits  # noqa: E402

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


# ------------------------------------------------ the grader bounds its own memory

import json  # noqa: E402,F811
import subprocess  # noqa: E402
import sys  # noqa: E402

PEAK_AFTER_GRADING = (
    "import json, resource, sys\n"
    "from autograder.grader.grading import grade_notebook\n"
    "result = grade_notebook(sys.argv[1], seed=5)\n"
    "peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(json.dumps([result['extra_data']['parts'], peak_kb]))\n")


def _grade_and_measure(notebook_bytes, tmp_path, name):
    path = tmp_path / f"{name}.ipynb"
    path.write_bytes(notebook_bytes)
    done = subprocess.run([sys.executable, "-c", PEAK_AFTER_GRADING, str(path)],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, MHAKIT_CALL_SECONDS="5"))
    assert done.returncode == 0, done.stderr[-2000:]
    parts, peak_kb = json.loads(done.stdout.splitlines()[-1])
    return parts, peak_kb / 1024


def test_frames_larger_than_any_answer_cost_the_grader_no_memory(tmp_path):
    from tests.attacks.corpus import ATTACKS

    attack = next(a for a in ATTACKS if a.name == "frames-larger-than-any-answer")
    honest = next(a for a in ATTACKS if a.name == "environment-reveals-nothing")
    parts, attacked_mb = _grade_and_measure(attack.make(), tmp_path, "attack")
    assert parts["attention"] == parts["output_projection"] == 0
    _, honest_mb = _grade_and_measure(honest.make(), tmp_path, "honest")
    # The forged frame announces 128 MB, the stand-in request broadcasts to 72 million
    # scores: the grader reads neither, so its peak stays that of an honest notebook.
    assert attacked_mb < honest_mb + 64, (attacked_mb, honest_mb)
