"""Public checks: small fixed examples and properties, shipped to students.

They earn no points by themselves (fixed inputs could be memorised); they explain
mistakes early. The first examples of each function are worked out by hand, from the
article's examples. The rest use inputs nobody works out by hand, so that a wrong version
cannot give the right numbers by luck: weights that are not the identity, distinct
tokens, a different mask for each sequence, float32, and sizes where √d_k, d_k, √T_k,
num_heads and √d_model all differ. Their answers are the reference's, computed when the
release is built and shipped as numbers (known_answers.json); no reference code ships.
"""

import math
import numbers

import numpy as np

from mhakit.selfcheck.framework import (Checks, CheckFailed, NotImplementedYet, expect_array,
                         expect_inputs_unchanged, expect_pair, expect_piece, tolerance_for)
from mhakit.selfcheck.known_answers import KnownAnswers
from .wording import say

CHECKS = Checks()
check = CHECKS.add
KNOWN = KnownAnswers(__file__)

OUT_W = ("output", "weights")
FLOAT32 = dict(tolerance_for(np.float32), check_dtype=True)  # as the hidden float32 check


def fixed(*shape, step=7, modulus=11, scale=0.25):
    """Fixed numbers that look shuffled: multiples of ``scale``, exact in float32 too, so
    that every numpy computes the same inputs, and the shipped answers fit them."""
    count = int(np.prod(shape))
    steps = (np.arange(count) * step) % modulus - modulus // 2
    return (steps * scale).reshape(shape).astype(np.float64)


def _known(student, case_id, what="", **compare):
    """The student's result on a registered case against its shipped answer."""
    got = KNOWN.call(student, case_id)
    expected = KNOWN.expected(case_id)
    if isinstance(expected, tuple):
        return expect_pair(got, expected, OUT_W, **compare)
    return expect_array(got, expected, what, **compare)


def _float32(*arrays):
    return tuple(a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays)


def _rows_sum_to_one(weights, what="weights"):
    sums = np.sum(np.asarray(weights, dtype=np.float64), axis=-1)
    if not np.allclose(sums, 1.0):
        raise CheckFailed(say("rows-sum-to-one", what=what, low=f"{np.min(sums):.3g}",
                              high=f"{np.max(sums):.3g}"))


# ------------------------------------------------------------------ dot_product

@check("dot_product", "法国·[1, 0, 1] = 1 (the article's 3-number vectors)",
       zh="法国·[1, 0, 1] = 1（文中每个词 3 个数的向量）")
def _(student, _rng):
    got = student.call("dot_product", np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0]))
    expect_array(got, 1.0, "dot_product([1, 1, 0], [1, 0, 1])")


@check("dot_product", "integer vectors give an integer, [1, 2, 3]·[4, 5, 6] = 32",
       zh="整数向量的点积是整数，[1, 2, 3]·[4, 5, 6] = 32")
def _(student, _rng):
    got = student.call("dot_product", np.array([1, 2, 3]), np.array([4, 5, 6]))
    got = expect_array(got, 32, "dot_product([1, 2, 3], [4, 5, 6])")
    if got.dtype.kind not in "iu":
        raise CheckFailed(say("integer-dot", dtype=got.dtype))


@check("dot_product", "batches of vectors: shape (4, 5, 3)·(4, 5, 3) gives (4, 5)",
       zh="成批的向量：形状 (4, 5, 3)·(4, 5, 3) 得到 (4, 5)")
def _(student, _rng):
    u, v = np.ones((4, 5, 3)), np.full((4, 5, 3), 2.0)
    got = student.call("dot_product", u, v)
    expect_array(got, np.full((4, 5), 6.0), "dot_product(u, v), u.shape = v.shape = (4, 5, 3)")
    expect_inputs_unchanged(student, "dot_product")


KNOWN.case("dot_product/float32", "dot_product", *_float32(fixed(3, 4), fixed(3, 4, step=5)))


@check("dot_product", "float32 vectors give a float32 result", zh="float32 的向量得到 float32 的结果")
def _(student, _rng):
    _known(student, "dot_product/float32", "dot_product(u, v), float32, shape (3, 4)", **FLOAT32)


# ------------------------------------------------------------------ attention_scores

@check("attention_scores", "with d_k = 64 the dot product is divided by √64 = 8",
       zh="d_k = 64 时，点积要除以 √64 = 8（缩放）")
