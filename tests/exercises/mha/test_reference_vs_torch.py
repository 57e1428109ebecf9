"""Cross-check the numpy reference (mhakit/exercises/mha/reference.py) against PyTorch, in float64.

In the spirit of PyTorch's test/nn/test_multihead_attention.py: a plain numpy
reference, many random trials with non-square shapes, compared to 1e-10.
"""

import numpy as np
import pytest

from mhakit.exercises.mha import reference

torch = pytest.importorskip("torch", reason="torch is an optional extra: pip install -e '.[torch]' (torch==2.13.0)")

SEEDS = range(20)
TOL = dict(rtol=1e-10, atol=1e-10)


def draw_mha_shape(seed):
    """(B, T, d_model, num_heads) drawn from the seed; num_heads in {1, 2, 4, d_model}."""
    rng = np.random.default_rng(seed)
    head_kind = rng.choice(["1", "2", "4", "d_model"])
    if head_kind == "d_model":  # one feature per head: d_k = 1
        d_model = int(rng.integers(3, 9))
        num_heads = d_model
    else:
        num_heads = int(head_kind)
        d_model = num_heads * int(rng.integers(2, 5))
    # T differs from d_model so that a transposed axis cannot go unnoticed.
    T = int(rng.choice([t for t in range(1, 8) if t != d_model]))
    B = int(rng.integers(2, 4))
    return B, T, d_model, num_heads


def draw_attention_shape(seed):
    """(B, h, T_q, T_k, d_k, d_v) drawn from the seed, with T_q != T_k and d_k != d_v."""
    rng = np.random.default_rng(seed)
    B, h = int(rng.integers(2, 4)), int(rng.integers(1, 5))
    T_q, T_k = (int(t) for t in rng.choice(np.arange(1, 7), size=2, replace=False))
    d_k, d_v = (int(d) for d in rng.choice(np.arange(1, 6), size=2, replace=False))
    return B, h, T_q, T_k, d_k, d_v


def test_trials_cover_the_edge_shapes():
    # The random draws must actually reach the cases the tests claim to cover.
    mha_shapes = [draw_mha_shape(seed) for seed in SEEDS]
    assert {1} <= {T for _, T, _, _ in mha_shapes}
    assert any(h == d_model for _, _, d_model, h in mha_shapes)
    assert {1, 2, 4} <= {h for _, _, _, h in mha_shapes}
    attention_shapes = [draw_attention_shape(seed) for seed in SEEDS]
    assert any(1 in (T_q, T_k) for _, _, T_q, T_k, _, _ in attention_shapes)


def random_mask(rng, shape):
    """Boolean mask (True = may attend) where every query row allows one key at least.

    A row with no allowed key gives NaN in torch but zeros in the reference, so the
    cross-checks avoid it; test_fully_masked_query_gives_zeros_not_nan covers it.
    """
    mask = rng.random(shape) < 0.5
    forced_key = rng.integers(shape[-1], size=shape[:-1] + (1,))
    np.put_along_axis(mask, forced_key, True, axis=-1)
    return mask


def draw_mha_mask(rng, kind, B, T):
    if kind == "none":
        return None
    if kind == "causal":
        return np.tril(np.ones((T, T), dtype=bool))
    return random_mask(rng, (B, T, T)) | np.eye(T, dtype=bool)  # "per_item"


def torch_mha_mask(mask, num_heads):
    """Our mask (True = may attend) as torch's attn_mask (True = blocked)."""
    if mask is None:
        return None
    blocked = ~mask
    if blocked.ndim == 3:  # torch wants (B * num_heads, T, T), batch-major
        blocked = np.repeat(blocked, num_heads, axis=0)
    return torch.from_numpy(blocked)


def torch_mha(X, W_q, W_k, W_v, W_o, num_heads, mask):
    d_model = X.shape[-1]
    mha = torch.nn.MultiheadAttention(
        embed_dim=d_model, num_heads=num_heads, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        # Row vectors (x @ W) on our side, column vectors (W x) on torch's: transpose.
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_q.T, W_k.T, W_v.T], axis=0)))
        mha.out_proj.weight.copy_(torch.from_numpy(W_o.T))
        x = torch.from_numpy(X)
        output, weights = mha(
            x, x, x,
            attn_mask=torch_mha_mask(mask, num_heads),
            need_weights=True,
            average_attn_weights=False,  # keep the head axis: (B, h, T, T)
        )
    return output.numpy(), weights.numpy()


