"""mhakit/sandbox/stand_ins.py: while one function is graded, the stand-ins of the
others answer only the calls the reference makes, or calls that mean them or a slice of
them, from what was recorded; any other call runs the student's own function."""

import numpy as np
import pytest

from mhakit.exercises.mha import reference
from mhakit.sandbox import stand_ins
from mhakit.sandbox.stand_ins import recorded_answer
from mhakit.sandbox.student import parameters_of
from tests.conftest import grade_answers
from tests.grader.test_grading import FULL, parts
from tests.mha_exercise import EXERCISE


SOFTMAX = parameters_of(reference.softmax)


ATTENTION = parameters_of(reference.attention)


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
    answers = [("attention", (Q, Q, Q, mask[None, None]), {}, reference.attention(Q, Q, Q, mask))]
    meaning = EXERCISE.function("attention")
    assert recorded_answer("attention", [Q, Q, Q, mask], {}, answers, ATTENTION, meaning)[0]
    assert not recorded_answer("attention", [Q, Q, Q, mask.T], {}, answers, ATTENTION,
                               meaning)[0]
    # Without the exercise's word that it broadcasts, a mask matches only bit for bit.
    assert not recorded_answer("attention", [Q, Q, Q, mask], {}, answers, ATTENTION)[0]


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


# ------------------------------------------------ by meaning: axes, masks, slices

SPLIT_HEADS = parameters_of(reference.split_heads)
SCORES = parameters_of(reference.attention_scores)
RNG = np.random.default_rng(23)
B, H, T, D = 2, 3, 4, 5
Q, K, V = (RNG.standard_normal((B, H, T, D)) for _ in range(3))
MASK = RNG.random((B, 1, T, T)) < 0.6  # as multi_head_attention passes it: no head axis
# Not what the reference would answer: whatever the grader answers, it cut from what it
# recorded, and it computes nothing on the arguments it is asked about.
RECORDED = (RNG.standard_normal((B, H, T, D)), RNG.standard_normal((B, H, T, T)))
X = RNG.standard_normal((B, H, T, T))
SOFTMAXED = RNG.standard_normal((B, H, T, T))


def _ask(name, *args, answers=None, **kwargs):
    params = {"attention": ATTENTION, "softmax": SOFTMAX, "split_heads": SPLIT_HEADS,
              "attention_scores": SCORES}[name]
    answers = answers or [("attention", (Q, K, V, MASK), {}, RECORDED),
                          ("softmax", (X,), {"axis": -1}, SOFTMAXED)]
    return recorded_answer(name, list(args), kwargs, answers, params, EXERCISE.function(name))


@pytest.mark.parametrize("axis", [3, -1, X.ndim - 1, np.int64(3)])
def test_an_axis_matches_however_it_is_counted(axis):
    assert _ask("softmax", X, axis=axis) == (True, SOFTMAXED)
    assert _ask("softmax", X, axis) == (True, SOFTMAXED)
    assert _ask("softmax", x=X, axis=axis) == (True, SOFTMAXED)


@pytest.mark.parametrize("axis", [0, -2, 2, 4, -5, 3.0, True, None, (3,)])
def test_another_axis_or_no_axis_is_not_answered(axis):
    assert _ask("softmax", X, axis=axis) == (False, None)


def test_a_mask_matches_when_it_broadcasts_to_the_same_array():
    heads = np.broadcast_to(MASK, (B, H, T, T))
    for mask in (MASK, heads, heads.copy()):
        assert _ask("attention", Q, K, V, mask) == (True, RECORDED)
    assert _ask("attention", Q=Q, V=V, K=K, mask=MASK) == (True, RECORDED)
    assert not _ask("attention", Q, K, V, heads[:, ::-1].copy() ^ np.eye(T, dtype=bool))[0]


def _same(answer, want):
    return all(a.shape == w.shape and np.array_equal(a, w) for a, w in zip(answer, want))


@pytest.mark.parametrize("index,mask", [
    ((slice(None), 1), MASK[:, 0]),                  # one head, its axis taken away
    ((slice(None), slice(1, 2)), MASK),              # one head, its axis kept
    ((1,), MASK[1]),                                 # one batch item
    ((1, 2), MASK[1, 0]),                            # one item's one head
    ((slice(1, 2), 0), MASK[1:2, 0]),                # both, one axis kept
    ((slice(1, 2), slice(0, 1)), MASK[1:2]),
], ids=["head", "head-kept", "item", "item-and-head", "item-kept-and-head", "both-kept"])
def test_a_slice_of_a_recorded_call_gets_the_same_slice_of_the_recorded_answer(index, mask):
    found, answer = _ask("attention", Q[index], K[index], V[index], mask)
    assert found and _same(answer, [a[index] for a in RECORDED])
    found, answer = _ask("attention", Q[index], K[index], V[index],
                         np.broadcast_to(mask, RECORDED[1][index].shape))
    assert found and _same(answer, [a[index] for a in RECORDED])


