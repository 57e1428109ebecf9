"""autograder/sandbox/stand_ins.py: while one function is graded, the stand-ins of the
others answer only the calls the reference makes, from sealed answers; any other call runs
the student's own function."""

import numpy as np
import pytest

import solutions
from autograder.sandbox.stand_ins import recorded_answer
from autograder.sandbox.student import parameters_of
from tests.conftest import grade_answers
from tests.grader.test_grading import FULL, parts


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


# ------------------------------------------------ through a whole grading

INLINED_ATTENTION = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "    scores = attention_scores(Q, K)\n"
    "    if mask is None:\n"
    "        weights = softmax(scores, axis=-1)\n"
    "    else:\n"
    "        allowed = np.asarray(mask, dtype=bool)[..., None, :, :]\n"
    "        scores = np.where(allowed, scores, -1e9)\n"
    "        scores = np.where(np.any(allowed, axis=-1, keepdims=True), scores, 0.0)\n"
    "        weights = np.where(allowed, softmax(scores, axis=-1), 0.0)\n"
    "    return output_projection(concat_heads(weights @ V), W_o), weights\n")


def test_a_broken_softmax_costs_nothing_where_attention_is_done_inline(reference_answers):
    # The reference's multi_head_attention reaches softmax through attention; a student's
    # that does attention's work itself meets the same recorded softmax call.
    answers = dict(reference_answers, answer_multi_head_attention=INLINED_ATTENTION,
                   answer_softmax="def softmax(x, axis=-1):\n    return np.exp(x) / 3\n")
    result = grade_answers(answers)
    assert parts(result)["softmax"] == 0
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"]


LOOPING_OVER_HEADS = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    flat = X.reshape(-1, *X.shape[-2:])\n"
    "    T = X.shape[-2]\n"
    "    masks = None if mask is None else np.broadcast_to(mask, (len(flat), T, T))\n"
    "    outputs, weights = [], []\n"
    "    for b, x in enumerate(flat):\n"
    "        Q, K, V = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "        heads = [attention(Q[h], K[h], V[h], None if masks is None else masks[b])\n"
    "                 for h in range(num_heads)]\n"
    "        joined = concat_heads(np.stack([o for o, _ in heads]))\n"
    "        outputs.append(output_projection(joined, W_o))\n"
    "        weights.append(np.stack([w for _, w in heads]))\n"
    "    return (np.stack(outputs).reshape(X.shape),\n"
    "            np.stack(weights).reshape(X.shape[:-2] + (num_heads, T, T)))\n")


def test_a_loop_over_batch_items_and_heads_keeps_its_points(reference_answers):
    # Each slice's calls are not the reference's, so they run the student's own pieces,
    # all through stand-ins that ask the grader: far more messages than the reference's.
    answers = dict(reference_answers, answer_multi_head_attention=LOOPING_OVER_HEADS)
    result = grade_answers(answers)
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"], [
        t["output"] for t in result["tests"] if t["name"].startswith("multi_head")]
    assert not result["extra_data"]["crashes"]


def _count_stand_in_questions(monkeypatch):
    """Every question the child's stand-ins asked: (function, whether it was answered)."""
    from autograder.sandbox import student

    asked, original = [], student.recorded_answer

    def counting(name, *rest):
        found, value = original(name, *rest)
        asked.append((name, found))
        return found, value

    monkeypatch.setattr(student, "recorded_answer", counting)
    return asked


def test_stand_ins_answer_the_calls_the_reference_makes_from_sealed_answers(
        reference_answers, monkeypatch):
    asked = _count_stand_in_questions(monkeypatch)
    assert grade_answers(reference_answers, seed=3)["score"] == 100
    assert asked == []  # every stand-in call was the reference's own, to the last bit


def test_a_minus_1e30_mask_still_matches_the_references_minus_inf(reference_answers,
                                                                 monkeypatch):
    asked = _count_stand_in_questions(monkeypatch)
    source = reference_answers["answer_attention"]
    assert "-np.inf" in source
    answers = dict(reference_answers, answer_attention=source.replace("-np.inf", "-1e30"))
    result = grade_answers(answers, seed=3)
    assert parts(result)["attention"] == FULL["attention"]
    assert ("softmax", True) in asked and ("softmax", False) not in asked


def test_a_call_the_reference_never_makes_runs_the_students_own_function(reference_answers,
                                                                        monkeypatch):
    # softmax through the attention stand-in: Q = x, K = I gives weights softmax(x / √d).
    through_attention = (
        "def softmax(x, axis=-1):\n"
        "    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)\n"
        "    d = x.shape[-1]\n"
        "    eye = np.broadcast_to(np.eye(d), x.shape[:-1] + (d, d))\n"
        "    _, weights = attention(x[..., None, :] * np.sqrt(d), eye, eye)\n"
        "    return np.moveaxis(weights[..., 0, :], -1, axis)\n")
    asked = _count_stand_in_questions(monkeypatch)
    result = grade_answers(dict(reference_answers, answer_softmax=through_attention), seed=3)
    # While softmax is graded, nothing is a stand-in (the reference calls no other
    # function), so attention is the student's own, which calls this softmax again.
    assert parts(result)["softmax"] == 0
    assert parts(result)["attention"] == FULL["attention"]  # there softmax is a stand-in
    # and answers from its sealed table: this softmax's detour asked the grader nothing.
    assert asked == []
