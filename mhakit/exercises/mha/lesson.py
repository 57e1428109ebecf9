"""The notebook's content, in Chinese and English, as one list of cells.

The build turns ``LESSON`` into one notebook per language. Code cells carry no language:
they are the same in both notebooks (a test holds them to that), and what they print
follows ``mhakit_student/language.py``, which the build writes per assignment.
"""

from mhakit.authoring.lesson import Choice, Demo, Number, Task, Text, Written
from .quiz import EXPLANATIONS

INTRO = Text("intro", """\
# 多头注意力：一步一步自己实现

这份作业跟着《多头注意力》一文走：先补上词向量和点积，再用一组 Q、K、V 做注意力，看它为什么不够用，
最后把几个头拼成多头注意力。每个要实现的函数都写清了输入输出的形状、一个调用例子和一条提示。

**怎么做**：从上往下依次运行。每个函数下面有一个「自查」单元，运行它就知道哪里还不对；
还没写的函数会显示「not yet implemented」，不会报一长串错误。
没通过的自查单元会在表下面显示一段红底的短注：Validate 按钮把这一格记为 0 分。它不会打断 Run All。
显示「not run yet」，是定义这个函数的单元格还没有运行：先运行上面的单元格（或者 Run All）。
在终端里运行 `python selfcheck.py mha.ipynb` 也能自查。

**怎么评分**：评分时，你能编辑的代码单元会从上到下运行一遍，然后用随机生成的、没见过的输入检查你留下的函数。
自查用的是公开的小例子，只为了帮你找错；分数只来自隐藏检查。

评分时这些代码不在 Jupyter 内核里运行，但读法和内核一样：魔法命令（`%timeit`、`%%time`）、
`!ls` 这样的命令行和 `np.swapaxes?` 这样的帮助都可以留着。评分时它们什么也不做、不输出，
也不会报错；只有 `%time`、`%%time`、`%pylab`、`%run` 和 `%%writefile` 照常起作用（`%run`
运行的文件得由笔记本自己用 `%%writefile` 写出来，评分时才有）。答案单元里可以导入 numpy、
matplotlib（评分时画的图谁也看不到）、IPython 的模块（评分时它们什么也不做）和 Python 标准库；
导入别的包（比如 scipy），评分时那个单元会停在导入那一行，自查会提前告诉你。每个单元格最多可以
运行 30 秒，整个笔记本连同评分的检查一共最多 2 分钟。""", """\
# Multi-head attention, step by step, by hand

This assignment follows the article on multi-head attention: first word vectors and the dot
product, then attention with one set of Q, K, V and why one set is not enough, and finally
several heads put together. Every function you implement comes with its shapes, an example
call and a hint.

**How to work**: run the cells from top to bottom. Under each function, a self-check cell tells
you what is still wrong; a function you have not written yet shows "not yet implemented" rather
than a long traceback. A self-check cell that does not pass ends with a short note on a red
background: the Validate button scores that cell 0. It does not stop Run All. "not run yet" means
the cell that defines the function has not run: run the cells above it (or Run All).
`python selfcheck.py mha.ipynb` in a terminal checks the saved notebook.

**How it is graded**: the code cells you can edit run from top to bottom, then your functions are
checked on random inputs you have never seen. The self-check uses small public examples to help
you find mistakes; the grade comes from the hidden checks only.

When graded, the cells do not run in a Jupyter kernel, but they are read as a kernel reads
them: magics (`%timeit`, `%%time`), shell commands such as `!ls` and help such as
`np.swapaxes?` may stay. When graded they do nothing, print nothing and raise nothing; only
`%time`, `%%time`, `%pylab`, `%run` and `%%writefile` work as usual (a file that `%run` runs
is there when graded only if the notebook writes it itself, with `%%writefile`). Answer cells may import numpy,
matplotlib (the figures are drawn where nobody sees them), IPython's modules (which do nothing
when graded) and Python's standard library. Importing any other package (scipy, say) stops
that cell at the import when graded, and the self-check tells you so beforehand. Each cell may
run for up to 30 s, and the whole notebook, the grader's checks included, for up to 2 minutes.""")

