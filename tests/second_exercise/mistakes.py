"""The catalogue of common mistakes: each one a deliberately wrong variant of a function.

The grader names a mistake when one of these gives the student's output; the self-check
gets only their fingerprints. This module never ships to students.
"""

import numpy as np

from mhakit.grader.diagnosis import Mistake

from . import reference as ref


def _normalise_other_axis(x, axis=-1):
    x = np.asarray(x)
    others = [a for a in range(x.ndim) if a != axis % x.ndim]
    if not others:
        raise ValueError("no other axis")
    return ref.normalise(x, axis=others[-1])


CATALOGUE = {
    "weighted_sum": [
        Mistake("weighted_sum/no-sum", lambda x, w: np.asarray(x) * np.asarray(w),
                "逐项相乘之后还要沿最后一维加起来：每一行的结果是一个数。",
                "The products still have to be summed over the last axis: each row gives "
                "one number."),
        Mistake("weighted_sum/sum-over-everything",
                lambda x, w: np.sum(np.asarray(x) * np.asarray(w)),
                "只沿最后一维求和（axis=-1）；把所有元素加在一起，整批就变成了一个数。",
                "Sum over the last axis only (axis=-1); summing everything turns a whole "
                "batch into one number."),
        Mistake("weighted_sum/weights-ignored", lambda x, w: np.sum(np.asarray(x), axis=-1),
                "权重没有用上：先把 x 和 w 逐项相乘，再求和。",
                "The weights are not used: multiply x by w entry by entry, then sum."),
    ],
    "normalise": [
        Mistake("normalise/whole-array", lambda x, axis=-1: np.asarray(x) / np.sum(x),
                "除以的是整个数组的和：只沿 axis 求和，并用 keepdims=True 保留这一维。",
                "This divides by the sum of the whole array: sum along `axis` only, with "
                "keepdims=True."),
        Mistake("normalise/wrong-axis", _normalise_other_axis,
                "沿着错误的轴归一化了：用参数 axis 指定的那一维。",
                "Normalised along the wrong axis: use the axis that `axis` names."),
        Mistake("normalise/divided-by-count",
                lambda x, axis=-1: np.asarray(x) / np.asarray(x).shape[axis],
                "除以的是元素个数，应该除以它们的和。",
                "This divides by the number of entries; divide by their sum."),
    ],
    "weighted_average": [
        Mistake("weighted_average/weights-not-normalised",
                lambda x, w: ref.weighted_sum(x, w),
                "权重还没有归一化：先用 normalise(w) 让它们加起来等于 1，再求加权和。",
                "The weights are not normalised: make them sum to 1 with normalise(w) "
                "before the weighted sum."),
        Mistake("weighted_average/plain-mean", lambda x, w: np.mean(np.asarray(x), axis=-1),
                "这是普通平均，权重没有用上。",
                "This is the plain mean: the weights are not used."),
        Mistake("weighted_average/divided-by-count",
                lambda x, w: ref.weighted_sum(x, w) / np.asarray(w).shape[-1],
                "加权和要除以权重之和，不是除以元素个数。",
                "Divide the weighted sum by the sum of the weights, not by the number of "
                "entries."),
    ],
}
