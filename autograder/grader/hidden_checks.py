"""Hidden checks: the student's functions against the reference on fresh random inputs.

Every function gets the same four checks, fed by its own case generators:
values on random non-square inputs, edge cases, float32 in and out, and inputs left
unchanged (also when read-only). Only the first two can be passed by correct numbers
alone; the last two pay only when the numbers are right too, so a right dtype or an
untouched input earns nothing by itself.

Each call swaps the student's *other* contract functions for stand-ins that return the
reference result, so one broken softmax costs softmax's points only. Composite
functions also get a 0-point check with the student's own pieces, for feedback.
"""

import numpy as np

import solutions

from .mistakes import diagnose
from ..selfcheck.fingerprints import with_mistake
from ..selfcheck.framework import (HIDDEN, CheckFailed, check, expect_array,
                               expect_inputs_unchanged, kind_with_length)
from ..selfcheck.wording import language, pick, say, shapes_of
from ..sandbox.sanitize import numbers_of, shown_against, student_text

# Points per function and how they split over the four checks.
POINTS = {
    "dot_product": (3, 1, 1, 1),
    "attention_scores": (6, 2, 1, 1),
    "softmax": (7, 3, 1, 1),
    "attention": (10, 3, 1, 2),
    "split_heads": (6, 2, 1, 1),
    "concat_heads": (5, 1, 1, 1),
    "output_projection": (3, 1, 1, 1),
    "multi_head_attention": (12, 4, 2, 2),
}
PAIRS = {"attention": ("output", "weights"), "multi_head_attention": ("output", "weights")}
TOLERANCE = {np.dtype(np.float64): dict(rtol=1e-6, atol=1e-9),
             np.dtype(np.float32): dict(rtol=2e-4, atol=1e-5)}


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _distinct(rng, *shape):
    """Distinct values in random order: any transposed or misplaced entry shows."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)


def _mask(rng, *shape, allow_empty_rows=True):
    mask = rng.random(shape) < 0.6
    if not allow_empty_rows:
        mask[..., 0] = True
    return mask


def _heads(rng):
    """(num_heads, d_k) with num_heads > 1, d_k != num_heads and d_k != num_heads²: else
    dividing the scores by num_heads would equal dividing by √d_k."""
    h = int(rng.integers(2, 5))
    d_k = int(rng.choice([d for d in range(2, 7) if d not in (h, h * h)]))
    return h, d_k


# ----------------------------------------------------------- case generators
# Each returns a list of (args, kwargs). B >= 2, T_q != T_k, d_model != T.

def cases_dot_product(rng, edge):
    if edge:
        return [((_normal(rng, 1), _normal(rng, 1)), {}),
                ((_normal(rng, 6), _normal(rng, 6)), {}),
                ((_normal(rng, 2, 3, 4, 1), _normal(rng, 2, 3, 4, 1)), {})]
    d = int(rng.integers(3, 9))
    return [((_normal(rng, d), _normal(rng, d)), {}),
            ((_normal(rng, 5, d), _normal(rng, 5, d)), {}),
            ((_normal(rng, 3, 4, d), _normal(rng, 3, 4, d)), {})]


def cases_attention_scores(rng, edge):
    if edge:
        return [((_normal(rng, 1, 5), _normal(rng, 3, 5)), {}),
                ((_normal(rng, 2, 4, 1), _normal(rng, 2, 1, 1)), {}),
                ((_normal(rng, 3, 1, 1), _normal(rng, 3, 2, 1)), {})]
    B, T_q, T_k, d_k = 2, 3, 5, 4 + int(rng.integers(0, 4))
    return [((_normal(rng, T_q, d_k), _normal(rng, T_k, d_k)), {}),
            ((_normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k)), {}),
            ((_normal(rng, B, 3, T_k, d_k), _normal(rng, B, 3, T_q, d_k)), {})]


def cases_softmax(rng, edge):
    if edge:
        big = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4], [5e3, 5e3, -2e3]])
        return [((rng.permutation(big.ravel()).reshape(3, 3) * rng.choice([-1, 1]),), {}),
                ((_normal(rng, 1),), {}),
                ((np.full((2, 3), float(rng.normal())),), {}),
                ((3 * _normal(rng, 4, 2, 3),), {"axis": 1})]
    return [((3 * _normal(rng, 7),), {}),
            ((3 * _normal(rng, 4, 6),), {}),
            ((3 * _normal(rng, 4, 6),), {"axis": 0}),
            ((3 * _normal(rng, 2, 3, 5),), {"axis": -2})]


def cases_attention(rng, edge):
    B, T_q, T_k, d_k, d_v = 2, 3, 5, 4, 6
    if edge:
        return [((_normal(rng, 1, d_k), _normal(rng, 1, d_k), _normal(rng, 1, d_v)), {}),
                ((_normal(rng, 2, d_k), _normal(rng, 4, d_k), _normal(rng, 4, 1)),
                 {"mask": np.array([[True, False, True, False], [False] * 4])}),
                ((_normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k), _normal(rng, B, T_k, d_v)),
                 {"mask": np.zeros((B, T_q, T_k), dtype=bool)})]
    Q, K, V = _normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k), _normal(rng, B, T_k, d_v)
    causal = np.tril(np.ones((T_q, T_k), dtype=bool))
    return [((Q, K, V), {}),
            ((Q, K, V), {"mask": causal}),
            ((Q, K, V), {"mask": _mask(rng, B, T_q, T_k)}),
            ((Q[0], K[0], V[0]), {"mask": _mask(rng, T_q, T_k, allow_empty_rows=False)})]


def cases_split_heads(rng, edge):
    h, d_k = _heads(rng)
    if edge:
        return [((_distinct(rng, 4, 6), 1), {}),
                ((_distinct(rng, 2, 4, 6), 6), {}),
                ((_distinct(rng, 2, 1, h * d_k), h), {})]
    return [((_distinct(rng, 3, 5, h * d_k), h), {}),
            ((_distinct(rng, 5, h * d_k), h), {}),
            ((_distinct(rng, 2, 3, 4, h * d_k), h), {})]


def cases_concat_heads(rng, edge):
    h, d_k = _heads(rng)
    if edge:
        return [((_distinct(rng, 2, 1, 4, 3),), {}),
                ((_distinct(rng, 2, 5, 4, 1),), {}),
                ((_distinct(rng, h, 1, d_k),), {})]
    return [((_distinct(rng, 3, h, 5, d_k),), {}),
            ((_distinct(rng, h, 5, d_k),), {}),
            ((_distinct(rng, 2, 3, h, 4, d_k),), {})]


def cases_output_projection(rng, edge):
    h, d_k = _heads(rng)
    width, d_model = h * d_k, h * d_k + 3
    if edge:  # the square W_o first: there a transposed W_o gives numbers, not an error
        return [((_normal(rng, 2, 3, width), _normal(rng, width, width)), {}),
                ((_normal(rng, 1, width), _normal(rng, width, d_model)), {})]
    return [((_normal(rng, 3, 5, width), _normal(rng, width, d_model)), {}),
            ((_normal(rng, 5, width), _normal(rng, width, d_model)), {})]


def _mha_args(rng, B, T, h, d_k):
    d_model = h * d_k
    X = _normal(rng, *B, T, d_model)
    weights = [_normal(rng, d_model, d_model) / np.sqrt(d_model) for _ in range(4)]
    return (X, *weights, h)


def cases_multi_head_attention(rng, edge):
    h, d_k = _heads(rng)
    B, T = 2, 5
    if edge:
        return [(_mha_args(rng, (B,), 1, h, d_k), {}),
                (_mha_args(rng, (B,), T, 1, 6), {}),
                (_mha_args(rng, (B,), T, 6, 1), {}),
                (_mha_args(rng, (), T, h, d_k), {"mask": np.zeros((T, T), dtype=bool)})]
    return [(_mha_args(rng, (B,), T, h, d_k), {}),
            (_mha_args(rng, (B,), T, h, d_k), {"mask": np.tril(np.ones((T, T), dtype=bool))}),
            (_mha_args(rng, (B,), T, h, d_k), {"mask": _mask(rng, B, T, T)}),
            (_mha_args(rng, (), T, h, d_k), {})]


CASES = {name: globals()[f"cases_{name}"] for name in POINTS}


# ----------------------------------------------------------- comparing one call

def _as_float32(value):
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(np.float32)
    return value


def compare(student, name, args, kwargs, stand_ins=True, check_dtype=False, readonly=False):
    """Shape, dtype and values of one call against the reference; a wrong value is
    compared with the catalogue of common mistakes, which may name it.

    What the returned value chose, its shape or its length, is shown only in the call's
    public numbers (sanitize.shape_text), and a failure to read it only sanitised: a
    submission could otherwise write its hidden inputs into its own feedback."""
    expected = getattr(solutions, name)(*args, **kwargs)
    got = student.call(name, *args, stand_ins=stand_ins, readonly=readonly, **kwargs)
    dtype = np.result_type(*[a for a in args if isinstance(a, np.ndarray)])
    tolerance = TOLERANCE.get(dtype, TOLERANCE[np.dtype(np.float64)])
    shapes = shapes_of([a for a in args if isinstance(a, np.ndarray)])
    show = shown_against(args, kwargs, expected)
    try:
        try:
            _expect(got, expected, name, shapes, dict(tolerance, check_dtype=check_dtype), show)
        except CheckFailed as failure:
            mistake = None if failure.tags else diagnose(name, args, kwargs, got, tolerance)
            if mistake is None:
                raise
            raise CheckFailed(with_mistake(failure, mistake.text(language()), language()),
                              tags=(mistake.id,)) from None
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - numpy's words about a value the child chose
        raise CheckFailed(say("unchecked", error=student_text(
            f"{type(error).__name__}: {error}", numbers_of(args, kwargs, expected)))) from None


def _expect(got, expected, name, shapes, tol, show):
    if name in PAIRS:
        first, second = PAIRS[name]
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(say("expected-pair-for-inputs", shapes=shapes, first=first,
                                  second=second, kind=kind_with_length(got, show)))
        for g, e, part in zip(got, expected, PAIRS[name]):
            expect_array(g, e, say("for-inputs", part=part, shapes=shapes), show=show, **tol)
    else:
        expect_array(got, expected, say("for-inputs", part=say("the-result"), shapes=shapes),
                     show=show, **tol)


# ----------------------------------------------------------- the four checks

def _register(name, points):
    values, edge, float32, inputs = points
    cases = CASES[name]

    @check(name, "matches the reference on random inputs", values, HIDDEN,
           zh="随机输入上与参考答案一致")
    def _values(student, rng):
        for args, kwargs in cases(rng, edge=False):
            compare(student, name, args, kwargs)

    @check(name, "edge cases", edge, HIDDEN, zh="边界情况")
    def _edge(student, rng):
        for args, kwargs in cases(rng, edge=True):
            compare(student, name, args, kwargs)

    @check(name, "float32 in, float32 out", float32, HIDDEN, zh="输入 float32，输出也是 float32")
    def _float32(student, rng):
        for args, kwargs in cases(rng, edge=False):
            compare(student, name, tuple(_as_float32(a) for a in args), kwargs, check_dtype=True)

    @check(name, "leaves its inputs unchanged, also when they are read-only", inputs, HIDDEN,
           zh="不修改输入，输入只读时也能算")
    def _inputs(student, rng):
        # Every random case, so that this check too pays only for correct values; one
        # read-only call is enough, as any write into a read-only input raises.
        for number, (args, kwargs) in enumerate(cases(rng, edge=False)):
            compare(student, name, args, kwargs)
            expect_inputs_unchanged(student, name)
            if number == 0:
                compare(student, name, args, kwargs, readonly=True)

    if name in ("attention", "multi_head_attention"):
        @check(name, "also right with your own pieces (no points: feedback only)", 0, HIDDEN,
               zh="换成你自己写的各个函数也对（不计分，只作反馈）")
        def _own_pieces(student, rng):
            for args, kwargs in cases(rng, edge=False):
                compare(student, name, args, kwargs, stand_ins=False)


for _name, _points in POINTS.items():
    _register(_name, _points)


# ----------------------------------------------------------- the quiz

# The answer keys live here only: never in the released notebook or the self-check.
QUIZ_KEY = {"quiz_1": "B", "quiz_2": "C", "quiz_3": "C", "quiz_4": "D",
            "quiz_5": (1_048_576, 1_048_576), "quiz_6": 11.3137}
# Shown in the feedback after grading, right or wrong, in the notebook's language; also
# the model answers of the written questions.
QUIZ_EXPLANATIONS = {
    "quiz_1": {
        "zh": "一个 softmax 把三份 V 按比例混成一份，「借」分不清谁借出、谁借到；对调人名，"
              "结果几乎不变。",
        "en": "One softmax blends the three V vectors into one, so 借 cannot tell the lender "
              "from the borrower; swapping the names barely changes the result.",
    },
    "quiz_2": {
        "zh": "按顺序拼接（头 1 在前），再乘输出矩阵 W_o：变回 d_model 宽，"
              "并让各头的信息配合。残差连接属于外面的 Transformer 层，不属于拼接。",
        "en": "Concatenated in order (head 1 first), then multiplied by W_o, which restores "
              "the width d_model and combines the heads. The residual connection belongs to the "
              "surrounding Transformer layer, not to the concat.",
    },
    "quiz_3": {
        "zh": "没有人分配：矩阵从随机开始，训练中各自学出分工，很多头还是多余的。",
        "en": "Nobody assigns them: the matrices start random and the heads specialise during "
              "training; many turn out redundant.",
    },
    "quiz_4": {
        "zh": "8 × 64 = 512：参数和乘加次数都和一个 512 宽的头相同，只是分给了 8 个"
              "各管一种关系的头。",
        "en": "8 × 64 = 512: the parameters and multiply-adds equal one head of width 512, "
              "shared by 8 heads that each track one relation.",
    },
    "quiz_5": {
        "zh": "4 × 512 × 512 = 1,048,576，两种情况一样：拆成头只是把同样的列分组。",
        "en": "4 × 512 × 512 = 1,048,576 in both cases: splitting into heads only groups the "
              "same columns.",
    },
    "quiz_6": {
        "zh": "√128 ≈ 11.31。",
        "en": "√128 ≈ 11.31.",
    },
}
QUIZ_POINTS = {name: 2 for name in QUIZ_KEY}


def _right(variable, answer):
    key = QUIZ_KEY[variable]
    if isinstance(key, str):
        return isinstance(answer, str) and answer.strip().upper() == key
    if isinstance(key, tuple):
        return (isinstance(answer, (tuple, list)) and len(answer) == len(key)
                and all(_right_number(a, k) for a, k in zip(answer, key)))
    return _right_number(answer, key, tolerance=0.01)


def _right_number(answer, key, tolerance=0.5):
    return (isinstance(answer, (int, float, np.integer, np.floating))
            and not isinstance(answer, bool) and abs(float(answer) - key) <= tolerance)


def _register_question(number, variable):
    @check("quiz", f"question {number}", QUIZ_POINTS[variable], HIDDEN, zh=f"第 {number} 题")
    def _question(student, _rng):
        explanation = pick(QUIZ_EXPLANATIONS[variable])
        if not _right(variable, student.variable(variable)):
            raise CheckFailed(say("quiz-wrong", explanation=explanation))
        return explanation


for _number, _variable in enumerate(QUIZ_KEY, start=1):
    _register_question(_number, _variable)


TOTAL_POINTS = sum(sum(p) for p in POINTS.values()) + sum(QUIZ_POINTS.values())
assert TOTAL_POINTS == 100, TOTAL_POINTS