SETUP = Demo("setup", """\
import math

import numpy as np

from selfcheck import check
from mhakit_student.exercise import plots, show""")

WORD_VECTORS = Text("about_word_vectors", """\
## 1. 先补一个基础：词向量

一个词在模型里是一串数字，叫词向量；每个数是一个维度，从一个角度描述这个词。第二篇的例子每个词只用 3 个数，
比如「法国」= [1, 1, 0]，三个数依次表示「跟语言有关」「是长大的地方」「是一个动作」。原论文里每个词有 512 个数。

意思相近的词，向量也相近：对应位置上的数一起大、一起小。把两个向量对应位置相乘再相加，就是**点积**，
相近的词点积大。第二篇给词打分靠的就是它。""", """\
## 1. First, word vectors

Inside a model, a word is a list of numbers, its word vector (word embedding); each number is one
dimension that describes the word from one angle. Part two of the series used 3 numbers per word:
法国 (France) = [1, 1, 0], meaning "about a language", "a place one grows up in", "an action".
The original Transformer paper uses 512 numbers per word.

Words with similar meanings have similar vectors: their numbers rise and fall together. Multiply
two vectors position by position and add up: that is the **dot product**, and it is large for
similar words. Part two scored words with it.""")

TASK_DOT = Text("task_dot_product", """\
**任务：`dot_product(u, v)`**

- 输入：`u`、`v` 形状都是 `(..., d)`，前面可以有任意多个批次维度。
- 输出：形状 `(...)`，`u * v` 沿最后一维加起来的和。整数向量得到整数。
- 例子：`dot_product(np.array([1, 2, 3]), np.array([4, 5, 6]))` 返回 `32`。
- 提示：`u * v` 逐个相乘，再用 `np.sum(..., axis=-1)`。""", """\
**Task: `dot_product(u, v)`**

- Input: `u` and `v`, both of shape `(..., d)`, with any number of leading batch axes.
- Output: shape `(...)`, the sum of `u * v` over the last axis. Integer vectors give an integer.
- Example: `dot_product(np.array([1, 2, 3]), np.array([4, 5, 6]))` returns `32`.
- Hint: `u * v` multiplies entry by entry; then `np.sum(..., axis=-1)`.""")

DEMO_WORDS = Demo("demo_word_vectors", "show.word_vectors(dot_product);")

ONE_SET = Text("about_one_set", """\
## 2. 一组 Q、K、V 不够用

第二篇讲的注意力有四步：用 Q 和每个 K 做点积打分；除以 √d_k；用 softmax 把分数变成加起来是 100% 的比例；
按比例把各个词的 V 混成一份。下面三个函数就是这四步。""", """\
## 2. One set of Q, K, V is not enough

Attention, as part two explained it, takes four steps: score each K against the Q with a dot
product; divide by √d_k; turn the scores into shares that add up to 100% with softmax; blend the
words' V vectors by those shares. The next three functions are those four steps.""")

TASK_SCORES = Text("task_attention_scores", """\
**任务：`attention_scores(Q, K)`**

- 输入：`Q` 形状 `(..., T_q, d_k)`，`K` 形状 `(..., T_k, d_k)`。
- 输出：形状 `(..., T_q, T_k)`，第 i 行第 j 列是第 i 个 Q 和第 j 个 K 的点积除以 √d_k。
- 例子：`Q` 和 `K` 都是 `np.ones((1, 64))` 时结果是 `[[8.]]`：点积 64，除以 √64 = 8。
- 提示：`Q @ np.swapaxes(K, -1, -2)`。除数用 `math.sqrt(d_k)`（Python 的 float）：`np.sqrt` 得到的 float64
  会把 float32 的结果变成 float64。""", """\
**Task: `attention_scores(Q, K)`**

- Input: `Q` of shape `(..., T_q, d_k)`, `K` of shape `(..., T_k, d_k)`.
- Output: shape `(..., T_q, T_k)`; entry (i, j) is query i dotted with key j, divided by √d_k.
- Example: with `Q` and `K` both `np.ones((1, 64))` the result is `[[8.]]`: 64 divided by √64 = 8.
- Hint: `Q @ np.swapaxes(K, -1, -2)`. Divide by `math.sqrt(d_k)`, a Python float: the float64
  that `np.sqrt` returns would turn a float32 result into float64.""")