def _(student, _rng):
    Q = np.ones((1, 64))
    K = np.stack([np.ones(64), np.zeros(64), np.full(64, 0.5)])
    got = student.call("attention_scores", Q, K)
    expect_array(got, [[8.0, 0.0, 4.0]], "attention_scores(Q, K), d_k = 64")


@check("attention_scores", "shape (..., T_q, T_k) for T_q != T_k",
       zh="T_q != T_k 时形状是 (..., T_q, T_k)")
def _(student, _rng):
    Q, K = np.ones((2, 3, 4)), np.ones((2, 5, 4))
    got = student.call("attention_scores", Q, K)
    expect_array(got, np.full((2, 3, 5), 2.0), "attention_scores(Q, K), Q.shape = (2, 3, 4), K.shape = (2, 5, 4)")
    expect_inputs_unchanged(student, "attention_scores")


# d_k = 4 and T_k = 5: dividing by d_k, √T_k or nothing gives other numbers than √d_k = 2.
SCORES_QK = (fixed(2, 3, 4), fixed(2, 5, 4, step=5))
KNOWN.case("attention_scores/batched", "attention_scores", *SCORES_QK)
KNOWN.case("attention_scores/float32", "attention_scores", *_float32(*SCORES_QK))


@check("attention_scores", "distinct batched Q and K, d_k = 4 and T_k = 5",
       zh="各不相同的成批 Q 和 K，d_k = 4，T_k = 5")
def _(student, _rng):
    _known(student, "attention_scores/batched", "attention_scores(Q, K), Q (2, 3, 4), K (2, 5, 4)")


@check("attention_scores", "float32 Q and K give float32 scores",
       zh="float32 的 Q 和 K 得到 float32 的分数")
def _(student, _rng):
    _known(student, "attention_scores/float32", "attention_scores(Q, K), float32", **FLOAT32)


# ------------------------------------------------------------------ softmax

@check("softmax", "softmax([0, ln 3]) = [0.25, 0.75]", zh="softmax([0, ln 3]) = [0.25, 0.75]")
def _(student, _rng):
    got = student.call("softmax", np.array([0.0, math.log(3.0)]))
    expect_array(got, [0.25, 0.75], "softmax([0, ln 3])")


@check("softmax", "the axis argument is respected", zh="按参数 axis 指定的维归一化")
def _(student, _rng):
    # Not square, and no transpose of it is: a result normalised along the wrong axis
    # cannot pass for a transposed one.
    x = np.log(np.array([[1.0, 3.0, 4.0], [1.0, 1.0, 2.0]]))
    expect_array(student.call("softmax", x, axis=-1), [[1 / 8, 3 / 8, 1 / 2], [1 / 4, 1 / 4, 1 / 2]],
                 "softmax(x, axis=-1)")
    expect_array(student.call("softmax", x, axis=0), [[1 / 2, 3 / 4, 2 / 3], [1 / 2, 1 / 4, 1 / 3]],
                 "softmax(x, axis=0)")


@check("softmax", "rows sum to 1", zh="每行加起来等于 1")
def _(student, _rng):
    x = np.linspace(-3.0, 5.0, 2 * 3 * 7).reshape(2, 3, 7)
    got = student.call("softmax", x)
    expect_array(got, np.zeros_like(x), "softmax(x)", atol=1.0)  # shape and finiteness
    _rows_sum_to_one(got, "softmax(x)")
    expect_inputs_unchanged(student, "softmax")


@check("softmax", "large logits (±1e4) give no overflow", zh="很大的分数（±1e4）也不会溢出")
def _(student, _rng):
    got = student.call("softmax", np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4]]))
    expect_array(got, [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]], "softmax(x), x = ±1e4")


KNOWN.case("softmax/middle-axis", "softmax", fixed(2, 3, 4), axis=1)
KNOWN.case("softmax/float32", "softmax", *_float32(fixed(2, 3, 5)))


@check("softmax", "a 3-D input normalised along its middle axis",
       zh="三维输入沿中间的轴（axis=1）归一化")
def _(student, _rng):
    _known(student, "softmax/middle-axis", "softmax(x, axis=1), x.shape = (2, 3, 4)")


@check("softmax", "float32 logits give float32 weights", zh="float32 的分数得到 float32 的权重")
def _(student, _rng):
    _known(student, "softmax/float32", "softmax(x), float32", **FLOAT32)


