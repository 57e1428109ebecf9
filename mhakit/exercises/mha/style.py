"""How each function is written without a Python loop: the hint of the style note (no
points) that the grader adds where an answer loops over heads or batch items
(mhakit/grader/style.py), and the words it tells such a loop by."""

# The parameters that hold a number of heads: range(num_heads) walks the heads.
HEAD_COUNTS = ("num_heads",)
# The parameters that hold arrays with leading batch (or head) axes: a loop over one of
# them, over its shape's lengths or over its pieces walks batch items or heads. The
# weight matrices are not here: their axes are the model's widths.
BATCHED = ("u", "v", "Q", "K", "V", "x", "X", "H", "C", "mask")

HINTS = {
    "dot_product": ("把两个数组逐项相乘，再沿最后一维求和，一次算完整批。",
                    "multiply the arrays elementwise and sum over the last axis: one "
                    "expression for the whole batch."),
    "attention_scores": ("@ 会对前面所有的批次轴一起做矩阵乘法，把 K 的最后两维用 np.swapaxes 交换即可。",
                         "@ multiplies whole stacks of matrices at once; swap K's last two "
                         "axes with np.swapaxes."),
    "softmax": ("np.max、np.exp 和 np.sum 配上 axis=axis、keepdims=True，所有行一起算。",
                "np.max, np.exp and np.sum with axis=axis and keepdims=True treat all rows "
                "at once."),
    "attention": ("@ 会处理整叠矩阵，掩码用 np.where 一次加上。",
                  "@ handles whole stacks of matrices, and np.where applies the mask in one go."),
    "split_heads": ("一次 reshape 加一次 np.swapaxes 就能得到所有头，不必逐个头循环。",
                    "one reshape and one np.swapaxes give every head at once, without a loop "
                    "over heads."),
    "concat_heads": ("一次 np.swapaxes 加一次 reshape 就能拼好所有头。",
                     "one np.swapaxes and one reshape join every head at once."),
    "output_projection": ("@ 对任意多的前导轴都适用。", "@ works with any number of leading axes."),
    "multi_head_attention": ("split_heads 一次给出所有头，attention 能直接处理 (..., h, T, d_k) 整叠。",
                             "split_heads gives all heads at once, and attention takes the whole "
                             "(..., h, T, d_k) stack."),
}
