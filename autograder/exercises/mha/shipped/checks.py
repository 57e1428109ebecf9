"""Public checks: small fixed examples and properties, shipped to students.

They earn no points by themselves (fixed inputs could be memorised); they explain
mistakes early. Expected values here are worked out by hand from the article's
examples, never computed by a reference implementation.
"""

import math
import numbers

import numpy as np

from ..framework import (Checks, CheckFailed, NotImplementedYet, expect_array,
                         expect_inputs_unchanged, expect_pair)
from .wording import say

CHECKS = Checks()
check = CHECKS.add

OUT_W = ("output", "weights")


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


# ------------------------------------------------------------------ softmax

@check("softmax", "softmax([0, ln 3]) = [0.25, 0.75]", zh="softmax([0, ln 3]) = [0.25, 0.75]")
def _(student, _rng):
    got = student.call("softmax", np.array([0.0, math.log(3.0)]))
    expect_array(got, [0.25, 0.75], "softmax([0, ln 3])")


@check("softmax", "the axis argument is respected", zh="按参数 axis 指定的维归一化")
def _(student, _rng):
    x = np.log(np.array([[1.0, 3.0], [1.0, 1.0]]))
    expect_array(student.call("softmax", x, axis=-1), [[0.25, 0.75], [0.5, 0.5]],
                 "softmax(x, axis=-1)")
    expect_array(student.call("softmax", x, axis=0), [[0.5, 0.75], [0.5, 0.25]],
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
    Q = K = np.ones((2, 2))
    V = np.array([[1.0], [2.0]])
    mask = np.array([[True, True], [False, False]])
    got = student.call("attention", Q, K, V, mask=mask)
    expect_pair(got, ([[1.5], [0.0]], [[0.5, 0.5], [0.0, 0.0]]), OUT_W)


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


# ------------------------------------------------------------------ concat_heads

@check("concat_heads", "heads side by side, head 0 first", zh="各头并排拼接，头 0 在最前")
def _(student, _rng):
    H = np.arange(2 * 2 * 3 * 4.0).reshape(2, 2, 3, 4)  # (B, h, T, d_k)
    got = student.call("concat_heads", H)
    expected = np.concatenate([H[:, 0], H[:, 1]], axis=-1)  # (2, 3, 8)
    expect_array(got, expected, "concat_heads(H), H.shape = (2, 2, 3, 4)")
    expect_inputs_unchanged(student, "concat_heads")


@check("concat_heads", "undoes split_heads", zh="拼接是拆分的逆运算")
def _(student, _rng):
    X = np.arange(3 * 12.0).reshape(3, 12)
    heads = student.call("split_heads", X, 3)
    expect_array(student.call("concat_heads", np.asarray(heads)), X,
                 "concat_heads(split_heads(X, 3))")


# ------------------------------------------------------------------ output_projection

@check("output_projection", "C @ W_o with a non-square W_o", zh="C @ W_o，输出矩阵 W_o 不是方阵")
def _(student, _rng):
    C = np.array([[1.0, 2.0], [0.0, 1.0]])
    W_o = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    got = student.call("output_projection", C, W_o)
    expect_array(got, [[1.0, 2.0, 3.0], [0.0, 1.0, 1.0]], "output_projection(C, W_o)")
    expect_inputs_unchanged(student, "output_projection")


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