# ------------------------------------------------------------------ attention

@check("attention", "shapes for T_q != T_k and d_v != d_k, weights rows sum to 1",
       zh="T_q != T_k、d_v != d_k 时的形状，weights 每行加起来等于 1")
def _(student, _rng):
    Q = np.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4)
    K = np.linspace(1, -1, 2 * 5 * 4).reshape(2, 5, 4)
    V = np.ones((2, 5, 6))
    got = student.call("attention", Q, K, V)
    expect_pair(got, (np.ones((2, 3, 6)), np.full((2, 3, 5), 0.2)), OUT_W, atol=1.0)
    _rows_sum_to_one(got[1])
    expect_inputs_unchanged(student, "attention")


@check("attention", "identical keys share the weight equally; the output is V's mean",
       zh="K 都一样时权重平分，输出是 V 的平均")
def _(student, _rng):
    Q = np.array([[1.0, 2.0], [-3.0, 0.5]])
    K = np.ones((4, 2))
    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    got = student.call("attention", Q, K, V)
    expect_pair(got, ([[4.0, 5.0], [4.0, 5.0]], np.full((2, 4), 0.25)), OUT_W)


@check("attention", "a causal mask (True = may attend) hides later keys",
       zh="因果掩码（True 表示可以看）挡住后面的词")
def _(student, _rng):
    Q = K = np.ones((3, 2))
    V = np.array([[3.0], [6.0], [9.0]])
    mask = np.tril(np.ones((3, 3), dtype=bool))
    got = student.call("attention", Q, K, V, mask=mask)
    weights = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]]
    expect_pair(got, ([[3.0], [4.5], [6.0]], weights), OUT_W)


@check("attention", "a query allowed no key gets zeros, not NaN",
       zh="一个 K 都不能看的 Q 得到 0，而不是 NaN")
def _(student, _rng):
    # The third query may see one key of two: there a blocked score filled with 0 still
    # takes weight, so that mistake differs here from one that only gets the second row wrong.
    Q, K = np.ones((3, 2)), np.ones((2, 2))
    V = np.array([[1.0], [2.0]])
    mask = np.array([[True, True], [False, False], [True, False]])
    got = student.call("attention", Q, K, V, mask=mask)
    expect_pair(got, ([[1.5], [0.0], [1.0]], [[0.5, 0.5], [0.0, 0.0], [1.0, 0.0]]), OUT_W)


# One mask per sequence: what item 0 may see differs from item 1, and item 1's first
# query may see nothing at all.
SEQUENCE_MASKS = np.array([[[1, 1, 0, 0, 0], [1, 0, 1, 0, 1], [0, 1, 1, 1, 1]],
                           [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 1, 0]]], dtype=bool)
ATTENTION_QKV = (fixed(2, 3, 4), fixed(2, 5, 4, step=5), fixed(2, 5, 6, step=3))
KNOWN.case("attention/mask-per-sequence", "attention", *ATTENTION_QKV, mask=SEQUENCE_MASKS)
KNOWN.case("attention/float32", "attention", *_float32(*ATTENTION_QKV), mask=SEQUENCE_MASKS)


@check("attention", "a (B, T_q, T_k) mask, a different one for each sequence",
       zh="(B, T_q, T_k) 的掩码，每个序列各不相同")
def _(student, _rng):
    _known(student, "attention/mask-per-sequence")


@check("attention", "float32 Q, K and V give float32 results",
       zh="float32 的 Q、K、V 得到 float32 的结果")
def _(student, _rng):
    _known(student, "attention/float32", **FLOAT32)


# ------------------------------------------------------------------ split_heads

@check("split_heads", "head i holds columns i·d_k to (i+1)·d_k",
       zh="拆分后头 i 拿第 i·d_k 到 (i+1)·d_k 列")
def _(student, _rng):
    X = np.arange(2 * 3 * 8.0).reshape(2, 3, 8)
    got = student.call("split_heads", X, 2)
    expected = np.stack([X[..., 0:4], X[..., 4:8]], axis=1)  # (2, 2, 3, 4)
    expect_array(got, expected, "split_heads(X, 2), X.shape = (2, 3, 8)")
    expect_inputs_unchanged(student, "split_heads")


@check("split_heads", "ValueError naming both numbers when d_model % num_heads != 0",
       zh="d_model % num_heads != 0 时抛出 ValueError，并写出这两个数")