def test_an_argument_that_broadcasts_along_a_loop_axis_keeps_its_one_entry():
    one_K = K[:1]  # (1, h, T, d): the same keys for every batch item
    answers = [("attention_scores", (Q, one_K), {}, SOFTMAXED)]
    found, answer = _ask("attention_scores", Q[1], one_K[0], answers=answers)
    assert found and np.array_equal(answer, SOFTMAXED[1])
    found, answer = _ask("attention_scores", Q[1, 2], one_K[0, 2], answers=answers)
    assert found and np.array_equal(answer, SOFTMAXED[1, 2])
    assert not _ask("attention_scores", Q[1], one_K, answers=answers)[0]  # (1, h, T, T)


def test_a_slice_of_softmax_moves_its_axis_with_it():
    found, answer = _ask("softmax", X[1], axis=-1)
    assert found and np.array_equal(answer, SOFTMAXED[1])
    assert _ask("softmax", X[1], axis=2)[0] and _ask("softmax", X[1, 0], 1)[0]
    found, answer = _ask("softmax", X[:, :, 0], axis=-1)  # one query's row in every head
    assert found and np.array_equal(answer, SOFTMAXED[:, :, 0])
    assert not _ask("softmax", X[1], axis=1)[0]
    assert not _ask("softmax", X[..., 0], axis=-1)[0]  # cut across the axis it normalises


def test_split_heads_per_batch_item_but_only_with_the_same_number_of_heads():
    Xp = RNG.standard_normal((B, T, H * D))
    answers = [("split_heads", (Xp, H), {}, reference.split_heads(Xp, H))]
    found, answer = _ask("split_heads", Xp[1], H, answers=answers)
    assert found and np.array_equal(answer, reference.split_heads(Xp, H)[1])
    assert _ask("split_heads", num_heads=np.int64(H), X=Xp[1], answers=answers)[0]
    assert not _ask("split_heads", Xp[1], 1, answers=answers)[0]
    assert not _ask("split_heads", Xp[1], float(H), answers=answers)[0]
    assert not _ask("split_heads", Xp[1, :, :D], H, answers=answers)[0]


@pytest.mark.parametrize("args", [
    (Q[:, 0], K[:, 1], V[:, 1], MASK[:, 0]),         # queries of head 0, keys of head 1
    (Q[:, 0], K[:, 0], V[:, 1], MASK[:, 0]),         # values of head 1
    (Q[0, 1], K[1, 1], V[1, 1], MASK[1, 0]),         # item 0's queries, item 1's keys
    (Q[:, 0] * (1 + 1e-3), K[:, 0], V[:, 0], MASK[:, 0]),  # a perturbed input
    (Q[:, 0], K[:, 0], V[:, 0], ~MASK[:, 0]),        # another mask
    (Q[:, 0], K[:, 0], V[:, 0], MASK[::-1, 0]),      # the other item's mask
    (Q[:, 0], K[:, 0], V[:, 0], None),               # no mask at all
    (Q[:, 0], K[:, 0], V[:, 0], MASK[:, 0].astype(np.int8)),
    (Q[:, 0:2], K[:, 0:2], V[:, 0:2], MASK),         # two heads are no item
    (Q[:, ::2], K[:, ::2], V[:, ::2], MASK),
    (Q[..., :2, :], K, V, MASK[..., :2, :]),         # fewer queries: a cut in an item
    (Q[None], K[None], V[None], MASK[None]),         # an axis more
    (Q[:, 0], K[:, 0], V[:, 0], MASK),               # a mask that grows the loop shape
    (Q[1, 0], K[1, 0], V[1, 0], MASK[1]),            # (1, T, T) for one head's (T, T)
    (Q[:, 0].astype(complex), K[:, 0], V[:, 0], MASK[:, 0]),
], ids=["mixed-heads", "mixed-values", "mixed-items", "perturbed", "other-mask",
        "other-items-mask", "no-mask", "int-mask", "two-heads", "strided-heads",
        "fewer-queries", "axis-more", "mask-grows-loop", "mask-grows-item", "complex"])
def test_a_near_miss_is_not_answered(args):
    assert _ask("attention", *args) == (False, None)


def test_a_mask_that_would_grow_the_call_is_not_the_recorded_one():
    mask = np.tril(np.ones((T, T), bool))
    answers = [("attention", (Q[0], K[0], V[0], mask[None]), {},
                reference.attention(Q[0], K[0], V[0], mask[None]))]
    assert _ask("attention", Q[0], K[0], V[0], mask, answers=answers)[0]
    # Equal value by value once broadcast, but the call would answer (B, h, T, d_v).
    grown = np.broadcast_to(mask, (B, 1, T, T))
    assert not _ask("attention", Q[0], K[0], V[0], grown, answers=answers)[0]


