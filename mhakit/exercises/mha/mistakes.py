"""The catalogue of common mistakes: each one a deliberately wrong variant of a function.

The grader names a mistake when one of these gives the student's output (see
mhakit/grader/diagnosis.py). This module stays on the instructor's side: a wrong
variant is one edit away from the answer (``C @ W_o.T`` tells you ``C @ W_o``), so no
variant ever ships to students. The variants call the reference's own pieces, like the
stand-ins do.
"""

import math

import numpy as np


from mhakit.grader.diagnosis import Mistake

from . import reference as ref


def _softmax_no_shift(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x if x.dtype.kind == "f" else x.astype(np.float64))
    return e / np.sum(e, axis=axis, keepdims=True)  # diagnose() silences the overflow


def _softmax_along(other):
    """softmax along the axis ``other`` instead of the one asked for: ``axis=0`` written
    in, or the default axis kept, whichever axis the check asks for."""
    def variant(x, axis=-1):
        x = np.asarray(x)
        if not -x.ndim <= other < x.ndim or other % x.ndim == axis % x.ndim:
            raise ValueError("not another axis of this input")
        return ref.softmax(x, axis=other)
    return variant


# Any other axis of an input of up to 3 axes (the checks' largest): a softmax with the
# axis written in is wrong along a different axis on a 2-D and on a 3-D input.
_SOFTMAX_OTHER_AXES = tuple(_softmax_along(other) for other in (-1, -2, 0))