def _(student, _rng):
    try:
        student.call("split_heads", np.zeros((3, 10)), 4)
    except CheckFailed as failure:
        message = str(failure)
        if "ValueError" not in message:
            raise CheckFailed(say("split-expected-valueerror", message=message)) from None
        if "10" not in message or "4" not in message:
            raise CheckFailed(say("split-name-both")) from None
        return
    raise CheckFailed(say("split-returned"))


KNOWN.case("split_heads/float32", "split_heads", *_float32(fixed(2, 4, 6)), 3)  # T != h


@check("split_heads", "float32 stays float32", zh="float32 拆分后还是 float32")
def _(student, _rng):
    _known(student, "split_heads/float32", "split_heads(X, 3), float32", **FLOAT32)


# ------------------------------------------------------------------ concat_heads

@check("concat_heads", "heads side by side, head 0 first", zh="各头并排拼接，头 0 在最前")
def _(student, _rng):
    H = np.arange(2 * 2 * 3 * 4.0).reshape(2, 2, 3, 4)  # (B, h, T, d_k)
    got = student.call("concat_heads", H)
    expected = np.concatenate([H[:, 0], H[:, 1]], axis=-1)  # (2, 3, 8)
    expect_array(got, expected, "concat_heads(H), H.shape = (2, 2, 3, 4)")
    expect_inputs_unchanged(student, "concat_heads")


KNOWN.case("split_heads/for-concat", "split_heads", np.arange(3 * 12.0).reshape(3, 12), 3)


@check("concat_heads", "undoes split_heads", zh="拼接是拆分的逆运算")
def _(student, _rng):
    X = np.arange(3 * 12.0).reshape(3, 12)
    heads = KNOWN.call(student, "split_heads/for-concat")
    expect_piece(heads, KNOWN.expected("split_heads/for-concat"), "split_heads(X, 3)",
                 "split_heads", "concat_heads")
    expect_array(student.call("concat_heads", np.asarray(heads)), X,
                 "concat_heads(split_heads(X, 3))")


KNOWN.case("concat_heads/float32", "concat_heads", *_float32(fixed(2, 3, 5, 2)))


@check("concat_heads", "float32 stays float32", zh="float32 拼接后还是 float32")
def _(student, _rng):
    _known(student, "concat_heads/float32", "concat_heads(H), float32", **FLOAT32)


# ------------------------------------------------------------------ output_projection

@check("output_projection", "C @ W_o with a non-square W_o", zh="C @ W_o，输出矩阵 W_o 不是方阵")
def _(student, _rng):
    C = np.array([[1.0, 2.0], [0.0, 1.0]])
    W_o = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    got = student.call("output_projection", C, W_o)
    expect_array(got, [[1.0, 2.0, 3.0], [0.0, 1.0, 1.0]], "output_projection(C, W_o)")
    expect_inputs_unchanged(student, "output_projection")


# A square W_o that is not symmetric: there a transposed W_o gives numbers, not an error.
KNOWN.case("output_projection/square", "output_projection", fixed(2, 3, 4),
           fixed(4, 4, step=5, modulus=7))
KNOWN.case("output_projection/float32", "output_projection",
           *_float32(fixed(3, 4), fixed(4, 6, step=5, modulus=7)))


@check("output_projection", "C @ W_o with a square W_o that is not symmetric",
       zh="C @ W_o，W_o 是方阵但不对称")
def _(student, _rng):
    _known(student, "output_projection/square", "output_projection(C, W_o), W_o (4, 4)")


@check("output_projection", "float32 stays float32", zh="float32 进，float32 出")
def _(student, _rng):
    _known(student, "output_projection/float32", "output_projection(C, W_o), float32",
           **FLOAT32)


# ------------------------------------------------------------------ multi_head_attention

def _identity_weights(d_model):
    return [np.eye(d_model) for _ in range(4)]


@check("multi_head_attention", "shapes: output (B, T, d_model), weights (B, h, T, T)",
       zh="形状：output (B, T, d_model)，weights (B, h, T, T)")
def _(student, _rng):
    X = np.linspace(-1, 1, 2 * 3 * 8).reshape(2, 3, 8)
    got = student.call("multi_head_attention", X, *_identity_weights(8), 2)
    expect_pair(got, (np.zeros((2, 3, 8)), np.full((2, 2, 3, 3), 1 / 3)), OUT_W, atol=10.0)
    _rows_sum_to_one(got[1])
    expect_inputs_unchanged(student, "multi_head_attention")