@pytest.mark.parametrize("mask_kind", ["none", "causal", "per_item"])
@pytest.mark.parametrize("seed", SEEDS)
def test_multi_head_attention_matches_torch(seed, mask_kind):
    B, T, d_model, num_heads = draw_mha_shape(seed)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, T, d_model))
    W_q, W_k, W_v, W_o = rng.standard_normal((4, d_model, d_model)) / np.sqrt(d_model)
    mask = draw_mha_mask(rng, mask_kind, B, T)

    expected_output, expected_weights = torch_mha(X, W_q, W_k, W_v, W_o, num_heads, mask)
    output, weights = reference.multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)

    assert output.shape == (B, T, d_model)
    assert weights.shape == (B, num_heads, T, T)
    np.testing.assert_allclose(output, expected_output, **TOL)
    np.testing.assert_allclose(weights, expected_weights, **TOL)


def draw_attention_mask(rng, kind, B, h, T_q, T_k):
    if kind == "none":
        return None
    if kind == "shared":  # one (T_q, T_k) mask broadcast over batch and heads
        return random_mask(rng, (T_q, T_k))
    return random_mask(rng, (B, h, T_q, T_k))  # "per_item_and_head"


@pytest.mark.parametrize("mask_kind", ["none", "shared", "per_item_and_head"])
@pytest.mark.parametrize("seed", SEEDS)
def test_attention_matches_torch_sdpa(seed, mask_kind):
    B, h, T_q, T_k, d_k, d_v = draw_attention_shape(seed)
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((B, h, T_q, d_k))
    K = rng.standard_normal((B, h, T_k, d_k))
    V = rng.standard_normal((B, h, T_k, d_v))
    mask = draw_attention_mask(rng, mask_kind, B, h, T_q, T_k)

    # SDPA's boolean attn_mask means True = may attend, as ours does: no inversion.
    expected = torch.nn.functional.scaled_dot_product_attention(
        torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V),
        attn_mask=None if mask is None else torch.from_numpy(mask),
    ).numpy()
    output, weights = reference.attention(Q, K, V, mask)

    assert output.shape == (B, h, T_q, d_v)
    assert weights.shape == (B, h, T_q, T_k)
    np.testing.assert_allclose(output, expected, **TOL)


def test_fully_masked_query_gives_zeros_not_nan():
    # Torch gives NaN for a query with no allowed key; the reference's contract is
    # zeros. Torch-free: this is the case the cross-checks above steer clear of.
    rng = np.random.default_rng(0)
    T, d_model, num_heads = 4, 6, 2
    mask = np.tril(np.ones((T, T), dtype=bool))
    mask[1] = False  # query 1 may attend to nothing

    Q, K, V = rng.standard_normal((3, T, d_model))
    # errstate: the zeros must not come from a NaN wiped out afterwards (that warns).
    with np.errstate(invalid="raise", divide="raise"):
        output, weights = reference.attention(Q, K, V, mask)
    assert not np.isnan(output).any() and not np.isnan(weights).any()
    np.testing.assert_array_equal(output[1], 0.0)
    np.testing.assert_array_equal(weights[1], 0.0)
    np.testing.assert_allclose(np.delete(weights, 1, axis=0).sum(axis=-1), 1.0)

    X = rng.standard_normal((2, T, d_model))
    W_q, W_k, W_v, W_o = rng.standard_normal((4, d_model, d_model))
    with np.errstate(invalid="raise", divide="raise"):
        output, weights = reference.multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)
    assert not np.isnan(output).any() and not np.isnan(weights).any()
    np.testing.assert_array_equal(output[:, 1], 0.0)
    np.testing.assert_array_equal(weights[:, :, 1], 0.0)
    np.testing.assert_allclose(np.delete(weights, 1, axis=2).sum(axis=-1), 1.0)