DEMO_SCALE = Demo("demo_divide_by_eight", "show.divide_by_eight(attention_scores);")

TASK_SOFTMAX = Text("task_softmax", """\
**任务：`softmax(x, axis=-1)`**

- 输入：任意形状的 `x`，以及沿哪一维归一化的 `axis`。
- 输出：和 `x` 形状相同，沿 `axis` 加起来等于 1。
- 例子：`softmax(np.array([0.0, np.log(3.0)]))` 返回 `[0.25, 0.75]`。
- 提示：先减去沿 `axis` 的最大值（`keepdims=True`），结果不变，但 `np.exp(1e4)` 这样的溢出就不会发生。""", """\
**Task: `softmax(x, axis=-1)`**

- Input: `x` of any shape, and the `axis` to normalise along.
- Output: the same shape as `x`, summing to 1 along `axis`.
- Example: `softmax(np.array([0.0, np.log(3.0)]))` returns `[0.25, 0.75]`.
- Hint: subtract the maximum along `axis` first (`keepdims=True`). The result is the same, and
  `np.exp(1e4)` no longer overflows.""")

DEMO_SHARES = Demo("demo_one_hundred_percent", "show.one_hundred_percent(softmax);")

TASK_ATTENTION = Text("task_attention", """\
**任务：`attention(Q, K, V, mask=None)`**

- 输入：`Q` `(..., T_q, d_k)`，`K` `(..., T_k, d_k)`，`V` `(..., T_k, d_v)`；`mask` 是布尔数组，
  能广播成 `(..., T_q, T_k)`，True 表示「可以看」。
- 输出：`(output, weights)`，形状分别是 `(..., T_q, d_v)` 和 `(..., T_q, T_k)`。
- 例子：所有 K 都一样时，每个词分到同样的比例，`output` 的每一行就是 V 各行的平均。
- 提示：用上面两个函数。`mask` 为 False 的地方，表示这个词不许看那个键：在 softmax 之前，
  把它对这些键的分数填成 `-np.inf`。如果某个词一个键都不许看，它那一行分数全是 `-inf`，
  softmax 会得到 NaN；而这一行的输出和权重都应该是 0。办法是先用
  `mask.any(axis=-1, keepdims=True)` 找出这样的行，把它们的分数换成 0 再做 softmax，
  最后用 `np.where(mask, weights, 0.0)` 把不许看的键的权重清零。""", """\
**Task: `attention(Q, K, V, mask=None)`**

- Input: `Q` `(..., T_q, d_k)`, `K` `(..., T_k, d_k)`, `V` `(..., T_k, d_v)`; `mask` is boolean,
  broadcastable to `(..., T_q, T_k)`, True meaning "may attend".
- Output: `(output, weights)`, of shapes `(..., T_q, d_v)` and `(..., T_q, T_k)`.
- Example: when all keys are equal, every word gets the same share, and each row of `output` is
  the mean of V's rows.
- Hint: use the two functions above. Where `mask` is False, the query may not see that key:
  before the softmax, set its scores for those keys to `-np.inf`. A query that may see no key at
  all then has a row of `-inf` only, and its softmax is NaN; it should get zero output and zero
  weights instead. Find such rows with `mask.any(axis=-1, keepdims=True)`, give them scores of 0
  before the softmax, and afterwards set the weights of the keys a query may not see to zero with
  `np.where(mask, weights, 0.0)`.""")

