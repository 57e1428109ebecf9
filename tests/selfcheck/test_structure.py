"""mhakit/selfcheck/structure.py: what the structure of a wrong result says, on inputs
made here, with the exercise's STRUCTURE table and without one."""

import math
from pathlib import Path

import numpy as np
import pytest

from mhakit.exercise import load
from mhakit.selfcheck.failed_call import RAISED, Watched
from mhakit.selfcheck.framework import InProcessStudent, StudentRaised
from mhakit.selfcheck.structure import diagnose, structures_of
from mhakit.exercises.mha import reference as ref
from tests.mha_exercise import PUBLIC

STRUCTURE = structures_of(PUBLIC)
RNG = np.random.default_rng(5)


def named(function, wrong, *args, again=True, **kwargs):
    """The diagnosis of ``wrong`` (a function) against the reference on these inputs."""
    expected = getattr(ref, function)(*args, **kwargs)
    try:
        with np.errstate(all="ignore"):
            got = wrong(*args, **kwargs)
    except Exception:  # noqa: BLE001 - a wrong function may raise
        got = RAISED

    def call_again(args, kwargs):
        with np.errstate(all="ignore"):
            return wrong(*args, **kwargs), None
    with np.errstate(all="ignore"):
        return diagnose(STRUCTURE[function], args, kwargs, got, expected,
                        call_again=call_again if again else None)


def scores_by(divisor):
    return lambda Q, K: Q @ np.swapaxes(K, -1, -2) / divisor(Q, K)


Q, K = RNG.standard_normal((2, 3, 6)), RNG.standard_normal((2, 5, 6))  # d_k 6, T_k 5, T_q 3


# ------------------------------------------------------------------ constant factor

def test_a_factor_is_named_by_the_size_it_equals():
    found = named("attention_scores", scores_by(lambda Q, K: math.sqrt(K.shape[-2])), Q, K)
    assert found.id == "structure/constant-factor"
    assert "√T_k" in found.en and "√d_k" in found.en and "√T_k" in found.zh


def test_dividing_by_the_root_twice_is_dividing_by_d_k_once():
    twice = named("attention_scores", scores_by(lambda Q, K: Q.shape[-1]), Q, K)
    again = named("attention_scores",
                  lambda Q, K: ref.attention_scores(Q, K) / math.sqrt(Q.shape[-1]), Q, K)
    assert twice == again and "ambiguous" not in twice.en and "分不出" not in twice.zh


def test_sizes_equal_on_the_inputs_are_both_named_and_said_to_be_equal():
    Q4, K4 = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))  # √d_k = T_k = 2
    found = named("attention_scores", lambda Q, K: ref.attention_scores(Q, K) * 2, Q4, K4)
    assert "√d_k" in found.en and "T_k" in found.en and "cannot tell which" in found.en
    assert "分不出是哪一个" in found.zh


def test_a_factor_that_is_no_size_is_said_without_its_number():
    found = named("attention_scores", lambda Q, K: ref.attention_scores(Q, K) * 1.37, Q, K)
    assert found.id == "structure/unexplained-factor"
    assert "1.37" not in found.en + found.zh and "d_k, T_k, T_q" in found.en
    # It names no one cause: an earlier step off alike everywhere does this too.
    assert "scaling step" in found.en and "earlier step" in found.en


def test_a_flipped_sign_is_a_factor_of_minus_one():
    found = named("attention_scores", lambda Q, K: -ref.attention_scores(Q, K), Q, K)
    assert "sign is flipped" in found.en and "正负号反了" in found.zh


# ------------------------------------------------------------------ values moved

X = RNG.permutation(2 * 3 * 12).reshape(2, 3, 12).astype(float)


def test_reversed_heads_are_an_axis_in_reverse_order():
    found = named("split_heads", lambda X, h: np.flip(ref.split_heads(X, h), -3), X, 3)
    assert found.id == "structure/axis-reversed" and "the h axis" in found.en
    assert "h 轴上的顺序整个反过来了" in found.zh


