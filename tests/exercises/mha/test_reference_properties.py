"""The reference's contract (mhakit/exercises/mha/reference.py), checked without torch.

dtypes are kept, softmax is stable, heads are cut and glued in the documented order,
inputs are never modified, batched and unbatched calls agree.
"""

import re

import numpy as np
import pytest

from tests.mha_exercise import EXERCISE
from mhakit.exercises.mha.reference import (
    attention,
    attention_scores,
    concat_heads,
    dot_product,
    multi_head_attention,
    output_projection,
    softmax,
    split_heads,
)


def contract_calls(dtype=np.float64):
    """One call per function (two for the mask branches), all arrays in `dtype`."""
    rng = np.random.default_rng(0)
    B, T, T_k, d_model, num_heads, d_k, d_v = 2, 3, 5, 4, 2, 2, 3

    def normal(*shape):
        return rng.standard_normal(shape).astype(dtype)

    X = normal(B, T, d_model)
    W_q, W_k, W_v, W_o = (normal(d_model, d_model) for _ in range(4))
    Q, K, V = normal(B, num_heads, T, d_k), normal(B, num_heads, T_k, d_k), normal(B, num_heads, T_k, d_v)
    cross_mask = np.tril(np.ones((T, T_k), dtype=bool))
    self_mask = np.tril(np.ones((T, T), dtype=bool))
    return {
        "dot_product": (dot_product, (normal(B, d_k), normal(B, d_k))),
        "attention_scores": (attention_scores, (Q, K)),
        "softmax": (softmax, (normal(B, T, T_k),)),
        "attention": (attention, (Q, K, V)),
        "attention_masked": (attention, (Q, K, V, cross_mask)),
        "split_heads": (split_heads, (X, num_heads)),
        "concat_heads": (concat_heads, (Q,)),
        "output_projection": (output_projection, (normal(B, T, d_model), W_o)),
        "multi_head_attention": (multi_head_attention, (X, W_q, W_k, W_v, W_o, num_heads)),
        "multi_head_attention_masked": (multi_head_attention, (X, W_q, W_k, W_v, W_o, num_heads, self_mask)),
    }


CALL_NAMES = list(contract_calls())
FLOAT_CALL_NAMES = [name for name in CALL_NAMES if name != "dot_product"]


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def test_every_contract_function_is_exercised():
    exercised = {function.__name__ for function, _ in contract_calls().values()}
    assert exercised == set(EXERCISE.function_names)


# --- dtypes -----------------------------------------------------------------------


@pytest.mark.parametrize("name", FLOAT_CALL_NAMES)
def test_float32_in_gives_float32_out(name):
    # A NumPy float64 scalar (np.sqrt(d_k), say) silently promotes float32 to float64.
    function, args = contract_calls(np.float32)[name]
    for result in as_tuple(function(*args)):
        assert result.dtype == np.float32


def test_dot_product_of_int_vectors_is_an_exact_integer():
    result = dot_product(np.array([1, 2, 3]), np.array([4, 5, 6]))
    assert np.issubdtype(result.dtype, np.integer)
    assert result == 32


def test_dot_product_of_large_ints_does_not_round_through_float():
    # (2**31 + 1)**2 = 2**62 + 2**32 + 1 needs 63 bits; a float64 detour drops the + 1.
    big = np.array([2**31 + 1], dtype=np.int64)
    # int(): comparing a float64 with a Python int would round the int the same way.
    assert int(dot_product(big, big)) == 2**62 + 2**32 + 1