LENDING = Text("about_lending", """\
### 小明把书借给了小红

在这句话里，「借」要同时弄清三件事：谁借出（小明）、借的什么（书）、借给谁（小红）。下面每个词的向量由我们手工设定，
分两部分：**意思**（是人、是物、是动作、是虚词，以及是小明还是小红）和**位置**（排在第几个）。
位置这部分很要紧：注意力本身看不见词序，如果向量里没有位置，「小明把书借给了小红」和「小红把书借给了小明」
就是同一堆向量。真实模型靠**位置编码**加上这份信息，那是这个系列的下一篇。

只有一组 Q、K、V 时，「借」只能发出一个 Q，注意力只好平分给三个词：""", """\
### 小明把书借给了小红 (Xiaoming lent the book to Xiaohong)

In this sentence, 借 (lend) must work out three things at once: who lends (小明), what is lent
(书, the book) and to whom (小红). Each token's vector below is set by hand and has two parts: its
**meaning** (a person, a thing, an action, a function word, and which name) and its **position**
(where it stands). The position part matters: attention by itself cannot see word order, so
without it, 小明把书借给了小红 and 小红把书借给了小明 would be the same bag of vectors. Real
models add this information with **positional encoding**, the next topic of the series.

With a single set of Q, K, V, 借 sends out one query, and its attention is shared by the three:""")

DEMO_ONE_SET = Demo("demo_one_set", "show.one_set_of_qkv(attention)\nplots.verb_bars(attention)")

ONE_SET_AFTER = Text("about_one_set_after", """\
三份 V 按差不多的比例混成了一份，「借」只知道这三个词都重要，却分不清谁借出、谁借到：
把两个名字对调，结果几乎不变。而且比例加起来只有 100%，想把一个词看清楚，别的词就顾不上了：""", """\
The three V vectors are blended in nearly equal shares. 借 learns that all three words matter, but
not who lends and who borrows: swapping the names barely changes the result. And the shares add up
to 100%, so seeing one word clearly means neglecting the others:""")

MULTI = Text("about_multi_head", """\
## 3. 多头注意力

办法是同时用好几组 Q、K、V，每组叫一个**头**，有自己的矩阵，独立做一遍上面的四步。
实现上，一个 `d_model` 宽的 Q 被**拆分**成 `num_heads` 段，每段 `d_k = d_model / num_heads` 宽，一段给一个头。
这等于把 W_q 的列按顺序切成 `num_heads` 块。文章给头编号从 1 数起；这里和代码里的下标一样从 0 数起：头 0 用最左边的 `d_k` 列，
头 1 用接下来的 `d_k` 列，依此类推。各头算完以后按顺序**拼接**（头 0 在最前面），再乘**输出矩阵** W_o。W_o 有两个作用：把拼接出来的长串变回
`d_model` 的宽度，并让各个头的信息互相配合。原论文里每个词有 512 个数，分给 8 个头，每个头 64 个数；
文章的图只画了三个头。我们的例子小一些：15 个数，3 个头，每个头 5 个数。""", """\
## 3. Multi-head attention

The fix is to run several sets of Q, K, V at once. Each set is a **head** with its own matrices,
and each runs the four steps on its own. In code, a Q of width `d_model` is **split** into
`num_heads` slices of width `d_k = d_model / num_heads`, one per head. That is the same as cutting
W_q's columns into `num_heads` blocks in order. The article numbers the heads from 1; here they are numbered
from 0, like indices in the code: head 0 uses the leftmost `d_k` columns, head 1 the next `d_k`, and so on. After attention, the
heads' results are **concatenated** in order (head 0 first) and multiplied by the **output matrix** W_o.
W_o does two jobs: it brings the long concatenation back to width `d_model`, and it lets the heads'
findings combine. In the paper, each word's 512 numbers go to 8 heads of 64; the article's figure draws three
heads. Our example is smaller: 15 numbers, 3 heads of 5.""")