def _softmax_whole(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def _scores_divided_by(divisor):
    def scores(Q, K):
        Q, K = np.asarray(Q), np.asarray(K)
        raw = Q @ np.swapaxes(K, -1, -2)
        return raw / divisor(Q.shape[-1]) if divisor else raw
    return scores


def _mha_with_matrices(which):
    """multi_head_attention whose Q, K and V take the matrices ``which`` names, such as
    "qqv": K made with W_q, a line copied and not changed."""
    def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
        matrices = {"q": W_q, "k": W_k, "v": W_v}
        mixed = [matrices[letter] for letter in which]
        return ref.multi_head_attention(X, *mixed, W_o, num_heads, mask)
    return multi_head_attention


def _attention_without_mask(Q, K, V, mask=None):
    if mask is None:
        raise ValueError("this mistake needs a mask")
    return ref.attention(Q, K, V)


def _attention_with(mask_rule):
    """attention() whose masking goes wrong in the way ``mask_rule`` says."""
    def attention(Q, K, V, mask=None):
        if mask is None:
            raise ValueError("these mistakes need a mask")
        scores = ref.attention_scores(Q, K)
        mask = np.asarray(mask, dtype=bool)
        weights = mask_rule(scores, np.broadcast_to(mask, scores.shape))
        return weights @ np.asarray(V), weights
    return attention


def _inverted(scores, mask):
    return _masked_softmax(scores, ~mask)


def _masked_softmax(scores, mask):
    has_key = np.any(mask, axis=-1, keepdims=True)
    filled = np.where(has_key, np.where(mask, scores, -np.inf), 0.0)
    return np.where(mask, ref.softmax(filled, axis=-1), 0.0)


def _after_softmax(scores, mask):
    return np.where(mask, ref.softmax(scores, axis=-1), 0.0)


def _filled_with_zero(scores, mask):
    return ref.softmax(np.where(mask, scores, 0.0), axis=-1)


def _split_no_transpose(X, num_heads):
    X = np.asarray(X)
    T, d_model = X.shape[-2:]
    return X.reshape(*X.shape[:-2], num_heads, T, d_model // num_heads)


def _split_width_as_dk_h(X, num_heads):
    X = np.asarray(X)
    d_k = X.shape[-1] // num_heads
    per_token = X.reshape(*X.shape[:-1], d_k, num_heads)  # (..., T, d_k, h)
    return np.moveaxis(per_token, -1, -3)  # (..., h, T, d_k)


def _split_wrong_swap(X, num_heads):
    X = np.asarray(X)
    d_k = X.shape[-1] // num_heads
    per_token = X.reshape(*X.shape[:-1], num_heads, d_k)  # (..., T, h, d_k)
    return np.swapaxes(per_token, -1, -3)  # (..., d_k, h, T)


def _concat_no_transpose(H):
    H = np.asarray(H)
    h, T, d_k = H.shape[-3:]
    return H.reshape(*H.shape[:-3], T, h * d_k)


def _concat_reversed(H):
    return ref.concat_heads(np.flip(np.asarray(H), axis=-3))


def _concat_width_as_dk_h(H):
    H = np.asarray(H)
    h, T, d_k = H.shape[-3:]
    return np.moveaxis(H, -3, -1).reshape(*H.shape[:-3], T, d_k * h)  # (..., T, d_k, h)


def _mha(project=True, scale=None, heads=None, flip_mask=False, head_axis=True,
         drop_mask=False):
    """multi_head_attention with one step done wrong."""
    def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
        X = np.asarray(X)
        if (flip_mask or not head_axis or drop_mask) and mask is None:
            raise ValueError("this mistake needs a mask")
        if drop_mask:
            mask = None
        if flip_mask:
            mask = np.swapaxes(np.asarray(mask, dtype=bool), -1, -2)
        Q, K, V = (ref.split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
        if scale is not None:
            scores = Q @ np.swapaxes(K, -1, -2) / scale(X.shape[-1], num_heads)
            if mask is not None:  # the same mask for every head
                scores = np.where(np.expand_dims(np.asarray(mask, dtype=bool), -3), scores,
                                  -np.inf)
            weights = ref.softmax(scores, axis=-1)
            heads_out = weights @ V
        else:
            if mask is not None and head_axis:
                mask = np.expand_dims(np.asarray(mask), -3)  # (..., 1, T, T)
            heads_out, weights = ref.attention(Q, K, V, mask)
        C = ref.concat_heads(heads_out)
        out = C @ W_o if project else C
        return out, (weights if heads is None else heads(weights))
    return multi_head_attention


CATALOGUE = {
    "dot_product": [
        Mistake("dot_product/no-sum", lambda u, v: np.asarray(u) * np.asarray(v),
                "逐项相乘后还要把最后一维加起来，点积才是一个数。",
                "The products still have to be summed over the last axis: a dot product is one number."),
        Mistake("dot_product/sum-over-everything", lambda u, v: np.sum(np.asarray(u) * np.asarray(v)),
                "只对最后一维求和（axis=-1）；把所有元素加在一起会把整批向量混成一个数。",
                "Sum over the last axis only (axis=-1); summing everything merges a whole batch into one number."),
    ],
    "attention_scores": [
        Mistake("attention_scores/no-scaling", _scores_divided_by(None),
                "忘了缩放：点积还要除以 √d_k。",
                "The scaling is missing: divide the dot products by √d_k."),
        Mistake("attention_scores/divided-by-d_k", _scores_divided_by(float),
                "除以的是 d_k，应该除以它的平方根 √d_k。",
                "This divides by d_k; divide by its square root, √d_k."),
        Mistake("attention_scores/multiplied-by-sqrt-d_k", _scores_divided_by(lambda d: 1 / math.sqrt(d)),
                "乘了 √d_k，应该除以 √d_k。",
                "This multiplies by √d_k; divide by it instead."),
    ],
    "softmax": [
        Mistake("softmax/no-max-subtraction", _softmax_no_shift,
                "先减去最大值再取 exp：logit 很大时（如 1e4）exp 会溢出成 inf，结果变成 NaN。",
                "Subtract the maximum before np.exp: large logits such as 1e4 overflow to inf and give NaN."),
        Mistake("softmax/wrong-axis", _SOFTMAX_OTHER_AXES,
                "沿着错误的轴做了归一化：用参数 axis 指定的那一维。",
                "Normalised along the wrong axis: use the axis the `axis` argument names."),
        Mistake("softmax/normalised-over-whole-array", _softmax_whole,
                "对整个数组归一化了：只沿 axis 这一维求和（keepdims=True）。",
                "Normalised over the whole array: sum along `axis` only (with keepdims=True)."),
    ],
    "attention": [
        Mistake("attention/mask-ignored", _attention_without_mask,
                "掩码没有起作用：结果和不传掩码时一模一样。做 softmax 之前，先把 mask 为 False "
                "的位置（不许看的键）的分数设为 -inf。",
                "The mask has no effect: the result is exactly what it is without a mask. "
                "Before the softmax, set the scores of the keys the mask hides (where it is "
                "False) to -inf."),
        Mistake("attention/mask-inverted", _attention_with(_inverted),
                "掩码的方向反了：True 表示「可以看」，应该屏蔽的是 False 的位置。",
                "The mask is inverted: True means \"may attend\"; block the False entries."),
        Mistake("attention/mask-after-softmax", _attention_with(_after_softmax),
                "掩码加在了 softmax 之后：先把不许看的分数设为 -inf，再做 softmax，每行权重之和才是 1。",
                "The mask is applied after the softmax: set the blocked scores to -inf first, so each row still sums to 1."),
        Mistake("attention/mask-filled-with-zero", _attention_with(_filled_with_zero),
                "被屏蔽的分数填成了 0：exp(0) = 1 仍然有权重，应该填 -inf。",
                "Blocked scores were set to 0, and exp(0) = 1 still gets weight: use -inf."),
    ],
    "split_heads": [
        Mistake("split_heads/reshape-without-transpose", _split_no_transpose,
                "直接 reshape 成 (..., h, T, d_k) 会把不同词的数字混进同一个头：先 reshape 成 (..., T, h, d_k)，再交换 T 和 h 两个轴。",
                "Reshaping straight to (..., h, T, d_k) mixes different tokens into one head: reshape to (..., T, h, d_k) first, then swap the T and h axes."),
        Mistake("split_heads/width-read-as-d_k-h", _split_width_as_dk_h,
                "最后一维要按 (h, d_k) 拆：头 i 拿第 i*d_k 到 (i+1)*d_k 列，不是每隔 h 列取一个。",
                "Cut the last axis as (h, d_k): head i takes columns i*d_k to (i+1)*d_k, not every h-th column."),
        Mistake("split_heads/wrong-axes-swapped", _split_wrong_swap,
                "交换错了轴：reshape 成 (..., T, h, d_k) 后要交换的是 T 和 h（倒数第 3 和第 2 维）。",
                "The wrong axes were swapped: after reshaping to (..., T, h, d_k), swap T and h (axes -3 and -2)."),
    ],
    "concat_heads": [
        Mistake("concat_heads/reshape-without-transpose", _concat_no_transpose,
                "拼接前要先把轴换回 (..., T, h, d_k)，再 reshape；直接 reshape 会把不同词的数字拼在一起。",
                "Swap the axes back to (..., T, h, d_k) before reshaping; a direct reshape glues different tokens together."),
        Mistake("concat_heads/heads-in-reverse-order", _concat_reversed,
                "头的顺序反了：头 0 在最前面。",
                "The heads are in reverse order: head 0 comes first."),
        Mistake("concat_heads/width-as-d_k-h", _concat_width_as_dk_h,
                "拼接的宽度顺序应该是 (h, d_k)：先放完头 0 的 d_k 个数，再放头 1 的。",
                "Lay the width out as (h, d_k): all d_k numbers of head 0, then head 1's."),
    ],
    "output_projection": [
        Mistake("output_projection/W_o-transposed", lambda C, W_o: np.asarray(C) @ np.asarray(W_o).T,
                "W_o 被转置了：对照它的形状 (h·d_k, d_model) 和乘法需要的形状。",
                "W_o is transposed: compare its shape, (h·d_k, d_model), with what the product needs."),
        Mistake("output_projection/not-applied", lambda C, W_o: np.asarray(C),
                "还没有乘输出矩阵 W_o。",
                "The output matrix W_o is not applied yet."),
    ],
    "multi_head_attention": [
        Mistake("multi_head_attention/no-output-projection", _mha(project=False),
                "拼接之后忘了乘输出矩阵 W_o。",
                "After the concat, the output matrix W_o is missing."),
        Mistake("multi_head_attention/projection-matrices-mixed-up",
                tuple(_mha_with_matrices(which) for which in ("qqv", "qkq", "qkk", "kkv")),
                "Q、K、V 里有一个用错了矩阵（复制一行后忘了改？）：Q 用 W_q，K 用 W_k，V 用 W_v。",
                "One of Q, K and V is made with the wrong matrix (a line copied and not "
                "changed?): Q takes W_q, K takes W_k, and V takes W_v."),
        Mistake("multi_head_attention/scaled-by-sqrt-d_model",
                _mha(scale=lambda d_model, h: math.sqrt(d_model)),
                "缩放用的是 √d_model，应该是每个头的宽度 √d_k（d_k = d_model / h）。",
                "Scaled by √d_model; scale by the width of one head, √d_k (d_k = d_model / h)."),
        Mistake("multi_head_attention/scaled-by-num-heads",
                _mha(scale=lambda d_model, h: h),
                "缩放除以的是头数，应该是 √d_k。",
                "Scaled by the number of heads; divide by √d_k."),
        Mistake("multi_head_attention/mask-ignored", _mha(drop_mask=True),
                "掩码没有起作用：结果和不传掩码时一模一样。看看掩码有没有加上头的轴 "
                "mask[..., None, :, :] 交给 attention，以及 attention 有没有用上它。",
                "The mask has no effect: the result is exactly what it is without a mask. "
                "Check that it reaches attention, with a head axis (mask[..., None, :, :]), "
                "and that attention applies it."),
        Mistake("multi_head_attention/mask-transposed", _mha(flip_mask=True),
                "掩码被转置了（因果掩码的三角形朝向反了）：mask[i, j] 说的是第 i 个位置能否看第 j 个位置。",
                "The mask is transposed (a causal triangle points the wrong way): mask[i, j] "
                "says whether position i may see position j."),
        Mistake("multi_head_attention/mask-without-head-axis", _mha(head_axis=False),
                "掩码少了头这一维：(B, T, T) 的掩码对上 (B, h, T, T) 的分数时，B 会和头数 h "
                "对齐，B 等于 h 时不报错，却把第 b 个序列的掩码给了第 b 个头。先用 "
                "mask[..., None, :, :] 给它加上头的轴，每个头才都拿到自己序列的掩码。",
                "The mask lacks its head axis: set against (B, h, T, T) scores, a (B, T, T) "
                "mask lines B up with the heads, so with B = h there is no error, but "
                "sequence b's mask goes to head b. Add the axis first, mask[..., None, :, :], "
                "so that every head gets its own sequence's mask."),
        Mistake("multi_head_attention/weights-of-one-head",
                (_mha(heads=lambda w: w[..., 0, :, :]), _mha(heads=lambda w: w[..., -1, :, :])),
                "只返回了一个头（第一个或最后一个）的注意力权重：应该返回所有头的，形状 (..., h, T, T)。",
                "Only one head's weights (the first or the last) are returned: return every "
                "head's, shape (..., h, T, T)."),
    ],
}