# --- softmax ----------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_normalizes_along_the_given_axis(axis):
    x = np.random.default_rng(1).standard_normal((3, 4, 5))
    result = softmax(x, axis=axis)
    assert result.shape == x.shape
    np.testing.assert_allclose(result.sum(axis=axis), 1.0, rtol=1e-12)
    # Summing to 1 is not enough (x / x.sum() does too): check the values as well.
    plain = np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(result, plain, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_is_stable_for_huge_logits(dtype):
    logits = np.array([1e4, -1e4, 0.0], dtype=dtype)
    # A naive np.exp(1e4) overflows to inf, and inf / inf is NaN.
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        result = softmax(logits)
    assert np.isfinite(result).all()
    np.testing.assert_array_equal(result, [1.0, 0.0, 0.0])


# --- heads ------------------------------------------------------------------------


def test_head_i_holds_columns_i_dk_to_i_plus_1_dk():
    B, T, d_model, num_heads = 2, 3, 12, 4
    d_k = d_model // num_heads
    X = np.arange(B * T * d_model).reshape(B, T, d_model)
    heads = split_heads(X, num_heads)
    assert heads.shape == (B, num_heads, T, d_k)
    for i in range(num_heads):
        np.testing.assert_array_equal(heads[:, i], X[..., i * d_k:(i + 1) * d_k])


@pytest.mark.parametrize("num_heads", [1, 2, 3, 6])
def test_concat_heads_undoes_split_heads_exactly(num_heads):
    X = np.random.default_rng(2).standard_normal((2, 5, 6))
    np.testing.assert_array_equal(concat_heads(split_heads(X, num_heads)), X)


def test_split_heads_error_names_both_numbers():
    with pytest.raises(ValueError) as error:
        split_heads(np.zeros((2, 3, 10)), 4)
    message = str(error.value)
    # \b: each number must stand alone, not hide inside a longer one such as "104".
    assert re.search(r"\b10\b", message) and re.search(r"\b4\b", message), message


# --- inputs are left alone --------------------------------------------------------


def arrays_in(args):
    return [arg for arg in args if isinstance(arg, np.ndarray)]


@pytest.mark.parametrize("name", CALL_NAMES)
def test_inputs_are_not_modified(name):
    function, args = contract_calls()[name]
    before = [array.copy() for array in arrays_in(args)]
    function(*args)
    for array, original in zip(arrays_in(args), before):
        np.testing.assert_array_equal(array, original)


@pytest.mark.parametrize("name", CALL_NAMES)
def test_read_only_inputs_work(name):
    # Graders may pass read-only views (np.broadcast_to, shared fixtures): no in-place op.
    function, args = contract_calls()[name]
    expected = as_tuple(function(*args))
    for array in arrays_in(args):
        array.flags.writeable = False
    for result, want in zip(as_tuple(function(*args)), expected):
        np.testing.assert_array_equal(result, want)


# --- multi_head_attention ---------------------------------------------------------


def mha_inputs(seed=3, B=3, T=4, d_model=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, T, d_model))
    weights = rng.standard_normal((4, d_model, d_model))
    mask = (rng.random((B, T, T)) < 0.5) | np.eye(T, dtype=bool)
    return X, weights, mask


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "per_item_mask"])
def test_batched_call_equals_unbatched_calls(masked):
    X, (W_q, W_k, W_v, W_o), mask = mha_inputs()
    num_heads = 2
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask if masked else None)
    assert output.shape == X.shape and weights.shape == (X.shape[0], num_heads, X.shape[1], X.shape[1])
    for b in range(X.shape[0]):
        output_b, weights_b = multi_head_attention(X[b], W_q, W_k, W_v, W_o, num_heads, mask[b] if masked else None)
        assert output_b.shape == X[b].shape
        np.testing.assert_allclose(output[b], output_b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights[b], weights_b, rtol=1e-12, atol=1e-12)


def test_one_head_is_plain_attention_then_output_projection():
    X, (W_q, W_k, W_v, W_o), _ = mha_inputs()
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, 1)
    plain_output, plain_weights = attention(X @ W_q, X @ W_k, X @ W_v)
    np.testing.assert_allclose(output, plain_output @ W_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights[:, 0], plain_weights, rtol=1e-12, atol=1e-12)


# --- the article's numbers --------------------------------------------------------


def test_scores_divide_by_8_when_d_k_is_64():
    # "The Illustrated Transformer": q·k1 = 112 and q·k2 = 96, divided by √64 = 8
    # give 14 and 12, and softmax turns those into about 0.88 and 0.12.
    q = np.ones((1, 64))
    K = np.stack([np.full(64, 1.75), np.full(64, 1.5)])
    assert dot_product(q[0], K[0]) == 112 and dot_product(q[0], K[1]) == 96
    scores = attention_scores(q, K)
    np.testing.assert_array_equal(scores, [[14.0, 12.0]])
    np.testing.assert_allclose(softmax(scores), [[0.88, 0.12]], atol=0.005)


def test_scores_are_q_dot_k_over_8_for_random_d_k_64():
    rng = np.random.default_rng(4)
    Q, K = rng.standard_normal((3, 64)), rng.standard_normal((5, 64))
    expected = np.array([[dot_product(q, k) / 8 for k in K] for q in Q])
    np.testing.assert_allclose(attention_scores(Q, K), expected, rtol=1e-12, atol=1e-12)