TASK_SPLIT = Text("task_split_heads", """\
**任务：`split_heads(X, num_heads)`**

- 输入：`X` 形状 `(..., T, d_model)`。
- 输出：形状 `(..., num_heads, T, d_k)`；第 i 个头（从 0 数起）拿第 `i*d_k` 列到第 `(i+1)*d_k - 1` 列，即切片 `[..., i*d_k:(i+1)*d_k]`，不含第 `(i+1)*d_k` 列。
  `d_model` 不能被 `num_heads` 整除时，抛出 `ValueError`，信息里写出这两个数。
- 例子：`split_heads(np.arange(8.0).reshape(1, 8), 2)` 的形状是 `(2, 1, 4)`，头 0 是 `[[0., 1., 2., 3.]]`（T = 1，所以是一行）。
- 提示：先 `reshape` 成 `(..., T, num_heads, d_k)`，再交换倒数第二、第三维。直接 reshape 成最终形状会把数字放错地方。""", """\
**Task: `split_heads(X, num_heads)`**

- Input: `X` of shape `(..., T, d_model)`.
- Output: shape `(..., num_heads, T, d_k)`; head i (counting from 0) holds columns `i*d_k` up to but not including
  `(i+1)*d_k`: the slice `[..., i*d_k:(i+1)*d_k]`.
  If `d_model` is not divisible by `num_heads`, raise `ValueError` with both numbers in its message.
- Example: `split_heads(np.arange(8.0).reshape(1, 8), 2)` has shape `(2, 1, 4)`, and head 0 is
  `[[0., 1., 2., 3.]]` (one row, since T = 1).
- Hint: `reshape` to `(..., T, num_heads, d_k)` first, then swap the second- and third-to-last
  axes. Reshaping straight to the final shape puts numbers in the wrong places.""")

TASK_CONCAT = Text("task_concat_heads", """\
**任务：`concat_heads(H)`**

- 输入：`H` 形状 `(..., h, T, d_k)`。
- 输出：形状 `(..., T, h*d_k)`，头 0 的数在最前面：它是 `split_heads` 的逆运算。
- 例子：`concat_heads(split_heads(X, 3))` 等于 `X`。
- 提示：把 `split_heads` 的两步倒过来做。""", """\
**Task: `concat_heads(H)`**

- Input: `H` of shape `(..., h, T, d_k)`.
- Output: shape `(..., T, h*d_k)`, head 0's numbers first: the inverse of `split_heads`.
- Example: `concat_heads(split_heads(X, 3))` equals `X`.
- Hint: undo the two steps of `split_heads`, in reverse order.""")

TASK_PROJECTION = Text("task_output_projection", """\
**任务：`output_projection(C, W_o)`**

- 输入：`C` 形状 `(..., T, h*d_k)`，`W_o` 形状 `(h*d_k, d_model)`。
- 输出：`C @ W_o`，形状 `(..., T, d_model)`。
- 例子：`C = [[1, 2]]`，`W_o = [[1, 0, 1], [0, 1, 1]]` 时结果是 `[[1, 2, 3]]`。
- 提示：我们用行向量，矩阵乘在右边。""", """\
**Task: `output_projection(C, W_o)`**

- Input: `C` of shape `(..., T, h*d_k)`, `W_o` of shape `(h*d_k, d_model)`.
- Output: `C @ W_o`, of shape `(..., T, d_model)`.
- Example: with `C = [[1, 2]]` and `W_o = [[1, 0, 1], [0, 1, 1]]` the result is `[[1, 2, 3]]`.
- Hint: vectors are rows here, so the matrix multiplies on the right.""")

TASK_MHA = Text("task_multi_head_attention", """\
**任务：`multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None)`**

- 输入：`X` 形状 `(..., T, d_model)`；四个矩阵都是 `(d_model, d_model)`；`mask` 能广播成 `(..., T, T)`，
  没有「头」这一维，每个头用同一个 mask。
- 输出：`(output, weights)`，形状 `(..., T, d_model)` 和 `(..., num_heads, T, T)`。
- 例子：`num_heads = 1` 时，它等于 `attention(X @ W_q, X @ W_k, X @ W_v)` 的输出再乘 `W_o`。
- 提示：算出 Q、K、V，拆分，做注意力，拼接，乘 W_o。mask 要插入一个头的维度：`mask[..., None, :, :]`。""", """\
**Task: `multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None)`**

- Input: `X` of shape `(..., T, d_model)`; the four matrices are `(d_model, d_model)`; `mask` is
  broadcastable to `(..., T, T)` and has no head axis: every head uses the same mask.
- Output: `(output, weights)`, of shapes `(..., T, d_model)` and `(..., num_heads, T, T)`.
- Example: with `num_heads = 1` it equals the output of `attention(X @ W_q, X @ W_k, X @ W_v)`
  times `W_o`.
- Hint: compute Q, K and V, split them, run attention, concatenate, multiply by W_o. Give the mask
  a head axis: `mask[..., None, :, :]`.""")

