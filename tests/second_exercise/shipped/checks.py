"""Public checks: small fixed examples, shipped to students.

They earn no points by themselves; they explain mistakes early. Every expected value is
worked out by hand in the comment beside it, never computed by the reference.
"""

import numbers

import numpy as np

from mhakit.selfcheck.framework import (Checks, CheckFailed, NotImplementedYet, expect_array,
                         expect_inputs_unchanged)
from .wording import say

CHECKS = Checks()
check = CHECKS.add


# ------------------------------------------------------------------ weighted_sum

@check("weighted_sum", "[2, 4, 6] with weights [0.5, 0.25, 0.25] gives 3.5",
       zh="[2, 4, 6] 配权重 [0.5, 0.25, 0.25] 得到 3.5")
def _(student, _rng):
    # 2 × 0.5 + 4 × 0.25 + 6 × 0.25 = 1 + 1 + 1.5 = 3.5
    got = student.call("weighted_sum", np.array([2.0, 4.0, 6.0]), np.array([0.5, 0.25, 0.25]))
    expect_array(got, 3.5, "weighted_sum([2, 4, 6], [0.5, 0.25, 0.25])")


@check("weighted_sum", "a batch: shape (2, 3, 4) with (2, 3, 4) gives (2, 3)",
       zh="成批计算：形状 (2, 3, 4) 配 (2, 3, 4) 得到 (2, 3)")
def _(student, _rng):
    # every row: four products 1 × 0.5, summed: 2
    x, w = np.ones((2, 3, 4)), np.full((2, 3, 4), 0.5)
    got = student.call("weighted_sum", x, w)
    expect_array(got, np.full((2, 3), 2.0), "weighted_sum(x, w), x.shape = w.shape = (2, 3, 4)")
    expect_inputs_unchanged(student, "weighted_sum")


@check("weighted_sum", "one w of shape (d,) serves every row",
       zh="形状 (d,) 的一个 w 用于每一行")
def _(student, _rng):
    # [1, 2]·[1, -1] = -1, [3, 4]·[1, -1] = -1, [5, 7]·[1, -1] = -2
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    got = student.call("weighted_sum", x, np.array([1.0, -1.0]))
    expect_array(got, [-1.0, -1.0, -2.0], "weighted_sum(x, [1, -1]), x.shape = (3, 2)")


# ------------------------------------------------------------------ normalise

@check("normalise", "normalise([1, 3]) = [0.25, 0.75]", zh="normalise([1, 3]) = [0.25, 0.75]")
def _(student, _rng):
    got = student.call("normalise", np.array([1.0, 3.0]))  # 1/4 and 3/4
    expect_array(got, [0.25, 0.75], "normalise([1, 3])")


@check("normalise", "the axis argument is respected", zh="按参数 axis 指定的维归一化")
def _(student, _rng):
    x = np.array([[1.0, 3.0], [1.0, 1.0]])
    # rows: [1, 3] / 4 and [1, 1] / 2
    expect_array(student.call("normalise", x, axis=-1), [[0.25, 0.75], [0.5, 0.5]],
                 "normalise(x, axis=-1)")
    # columns: [1, 1] / 2 and [3, 1] / 4
    expect_array(student.call("normalise", x, axis=0), [[0.5, 0.75], [0.5, 0.25]],
                 "normalise(x, axis=0)")


@check("normalise", "every row of a batch sums to 1", zh="整批的每一行加起来都是 1")
def _(student, _rng):
    x = np.linspace(1.0, 4.0, 2 * 3 * 4).reshape(2, 3, 4)
    got = student.call("normalise", x)
    # shape and finiteness here (every entry lies in (0, 1)); the sums below
    got = expect_array(got, np.full((2, 3, 4), 0.5), "normalise(x), x.shape = (2, 3, 4)",
                       atol=0.5)
    sums = np.sum(got.astype(np.float64), axis=-1)
    if not np.allclose(sums, 1.0):
        raise CheckFailed(say("sums-to-one", what="normalise(x)", low=f"{np.min(sums):.3g}",
                              high=f"{np.max(sums):.3g}"))
    expect_inputs_unchanged(student, "normalise")


# ------------------------------------------------------------------ weighted_average

@check("weighted_average", "[1, 2, 4] with weights [1, 1, 2] averages to 2.75",
       zh="[1, 2, 4] 配权重 [1, 1, 2] 的加权平均是 2.75")
def _(student, _rng):
    # (1 × 1 + 2 × 1 + 4 × 2) / (1 + 1 + 2) = 11 / 4 = 2.75
    got = student.call("weighted_average", np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 2.0]))
    expect_array(got, 2.75, "weighted_average([1, 2, 4], [1, 1, 2])")


@check("weighted_average", "weights ten times larger give the same average",
       zh="权重都乘 10，平均不变")
def _(student, _rng):
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    # row 0: (1 × 1 + 2 × 3) / 4 = 1.75; row 1: (3 × 2 + 5 × 2) / 4 = 4
    for scale in (1.0, 10.0):
        w = scale * np.array([[1.0, 3.0], [2.0, 2.0]])
        got = student.call("weighted_average", x, w)
        expect_array(got, [1.75, 4.0], f"weighted_average(x, {scale:g} * w)")


@check("weighted_average", "equal weights give the plain mean, batch shape (2, 4) -> (2,)",
       zh="权重相同时就是普通平均，形状 (2, 4) 得到 (2,)")
def _(student, _rng):
    x = np.array([[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]])
    got = student.call("weighted_average", x, np.ones((2, 4)))
    expect_array(got, [1.5, 5.5], "weighted_average(x, ones), x.shape = (2, 4)")  # 6/4, 22/4
    expect_inputs_unchanged(student, "weighted_average")


# ------------------------------------------------------------------ quiz

@check("quiz", "every question is answered, in the expected form",
       zh="每道题都已作答，格式正确")
def _(student, _rng):
    answers = {q: student.variable(q) for q in ("quiz_1", "quiz_2")}
    missing = [q for q, answer in answers.items() if answer is None]
    if len(missing) == len(answers):
        raise NotImplementedYet(say("quiz-not-started"))
    if missing:
        raise CheckFailed(say("quiz-unanswered", names=", ".join(missing)))
    choice = answers["quiz_1"]
    if not isinstance(choice, str) or choice.strip().upper() not in ("A", "B", "C", "D"):
        raise CheckFailed(say("quiz-choice", choices="A, B, C, D"))
    number = answers["quiz_2"]
    if not isinstance(number, numbers.Real) or isinstance(number, bool):
        raise CheckFailed(say("quiz-number"))