def test_a_call_with_more_loop_axes_than_the_bound_is_answered_only_whole():
    x = RNG.standard_normal((2,) * (stand_ins.MAX_LOOP_AXES + 1) + (3,))
    answers = [("softmax", (x,), {"axis": -1}, x)]
    assert _ask("softmax", x, answers=answers)[0]
    assert not _ask("softmax", x[0], answers=answers)[0]


def test_the_search_compares_no_more_bytes_than_the_recorded_call_holds(monkeypatch):
    compared, original = [], stand_ins._close_arrays

    def counting(got, want):
        compared.append(got.nbytes)
        return original(got, want)

    monkeypatch.setattr(stand_ins, "_close_arrays", counting)
    # The worst case: shapes that fit every item of both loop axes, and no item matches.
    assert not _ask("attention", Q[1, 2] + 1, K[1, 2], V[1, 2], MASK[1, 0])[0]
    assert 0 < sum(compared) <= Q.nbytes


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


def test_a_loop_over_batch_items_and_heads_keeps_its_points(reference_answers, monkeypatch):
    # Each piece's call is a slice of the reference's: none is in the sealed table, so
    # each asks the grader (far more messages than the reference's), which answers every
    # one with the slice of its recorded answer.
    asked = _count_stand_in_questions(monkeypatch)
    answers = dict(reference_answers, answer_multi_head_attention=LOOPING_OVER_HEADS)
    result = grade_answers(answers)
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"], [
        t.output for t in result.tests if t.name.startswith("multi_head")]
    assert not result.extra["crashes"]
    assert {name for name, _ in asked} == {"split_heads", "attention", "concat_heads",
                                           "output_projection"}
    assert all(found for _, found in asked)


def _count_stand_in_questions(monkeypatch):
    """Every question the child's stand-ins asked: (function, whether it was answered)."""
    from mhakit.sandbox import student

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
    assert grade_answers(reference_answers, seed=3).score == 100
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


# --- softmax means the same on a shifted row and on reordered axes ----------------------

def _softmax_of(scores, **kwargs):
    answer = reference.softmax(scores)
    answers = [("softmax", (scores,), {"axis": -1}, answer)]
    return answer, lambda *args, **more: _ask("softmax", *args, answers=answers, **more)


def test_a_row_shifted_by_one_number_means_the_same_to_softmax():
    # The reference scores a query that may see no key 0 everywhere; a student's
    # attention that fills blocked keys with -1e9 asks about a row of -1e9 instead.
    scores = np.array([[[0.5, -np.inf, 1.0], [0.0, 0.0, 0.0]], [[2.0, 1.0, -np.inf],
                                                                 [-np.inf, 0.3, 0.1]]])
    answer, ask = _softmax_of(scores)
    student = np.where(np.isinf(scores), -1e9, scores)
    student[0, 1] = -1e9  # the row that sees nothing
    assert ask(student, axis=-1) == (True, answer)
    assert ask(scores + 7.0, axis=-1)[0]  # every row its own shift: each by 7
    one_each = scores + np.array([[[3.0], [-2.0]], [[0.5], [100.0]]])
    assert ask(one_each, axis=-1)[0]


@pytest.mark.parametrize("change", ["one-entry", "other-axis", "lost-precision", "all-inf"])
def test_what_a_shift_cannot_explain_is_not_answered(change):
    scores = np.random.default_rng(4).standard_normal((2, 3, 4))
    answer, ask = _softmax_of(scores)
    student = {"one-entry": scores + np.eye(4)[0] * 1e-3,
               # one number per column, not per row: softmax over rows would not see it
               "other-axis": scores + np.arange(4.0),
               # the scores pushed to 1e9 in float32 keep nothing of themselves
               "lost-precision": (scores + 1e9).astype(np.float32).astype(np.float64),
               # a row of nothing but -inf: the reference never asks, its answer is NaN
               "all-inf": np.where(np.arange(4) < 5, -np.inf, scores)}[change]
    assert ask(student, axis=-1) == (False, None)


def test_softmax_over_reordered_axes_gets_the_recorded_answer_reordered():
    scores = np.random.default_rng(5).standard_normal((2, 3, 4))
    answer, ask = _softmax_of(scores)
    found, value = ask(np.swapaxes(scores, -1, -2), axis=-2)
    assert found and np.array_equal(value, np.swapaxes(answer, -1, -2))
    found, value = ask(np.transpose(scores, (2, 0, 1)), axis=0)
    assert found and np.array_equal(value, np.transpose(answer, (2, 0, 1)))
    # The axes reordered but the axis left behind: softmax over another axis.
    assert ask(np.swapaxes(scores, -1, -2), axis=-1) == (False, None)
    assert ask(np.swapaxes(scores, 0, 1), axis=-1)[0]  # batch axes may move freely