THREE_HEADS = Text("about_three_heads", """\
### 三个头，各看一件事

还是同一个句子，这次用三个头。为了好懂，我们手工让头 0 找「谁借出」（排在最前面的词）、头 1 找「借什么」
（「把」后面的词）、头 2 找「借给谁」（最后一个词）。**真实模型里没有人这样分配**，下一节会讲。""", """\
### Three heads, one job each

The same sentence, now with three heads. For the sake of understanding, we set them by hand: head 0
finds who lends (the first word), head 1 what is lent (the word after 把), head 2 to whom (the last
word). **In a real model nobody assigns these roles**, as the next section explains.""")

DEMO_THREE = Demo("demo_three_heads", """\
show.three_heads(multi_head_attention)
plots.head_heatmaps(multi_head_attention)""")

DEMO_FLOW = Demo("demo_shape_flow",
                 "plots.shape_flow(split_heads, attention, concat_heads, output_projection)")

LEARNED = Text("about_what_heads_learn", """\
## 4. 不同的头学到了什么

上面的分工是我们手工设定的。真实模型里，每个头的矩阵一开始都是随机的，训练时各自调整，最后自己分了工，没有人指定。
2019 年，Clark 等人逐个检查了 BERT（Google 2018 年发布，12 层、每层 12 个头，共 12 × 12 = 144 个头）的头，发现：

- 有的头几乎只看前一个词，有的几乎只看后一个词；
- 有一个头让宾语找到它的动词，准确率约 87%；
- 有一个头让限定词（英文的 the、a）找到它修饰的名词，准确率约 94%；
- 有一个头处理指代，比如让「她」找到前面的「小红」。

同一年，Voita 等人发现很多头是多余的：一个翻译模型编码器的 48 个头，去掉 38 个，翻译质量只降了一点点。
干重活的是少数几个分工明确的头。下面的小实验有 6 个头（每个头 5 个数，d_model = 30），一次去掉一个，看「借」的输出变了多少
（变化的长度占输出长度的百分比）：

- 头 0、头 1、头 2 各管一个角色：谁借出、借什么、借给谁。去掉其中任何一个，输出都变 60% 左右。
- 头 3、头 4 看的词和头 0、头 1 一样，几乎是它们的翻版，可输出矩阵只给它们十分之一的分量。去掉其中一个，
  输出只变 5% 左右；也正因为分量小，去掉头 0 以后，头 3 补不回来。
- 头 5 看的是虚词「把」「给」「了」，从它们那里得不到谁、什么的信息，输出矩阵也几乎不用它。去掉它，
  输出的变化不到 1%。

六个头里有三个，单独去掉哪一个都几乎没有影响：这就是 Voita 等人说的多余的头，只是规模小得多。""", """\
## 4. What the heads learn

We set the roles above by hand. In a real model, every head's matrices start out random and
change during training, and the heads end up with different jobs that nobody assigned. In 2019,
Clark et al. inspected the heads of BERT (released by Google in 2018: 12 layers of 12 heads, so
12 × 12 = 144 heads) one by one and found:

- heads that attend almost only to the previous token, and heads for the next token;
- a head that links direct objects to their verbs, about 87% accurate;
- a head that links determiners (the, a) to their nouns, about 94% accurate;
- a head for coreference, linking "she" back to 小红, say.

The same year, Voita et al. found many heads redundant: of the 48 encoder heads of a translation
model, 38 could be removed with only a small loss of quality. A few specialised heads do the heavy
lifting. The small experiment below has six heads of 5 numbers each (d_model = 30). It removes one at a time and measures how
much 借's output changes (the change's length as a percentage of the output's length):

- Heads 0, 1 and 2 each handle one role: who lends, what is lent, to whom. Removing any one of
  them changes the output by about 60%.
- Heads 3 and 4 look at the same words as heads 0 and 1, nearly copies of them, but the output
  matrix gives them a tenth of the weight. Removing either changes the output by about 5%; and
  because their weight is so small, head 3 cannot make up for head 0 once head 0 is gone.
- Head 5 looks at the function words 把, 给 and 了, which say nothing about who or what, and the
  output matrix hardly uses it. Removing it changes the output by under 1%.

Three of the six heads can each be removed at almost no cost: they are the redundant heads Voita
et al. found, on a far smaller scale.""")