def test_swapped_axes_are_named_by_the_exercises_axis_names():
    found = named("split_heads", lambda X, h: np.swapaxes(ref.split_heads(X, h), -3, -2), X, 3)
    assert found.id == "structure/axes-swapped"
    assert "(B, T, h, d_k) instead of (B, h, T, d_k)" in found.en


def test_right_numbers_in_an_order_no_axis_swap_gives_are_reordered():
    X5 = RNG.permutation(2 * 5 * 12).reshape(2, 5, 12).astype(float)  # T = 5, h = 3
    found = named("split_heads", lambda X, h: X.reshape(2, h, 5, 4), X5, 3)
    assert found.id == "structure/values-reordered"


# ------------------------------------------------------------------ normalisation

x = RNG.standard_normal((2, 3, 5))


def test_softmax_along_axis_0_when_axis_minus_1_is_asked():
    found = named("softmax", lambda x, axis=-1: ref.softmax(x, axis=0), x)
    assert found.id == "structure/normalised-along-another-axis"
    assert "axis 0" in found.en and "axis 2 (that is, axis=-1)" in found.en


def test_swapped_weights_are_swapped_axes_where_the_scores_are_not_symmetric():
    S = RNG.standard_normal((2, 4, 4))
    found = named("softmax", lambda x, axis=-1: np.swapaxes(ref.softmax(x), -1, -2), S)
    assert found.id == "structure/axes-swapped"


def test_a_softmax_over_T_q_of_symmetric_scores_is_either_cause():
    # Symmetric scores: normalising over T_q gives the right weights transposed, so the
    # evidence fits swapped axes and another axis alike, and both are listed.
    A = RNG.standard_normal((2, 4, 4))
    S = A + np.swapaxes(A, -1, -2)
    found = named("softmax", lambda x, axis=-1: ref.softmax(x, axis=-2), S)
    assert found.id == "structure/one-of(axes-swapped|normalised-along-another-axis)"
    # Not symmetric: only the axis normalised along fits.
    found = named("softmax", lambda x, axis=-1: ref.softmax(x, axis=-2), A)
    assert found.id == "structure/normalised-along-another-axis"


def test_a_shift_along_one_axis_and_a_sum_along_another_is_another_axis():
    def shifted_by_row_max_summed_by_column(x, axis=-1):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-2, keepdims=True)
    found = named("softmax", shifted_by_row_max_summed_by_column, x)
    assert found.id == "structure/normalised-along-another-axis"


def test_softmax_over_the_whole_array():
    found = named("softmax", lambda x, axis=-1: np.exp(x) / np.sum(np.exp(x)), x)
    assert found.id == "structure/normalised-over-whole-array"


def test_each_row_right_up_to_its_own_factor():
    found = named("softmax", lambda x, axis=-1: np.exp(x), x)
    assert found.id == "structure/each-row-off-by-a-factor"


# ------------------------------------------------------------------ regions of the mask

Qa, Ka, Va = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 6))
MASK = RNG.random((2, 3, 5)) < 0.6
MASK[0, 1] = False  # a query that may see nothing
MASK[1, 2] = True


def nan_where_nothing_is_allowed(Q, K, V, mask=None):
    scores = np.where(mask, ref.attention_scores(Q, K), -np.inf)
    weights = ref.softmax(scores)
    return weights @ V, weights


def blocked_weights_left_in(Q, K, V, mask=None):
    output, weights = ref.attention(Q, K, V, mask)
    return output, np.where(mask, weights, 0.125)


def test_nan_only_where_the_mask_allows_nothing():
    found = named("attention", nan_where_nothing_is_allowed, Qa, Ka, Va, mask=MASK)
    assert found.id == "structure/wrong-where-mask-allows-nothing"
    assert "contains NaN" in found.en and "有 NaN" in found.zh


def test_wrong_only_at_the_blocked_entries():
    found = named("attention", blocked_weights_left_in, Qa, Ka, Va, mask=MASK)
    assert found.id == "structure/wrong-at-masked-entries"


def test_a_mask_that_allows_nothing_anywhere_is_no_region():
    """Wrong everywhere is not "wrong only there"."""
    nothing = np.zeros_like(MASK)
    assert named("attention", nan_where_nothing_is_allowed, Qa, Ka, Va, mask=nothing) is None