@check("multi_head_attention", "identical tokens and identity matrices give X back",
       zh="词都一样、矩阵都是单位矩阵时，输出就是 X")
def _(student, _rng):
    X = np.tile([1.0, 2.0, 3.0, 4.0], (3, 1))  # (T=3, d_model=4), no batch axis
    got = student.call("multi_head_attention", X, *_identity_weights(4), 2)
    expect_pair(got, (X, np.full((2, 3, 3), 1 / 3)), OUT_W)


@check("multi_head_attention", "one (T, T) mask applies to every head",
       zh="一个 (T, T) 掩码作用于每个头")
def _(student, _rng):
    X = np.tile([1.0, 2.0, 3.0, 4.0], (2, 3, 1))  # (B=2, T=3, d_model=4)
    mask = np.tril(np.ones((3, 3), dtype=bool))
    got = student.call("multi_head_attention", X, *_identity_weights(4), 2, mask=mask)
    causal = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    expect_pair(got, (X, np.broadcast_to(causal, (2, 2, 3, 3))), OUT_W)


# Distinct tokens and four different weights that are not the identity, with sizes where
# every scale a student might use differs: √d_k ≈ 1.73, d_k = 3, num_heads = 2,
# √T ≈ 2.24, √d_model ≈ 2.45. B = num_heads, so that a (B, T, T) mask given to the heads
# without its head axis gives wrong numbers instead of an error.
MHA_X = fixed(2, 5, 6)
MHA_WEIGHTS = tuple(fixed(6, 6, step=step, modulus=13, scale=0.125) for step in (2, 3, 5, 6))
MHA_MASKS = np.stack([np.tril(np.ones((5, 5), dtype=bool)),  # causal
                      np.broadcast_to(np.arange(5) < 3, (5, 5))])  # the last 2 are padding
KNOWN.case("multi_head_attention/weights", "multi_head_attention", MHA_X, *MHA_WEIGHTS, 2)
KNOWN.case("multi_head_attention/mask-per-sequence", "multi_head_attention", MHA_X,
           *MHA_WEIGHTS, 2, mask=MHA_MASKS)
KNOWN.case("multi_head_attention/float32", "multi_head_attention",
           *_float32(MHA_X, *MHA_WEIGHTS), 2, mask=MHA_MASKS)


@check("multi_head_attention", "distinct tokens, weights that are not the identity",
       zh="各不相同的词，权重不是单位矩阵")
def _(student, _rng):
    _known(student, "multi_head_attention/weights")


@check("multi_head_attention", "a (B, T, T) mask, one per sequence, applies to every head",
       zh="(B, T, T) 的掩码，每个序列一个，作用于每个头")
def _(student, _rng):
    _known(student, "multi_head_attention/mask-per-sequence")


@check("multi_head_attention", "float32 stays float32 all the way through",
       zh="float32 进，float32 出，中间也不变成 float64")
def _(student, _rng):
    _known(student, "multi_head_attention/float32", **FLOAT32)


# ------------------------------------------------------------------ quiz

QUIZ_CHOICES = ("A", "B", "C", "D")
QUIZ_CHOICE_QUESTIONS = ("quiz_1", "quiz_2", "quiz_3", "quiz_4")


@check("quiz", "every question is answered, in the expected form",
       zh="每道题都已作答，格式正确")
def _(student, _rng):
    missing = [q for q in QUIZ_CHOICE_QUESTIONS + ("quiz_5", "quiz_6")
               if student.variable(q) is None]
    if len(missing) == 6:
        raise NotImplementedYet(say("quiz-not-started"))
    if missing:
        raise CheckFailed(say("quiz-unanswered", names=", ".join(missing)))
    for question in QUIZ_CHOICE_QUESTIONS:
        answer = student.variable(question)
        if not isinstance(answer, str) or answer.strip().upper() not in QUIZ_CHOICES:
            raise CheckFailed(say("quiz-choice", question=question,
                                  choices=", ".join(QUIZ_CHOICES)))
    pair = student.variable("quiz_5")
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise CheckFailed(say("quiz-pair"))
    number = student.variable("quiz_6")
    if not isinstance(number, numbers.Real) or isinstance(number, bool):
        raise CheckFailed(say("quiz-number"))