DEMO_REDUNDANT = Demo("demo_remove_heads", """\
show.remove_each_head(multi_head_attention)
plots.removal_bars(multi_head_attention)""")

COST = Text("about_cost", """\
## 5. 头多了，计算量会翻倍吗？

不会。原论文用 8 个头，每个头 64 个数，8 × 64 = 512，拼起来还是 512 个数。Q、K、V 和输出矩阵的参数、
要做的乘加次数，和一个 512 宽的头一样（下面的单元把它们数出来）。代价是每个头只有 64 个数，装的信息少一些；
可每个头只管一种关系，够用了。这也是第二篇「Q 有 64 个数就除以 8」的来历：√64 = 8。
后来的大模型沿用这个做法，比如 GPT-3 每个词 12288 个数，分成 96 个头，每个头 128 个数（12288 = 96 × 128）。""", """\
## 5. Do more heads cost more?

No. The paper uses 8 heads of 64 numbers each; 8 × 64 = 512, so the concatenation is 512 numbers
again. The parameters of Q, K, V and the output matrix, and the multiply-adds, are the same as for
a single head of width 512 (the cell below counts them). The price is that each head has only 64
numbers to work with, but each tracks a single relation, and 64 is enough. It is also where part
two's "divide by 8 when Q has 64 numbers" comes from: √64 = 8. Larger models kept the recipe:
GPT-3 has 12288 numbers per word, split into 96 heads of 128 (12288 = 96 × 128).""")

DEMO_COST = Demo("demo_cost", "show.cost(d_model=512, heads=8);")

QUIZ_INTRO = Text("about_quiz", """\
## 检验一下

选择题在代码单元里作答，比如 `quiz_1 = "B"`；数字题填数，题目要两个数时写成元组。每道选择题下面可以再用一两句话写出理由，
这部分选做，不占 100 分，由老师手工批改，可以得到加分。""", """\
## Review

Answer the multiple-choice questions in the code cells, as in `quiz_1 = "B"`; the numeric ones
with a number, or a tuple where the question asks for two. Under each multiple-choice question you may explain your choice in a sentence or two;
they are optional and outside the 100 points, and your teacher reads them and may give extra credit.""")