# ------------------------------------------------------------------ batch items

def test_raising_on_batch_axes_only():
    u, v = RNG.standard_normal((4, 5, 3)), RNG.standard_normal((4, 5, 3))
    found = named("dot_product", lambda u, v: np.dot(u, v), u, v)
    assert found.id == "structure/wrong-with-batch-axes"
    assert "(4, 5)" in found.en and "raises an exception" in found.en and "抛出了异常" in found.zh


def summed_over_the_batch(Q, K):
    """Right for one item; with a batch, every item gets the sum over the batch."""
    scores = ref.attention_scores(Q, K)
    return scores if scores.ndim == 2 else np.broadcast_to(scores.sum(axis=0), scores.shape)


def test_wrong_values_on_batch_axes_only():
    found = named("attention_scores", summed_over_the_batch, Q, K)
    assert found.id == "structure/wrong-with-batch-axes" and "gives wrong values" in found.en


def test_right_with_one_batch_axis_but_not_two():
    Q4, K4 = RNG.standard_normal((2, 2, 3, 6)), RNG.standard_normal((2, 2, 5, 6))
    found = named("attention_scores",
                  lambda Q, K: Q @ np.transpose(K, (0, 2, 1)) / math.sqrt(Q.shape[-1]), Q4, K4)
    assert found.id == "structure/wrong-with-more-batch-axes"
    assert "all 2 batch axes (2, 2)" in found.en


def test_wrong_for_a_single_item_too_is_not_a_batch_mistake():
    found = named("attention_scores", lambda Q, K: np.tanh(ref.attention_scores(Q, K)) + 1, Q, K)
    assert found is None


def test_the_student_is_called_again_three_times_at_most():
    calls = []
    Q4, K4 = RNG.standard_normal((2, 2, 3, 6)), RNG.standard_normal((2, 2, 5, 6))

    def call_again(args, kwargs):
        calls.append(args)
        return ref.attention_scores(*args) + 1.0, None  # wrong for every item
    diagnose(STRUCTURE["attention_scores"], (Q4, K4), {}, RAISED,
             ref.attention_scores(Q4, K4), call_again=call_again)
    assert 0 < len(calls) <= 3


def test_without_a_way_to_call_again_there_is_no_batch_diagnosis():
    u, v = RNG.standard_normal((4, 5, 3)), RNG.standard_normal((4, 5, 3))
    assert named("dot_product", lambda u, v: np.dot(u, v), u, v, again=False) is None


# ------------------------------------------------------------------ no table, no mistake

def test_right_results_get_no_diagnosis():
    for function, args, kwargs in [("attention_scores", (Q, K), {}), ("softmax", (x,), {}),
                                   ("split_heads", (X, 3), {}),
                                   ("attention", (Qa, Ka, Va), {"mask": MASK})]:
        assert named(function, getattr(ref, function), *args, **kwargs) is None


def test_an_exercise_without_structure_py_gets_the_classes_that_need_none():
    second = load(Path(__file__).resolve().parents[1] / "second_exercise")
    assert structures_of(second.shipped) == {}
    right = RNG.standard_normal((3, 4))
    assert diagnose(None, (right,), {}, right * 2.5, right).id == "structure/unexplained-factor"
    swapped = diagnose(None, (right,), {}, right.T, right)
    assert swapped.id == "structure/axes-swapped" and "(1, 0) instead of (0, 1)" in swapped.en


# ------------------------------------------------------------------ the call that raised

def test_the_watched_handle_offers_a_call_that_raised_and_not_a_read_only_one():
    def broken(x):
        raise ValueError("no")
    student = Watched(InProcessStudent({"broken": broken}))
    with pytest.raises(StudentRaised) as raised:
        student.call("broken", np.ones(2))
    assert student.failed_call(raised.value)[0] == "broken"
    assert student.failed_call(raised.value)[3] is RAISED
    with pytest.raises(StudentRaised) as raised:
        student.call("broken", np.ones(2), readonly=True)
    assert student.failed_call(raised.value) is None
