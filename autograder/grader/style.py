"""Style notes that cost no points: a Python loop where NumPy would take the whole array.

Found by reading the answer cells with ``ast`` (parsing runs no code, so it is safe on
the grader's side), never by timing them. A loop counts when it walks a range, an array
or a zip/enumerate of them, as loops over heads or over the batch do. A loop over a
literal tuple, such as the reference's check of the four weight matrices, does not.
"""

import ast

import solutions

VECTORISED = {
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
LABEL = {"zh": "写法提示（不扣分）：", "en": "Style note (no points): "}


def _walks_data(iterable):
    """True for range(...), enumerate/zip of something, or a name or attribute (an array)."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Constant)):
        return False
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        if iterable.func.id in ("enumerate", "zip", "reversed"):
            return any(_walks_data(arg) for arg in iterable.args)
    return True  # range(...), a name, an attribute, any other call


def _loops(function):
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.AsyncFor)) and _walks_data(node.iter):
            yield node.lineno
        elif isinstance(node, ast.comprehension) and _walks_data(node.iter):
            yield node.iter.lineno
        elif isinstance(node, ast.While):
            yield node.lineno


def style_notes(cells, language="zh"):
    """{function: note} for each graded function whose last definition loops over data."""
    defined = {}
    for _, source in cells:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in solutions.FUNCTIONS:
                defined[node.name] = node  # a later cell's definition wins, as when run
    notes = {}
    for name, function in defined.items():
        lines = sorted(set(_loops(function)))
        if lines:
            where = ", ".join(str(line) for line in lines)
            loop = (f"第 {where} 行有 Python 循环；" if language == "zh"
                    else f"a Python loop (line {where}); ")
            zh, en = VECTORISED[name]
            notes[name] = LABEL[language] + loop + (zh if language == "zh" else en)
    return notes
