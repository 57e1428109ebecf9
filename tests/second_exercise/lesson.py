"""The notebook's content, in Chinese and English, as one list of cells. Code cells are
the same in both notebooks."""

from mhakit.authoring.lesson import Choice, Demo, Number, Task, Text

INTRO = Text("intro", """\
# 加权平均：一步一步自己实现

这份小作业有三个函数：先求加权和，再把权重归一化，最后用这两个函数算加权平均。

**怎么做**：从上往下依次运行。每个函数下面有一个「自查」单元；还没写的函数会显示「not yet implemented」。
在终端里运行 `python selfcheck.py weighted.ipynb` 也能自查。

**怎么评分**：你能编辑的代码单元会从上到下运行一遍，然后用随机生成的输入检查你的函数。自查只用公开的小例子，
分数只来自隐藏检查。""", """\
# Weighted averages, step by step, by hand

This small assignment has three functions: a weighted sum, weights normalised to sum to 1,
and a weighted average built from those two.

**How to work**: run the cells from top to bottom. Under each function, a self-check cell
tells you what is still wrong; a function you have not written yet shows "not yet
implemented". `python selfcheck.py weighted.ipynb` in a terminal checks the saved notebook.

**How it is graded**: the code cells you can edit run from top to bottom, then your functions
are checked on random inputs. The self-check uses small public examples; the grade comes from
the hidden checks only.""")

SETUP = Demo("setup", """\
import numpy as np

from selfcheck import check""")

TASK_SUM = Text("task_weighted_sum", """\
**任务：`weighted_sum(x, w)`**

- 输入：`x` 形状 `(..., d)`；`w` 形状 `(..., d)`，或者 `(d,)`（每一行用同一组权重）。
- 输出：形状 `(...)`，沿最后一维求和的 `x * w`。
- 例子：`weighted_sum(np.array([2.0, 4.0, 6.0]), np.array([0.5, 0.25, 0.25]))` 返回 `3.5`。
- 提示：`np.sum(x * w, axis=-1)`。""", """\
**Task: `weighted_sum(x, w)`**

- Input: `x` of shape `(..., d)`; `w` of shape `(..., d)`, or `(d,)` for one set of weights
  used by every row.
- Output: shape `(...)`, the sum of `x * w` over the last axis.
- Example: `weighted_sum(np.array([2.0, 4.0, 6.0]), np.array([0.5, 0.25, 0.25]))` returns `3.5`.
- Hint: `np.sum(x * w, axis=-1)`.""")

TASK_NORMALISE = Text("task_normalise", """\
**任务：`normalise(x, axis=-1)`**

- 输入：元素都是正数的 `x`，以及沿哪一维归一化的 `axis`。
- 输出：和 `x` 形状相同，每个数除以它那一维的和，所以沿 `axis` 加起来等于 1。
- 例子：`normalise(np.array([1.0, 3.0]))` 返回 `[0.25, 0.75]`。
- 提示：`np.sum(x, axis=axis, keepdims=True)` 保留这一维，除法就能广播。""", """\
**Task: `normalise(x, axis=-1)`**

- Input: `x` with positive entries, and the `axis` to normalise along.
- Output: the same shape as `x`, each entry divided by the sum along `axis`, so that it sums
  to 1 along `axis`.
- Example: `normalise(np.array([1.0, 3.0]))` returns `[0.25, 0.75]`.
- Hint: `np.sum(x, axis=axis, keepdims=True)` keeps the axis, so the division broadcasts.""")

TASK_AVERAGE = Text("task_weighted_average", """\
**任务：`weighted_average(x, w)`**

- 输入：`x` 和 `w` 形状都是 `(..., d)`；`w` 是正数权重，不必加起来等于 1。
- 输出：形状 `(...)`，每个数按它的权重计入的平均。
- 例子：`weighted_average(np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 2.0]))` 返回 `2.75`：
  (1 + 2 + 8) / 4。
- 提示：用上面两个函数，先把 `w` 归一化，再求加权和。""", """\
**Task: `weighted_average(x, w)`**

- Input: `x` and `w`, both of shape `(..., d)`; `w` holds positive weights that need not sum
  to 1.
- Output: shape `(...)`, the average of x with each entry counted by its weight.
- Example: `weighted_average(np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 2.0]))` returns
  `2.75`: (1 + 2 + 8) / 4.
- Hint: use the two functions above: normalise `w` first, then take the weighted sum.""")

QUIZ_INTRO = Text("about_quiz", """\
## 检验一下

选择题在代码单元里作答，比如 `quiz_1 = "A"`；数字题填数字。""", """\
## Review

Answer the multiple-choice question in its code cell, as in `quiz_1 = "A"`, and the numeric
one with a number.""")

QUESTIONS = [
    Choice("quiz_1", "权重 [1, 1, 2] 和 [10, 10, 20] 给出同样的加权平均，为什么？",
           "The weights [1, 1, 2] and [10, 10, 20] give the same weighted average. Why?",
           (("因为 x 没有变", "Because x has not changed"),
            ("因为归一化要除以权重之和，所有权重乘同一个数，结果不变",
             "Because normalising divides by the sum of the weights, so scaling them all by "
             "the same number changes nothing"),
            ("因为权重已经加起来等于 1", "Because the weights already sum to 1"),
            ("只是巧合", "It is a coincidence"))),
    Number("quiz_2", "`weighted_average(np.array([10.0, 20.0]), np.array([3.0, 1.0]))` 是多少？"
           "`quiz_2 = ...`",
           "What is `weighted_average(np.array([10.0, 20.0]), np.array([3.0, 1.0]))`? "
           "`quiz_2 = ...`"),
]

OUTRO = Text("about_selfcheck", """\
## 全部自查

运行下面的单元，查看所有部分的结果。""", """\
## The whole self-check

Run the cell below to see every part at once.""")

LESSON = [
    INTRO, SETUP,
    TASK_SUM, Task("weighted_sum"),
    TASK_NORMALISE, Task("normalise"),
    TASK_AVERAGE, Task("weighted_average"),
    QUIZ_INTRO, *QUESTIONS, Task("quiz"),
    OUTRO, Demo("selfcheck_all", "check()"),
]