QUESTIONS = [
    Choice("quiz_1", "「借」只用一组 Q、K、V，同时关注小明、书和小红，会出什么问题？",
           "借 attends to 小明, 书 and 小红 with a single set of Q, K, V. What goes wrong?",
           (("计算量会变成三倍", "The computation triples"),
            ("三个词的 V 被混成一份，分不清谁借出、谁借到", "The three V vectors blend into one, "
             "so it cannot tell the lender from the borrower"),
            ("softmax 会溢出", "The softmax overflows"),
            ("词向量会变长", "The word vectors get longer"))),
    Written("written_1", "（选做）用一两句话说明理由。", "(Optional) Explain in a sentence or two.",
            model=EXPLANATIONS["quiz_1"]),
    Choice("quiz_2", "几个头各算出一份结果以后，怎么合成一份？",
           "Each head has produced a result. How are they combined into one?",
           (("取平均", "They are averaged"),
            ("只保留分数最高的头", "Only the best-scoring head is kept"),
            ("按顺序拼接，再乘输出矩阵", "They are concatenated in order, then multiplied by the "
             "output matrix"),
            ("直接相加，再加上输入（残差）", "They are added up, plus the input (the residual)"))),
    Written("written_2", "（选做）用一两句话说明理由。", "(Optional) Explain in a sentence or two.",
            model=EXPLANATIONS["quiz_2"]),
    Choice("quiz_3", "多头注意力里，每个头看什么是怎么定下来的？",
           "In multi-head attention, how is it decided what each head looks at?",
           (("工程师给每个头分配角色，比如语法头、情感头", "Engineers assign each head a role, such "
             "as a grammar head or an emotion head"),
            ("每个头固定负责句子里的一段", "Each head is fixed to one part of the sentence"),
            ("矩阵从随机开始，训练中自己学出分工", "The matrices start random and the heads learn "
             "their jobs in training"),
            ("由头在层里的编号决定", "By the head's number in the layer"))),
    Written("written_3", "（选做）用一两句话说明理由。", "(Optional) Explain in a sentence or two.",
            model=EXPLANATIONS["quiz_3"]),
    Choice("quiz_4", "原论文用 8 个头，计算量为什么和一个头差不多？",
           "The paper uses 8 heads. Why does that cost about as much as one head?",
           (("8 个头并行计算，所以时间一样", "The 8 heads run in parallel, so the time is the same"),
            ("其实贵 8 倍，只是 GPU 快", "It really costs 8 times as much; GPUs are just fast"),
            ("8 个头共用同一组矩阵", "The 8 heads share one set of matrices"),
            ("每个头只有 64 个数，8 × 64 = 512，总量和一个 512 的头一样", "Each head has 64 "
             "numbers; 8 × 64 = 512, the same total as one head of 512"))),
    Written("written_4", "（选做）用一两句话说明理由。", "(Optional) Explain in a sentence or two.",
            model=EXPLANATIONS["quiz_4"]),
    Number("quiz_5", "BERT-base 有 12 层，每层 12 个头，d_model = 768。一层里的 W_q、W_k、W_v、W_o "
           "一共有多少个参数（不算偏置）？分别写出每层 12 个头和每层只用 1 个头的情况："
           "`quiz_5 = (12 个头的参数量, 1 个头的参数量)`。",
           "BERT-base has 12 layers with 12 heads each, and d_model = 768. How many parameters "
           "do the W_q, W_k, W_v and W_o of one layer have together (no biases)? Give both "
           "cases, 12 heads in the layer and a single head: "
           "`quiz_5 = (with 12 heads, with 1 head)`."),
    Number("quiz_6", "每个头 d_k = 128 时（比如 GPT-3），点积要除以多少？保留两位小数即可：`quiz_6 = ...`。",
           "With d_k = 128 per head (as in GPT-3), what is the dot product divided by? Two decimals "
           "are enough: `quiz_6 = ...`."),
]

OUTRO = Text("about_selfcheck", """\
## 全部自查

运行下面的单元，查看所有部分的结果。""", """\
## The whole self-check

Run the cell below to see every part at once.""")

LESSON = [
    INTRO, SETUP,
    WORD_VECTORS, TASK_DOT, Task("dot_product"), DEMO_WORDS,
    ONE_SET, TASK_SCORES, Task("attention_scores"), DEMO_SCALE,
    TASK_SOFTMAX, Task("softmax"),
    TASK_ATTENTION, Task("attention"), LENDING, DEMO_ONE_SET, ONE_SET_AFTER, DEMO_SHARES,
    MULTI, TASK_SPLIT, Task("split_heads"), TASK_CONCAT, Task("concat_heads"),
    TASK_PROJECTION, Task("output_projection"), TASK_MHA, Task("multi_head_attention"),
    THREE_HEADS, DEMO_THREE, DEMO_FLOW,
    LEARNED, DEMO_REDUNDANT,
    COST, DEMO_COST,
    QUIZ_INTRO, *QUESTIONS, Task("quiz"),
    OUTRO, Demo("selfcheck_all", "check()"),
]
