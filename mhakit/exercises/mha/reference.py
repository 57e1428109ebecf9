"""Reference multi-head attention in plain numpy.

This file is the single source of truth for the answers: the notebook builder copies
each function's body into the nbgrader solution cells, and the hidden graders compare
every submission against these functions.

Conventions (the assignment's contract):
- row vectors: a projection is ``X @ W``; W_q, W_k, W_v, W_o are (d_model, d_model);
- any number of leading batch axes, written ``...``;
- a float input keeps its dtype, so scale factors are Python floats (a NumPy float64
  scalar would promote float32 to float64 under NumPy 2);
- inputs are never modified;
- a boolean mask is True where a query may attend to a key.
"""

import math

import numpy as np


def dot_product(u, v):
    """Dot product over the last axis.

    u: (..., d), v: (..., d)  ->  (...)
    Integer vectors give NumPy's usual integer result.
    """
    u, v = np.asarray(u), np.asarray(v)
    if u.shape[-1:] != v.shape[-1:]:
        raise ValueError(f"last axes differ: {u.shape[-1:]} vs {v.shape[-1:]}")
    return np.sum(u * v, axis=-1)  # (...)


def attention_scores(Q, K):
    """Scaled dot-product scores Q Kᵀ / √d_k.

    Q: (..., T_q, d_k), K: (..., T_k, d_k)  ->  (..., T_q, T_k)
    """
    Q, K = np.asarray(Q), np.asarray(K)
    d_k = Q.shape[-1]
    if K.shape[-1] != d_k:
        raise ValueError(f"Q has d_k={d_k} but K has d_k={K.shape[-1]}")
    # A Python float keeps float32 as float32; np.sqrt(d_k) would promote it.
    return (Q @ np.swapaxes(K, -1, -2)) / math.sqrt(d_k)  # (..., T_q, T_k)


def softmax(x, axis=-1):
    """Softmax along ``axis``; the result has x's shape and sums to 1 along ``axis``.

    Subtracting the maximum first leaves the result unchanged (it cancels in the ratio)
    but keeps np.exp away from overflow for logits such as 1e4.
    """
    x = np.asarray(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / np.sum(exps, axis=axis, keepdims=True)  # same shape as x


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention: the four steps for one set of Q, K, V.

    Q: (..., T_q, d_k), K: (..., T_k, d_k), V: (..., T_k, d_v)
    mask: boolean, broadcastable to (..., T_q, T_k); True means "may attend".
    Returns (output (..., T_q, d_v), weights (..., T_q, T_k)).
    A query whose mask row has no True entry attends to nothing: its weights and
    output are zeros, never NaN.
    """
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has T_k={K.shape[-2]} keys but V has {V.shape[-2]} values")
    scores = attention_scores(Q, K)  # (..., T_q, T_k)
    if mask is None:
        weights = softmax(scores, axis=-1)  # (..., T_q, T_k)
    else:
        mask = np.asarray(mask, dtype=bool)
        # A row with no allowed key would be all -inf and give NaN; score it 0 here
        # and zero it afterwards.
        has_key = np.any(mask, axis=-1, keepdims=True)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(has_key, scores, 0.0)
        weights = np.where(mask, softmax(scores, axis=-1), 0.0)  # (..., T_q, T_k)
    output = weights @ V  # (..., T_q, d_v)
    return output, weights


def split_heads(X, num_heads):
    """Cut the last axis into heads: head i gets columns i*d_k to (i+1)*d_k.

    X: (..., T, d_model)  ->  (..., num_heads, T, d_k), each head d_k = d_model / num_heads wide
    """
    X = np.asarray(X)
    if X.ndim < 2:
        raise ValueError(f"X must be (..., T, d_model), got shape {X.shape}")
    d_model = X.shape[-1]
    if num_heads < 1 or d_model % num_heads != 0:
        raise ValueError(f"d_model={d_model} cannot be split into num_heads={num_heads} equal heads")
    d_k = d_model // num_heads
    per_token = X.reshape(*X.shape[:-1], num_heads, d_k)  # (..., T, h, d_k)
    return np.swapaxes(per_token, -2, -3)  # (..., h, T, d_k)


def concat_heads(H):
    """Put the heads side by side again, head 0 first: the inverse of split_heads.

    H: (..., h, T, d_k)  ->  (..., T, h * d_k)
    """
    H = np.asarray(H)
    if H.ndim < 3:
        raise ValueError(f"H must be (..., h, T, d_k), got shape {H.shape}")
    num_heads, d_k = H.shape[-3], H.shape[-1]
    per_token = np.swapaxes(H, -3, -2)  # (..., T, h, d_k)
    return per_token.reshape(*per_token.shape[:-2], num_heads * d_k)  # (..., T, h*d_k)


def output_projection(C, W_o):
    """Multiply the concatenated heads by the output matrix.

    C: (..., T, h * d_k), W_o: (h * d_k, d_model)  ->  (..., T, d_model)
    """
    C, W_o = np.asarray(C), np.asarray(W_o)
    if W_o.ndim != 2 or C.shape[-1] != W_o.shape[0]:
        raise ValueError(f"C has width {C.shape[-1]} but W_o has shape {W_o.shape}")
    return C @ W_o  # (..., T, d_model)


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head self-attention assembled from the pieces above.

    X: (..., T, d_model); W_q, W_k, W_v, W_o: (d_model, d_model)
    mask: boolean, broadcastable to (..., T, T), without a head axis; every head gets it.
    Returns (output (..., T, d_model), weights (..., num_heads, T, T)).
    """
    X = np.asarray(X)
    d_model = X.shape[-1]
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
        if np.shape(W) != (d_model, d_model):
            raise ValueError(f"{name} must be ({d_model}, {d_model}), got {np.shape(W)}")
    Q = split_heads(X @ W_q, num_heads)  # (..., h, T, d_k)
    K = split_heads(X @ W_k, num_heads)  # (..., h, T, d_k)
    V = split_heads(X @ W_v, num_heads)  # (..., h, T, d_k)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]  # (..., 1, T, T)
    heads, weights = attention(Q, K, V, mask)  # (..., h, T, d_k), (..., h, T, T)
    output = output_projection(concat_heads(heads), W_o)  # (..., T, d_model)
    return output, weights
