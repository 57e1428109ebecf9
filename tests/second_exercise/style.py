"""How each function is written without a Python loop: the style note's hint (no points),
and the words the grader tells a loop over the batch by."""

HEAD_COUNTS = ()  # this exercise has no heads
BATCHED = ("x", "w")  # arrays with leading batch axes

HINTS = {
    "weighted_sum": ("x * w 逐项相乘，再用 np.sum(..., axis=-1)，一次算完整批。",
                     "x * w multiplies entry by entry, then np.sum(..., axis=-1) does the "
                     "whole batch at once."),
    "normalise": ("np.sum 配上 axis=axis 和 keepdims=True，所有行一起除。",
                  "np.sum with axis=axis and keepdims=True divides every row at once."),
    "weighted_average": ("用上面两个函数：normalise 和 weighted_sum 都能处理整批。",
                         "use the two functions above: normalise and weighted_sum both take "
                         "the whole batch."),
}
