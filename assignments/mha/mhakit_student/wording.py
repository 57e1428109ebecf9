"""The feedback's words, in Chinese and in English, with the same meaning in both.

Every message a check gives is made by a ``Words``' ``say``: the engine's own here, an
exercise's in its shipped package. It speaks the language ``language()`` decides: the
release's (``language.LANGUAGE``, which the build writes), unless the grader, which grades
both releases, chooses one with ``speaking``. ``decide`` is the one place that picks a
language from what a caller, a notebook and the release say.
"""

import contextlib
import contextvars

from .language import LANGUAGE

LANGUAGES = ("zh", "en")
_current = contextvars.ContextVar("mhakit_language", default=LANGUAGE)

# key -> (Chinese, English). Fields in braces are filled in by ``say``.
TEXTS = {
    # comparing a result: shape first, then dtype, then values
    "returned-none": ("{what} 是 None：函数最后是不是少了 `return`？",
                      "{what} is None: does the function end with `return`?"),
    "not-an-array": ("{what} 是{kind}，应该是 NumPy 数组",
                     "{what} is {kind}, expected a NumPy array"),
    "list-not-array": ("{what} 是 Python 列表（list），应该直接返回 NumPy 数组，不要转成列表",
                       "{what} is a Python list; return the NumPy array itself, not a list"),
    "tuple-not-array": ("{what} 是有 {count} 项的元组，应该是一个数组",
                        "{what} is a tuple of {count} items, expected one array"),
    "wrong-shape": ("{what} 的形状是 {got}，应该是 {expected}",
                    "{what} has shape {got}, expected {expected}"),
    "not-real": ("{what} 的 dtype 是 {got}，应该是实数",
                 "{what} has dtype {got}, expected real numbers"),
    "wrong-dtype": ("{what} 的 dtype 是 {got}，应该是 {expected}（{expected} 的输入应该得到 "
                    "{expected} 的结果）",
                    "{what} has dtype {got}, expected {expected} (a {expected} input should "
                    "give a {expected} result)"),
    "not-finite": ("{what} 有 {share} 的元素是 NaN 或 inf",
                   "{what} contains NaN or inf in {share} of its entries"),
    "wrong-values": ("{what} 形状对，数值不对：{share} 的元素有偏差，最大相对误差 {error}",
                     "{what} has the right shape but wrong values: {share} of entries are "
                     "off, largest relative error {error}"),
    "not-a-pair": ("应该返回一对 ({first}, {second})，实际返回的是 {kind}",
                   "expected a pair ({first}, {second}), got {kind}"),
    "of-length": ("{kind}（长度 {count}）", "{kind} of length {count}"),
    "a-string": ("字符串，或不是普通数值的对象", "a str, or an object that is not a plain value"),
    "input-modified": ("{name} 原地修改了一个输入：请在副本上计算，或者新建数组",
                       "{name} modified one of its inputs in place; work on a copy or build "
                       "a new array instead"),
    "for-inputs": ("输入形状为 {shapes} 时，{part}", "{part} for inputs of shape {shapes}"),
    "the-result": ("结果", "the result"),
    "and": (" 和 ", " and "),
    "expected-pair-for-inputs": ("输入形状为 {shapes} 时，应该返回一对 ({first}, {second})，"
                                 "实际返回的是 {kind}",
                                 "for inputs of shape {shapes}, expected a pair ({first}, "
                                 "{second}), got {kind}"),
    # calling the student's function
    "not-defined": ("{name} 还没有定义", "{name} is not defined"),
    "not-implemented": ("{name} 还没有实现（它还是 raise NotImplementedError）",
                        "{name} is not implemented yet (it still raises NotImplementedError)"),
    # not run yet (the self-check in the kernel): a name the check needs is not defined,
    # because the cell that defines it has not run; not the same as not written yet
    "not-run": ("{name} 还没有定义：定义它的单元格还没有运行。先运行那个单元格（或者用 Run All "
                "从头运行全部单元格），再运行这一格",
                "{name} is not defined yet: the cell that defines it has not run. Run that "
                "cell (or Run All, which runs every cell from the top), then this one again"),
    "piece-not-run": ("{name} 用到了 {missing}，而 {missing} 还没有定义：定义它的单元格还没有"
                      "运行。先运行那个单元格（或者用 Run All 从头运行全部单元格），再运行这一格",
                      "{name} uses {missing}, which is not defined yet: the cell that defines "
                      "it has not run. Run that cell (or Run All, which runs every cell from "
                      "the top), then this one again"),
    # the same in selfcheck.py, which runs every cell of the saved notebook
    "not-in-saved": ("保存的笔记本里没有定义 {name}：要么定义它的单元格在定义之前就出错停下了"
                     "（上面「did not run」那一行会说是哪一格），要么定义它的那一行被删掉或改了名",
                     "the saved notebook does not define {name}: either the cell that "
                     "defines it stopped with an error before it (a \"did not run\" line "
                     "above names the cell), or its definition was removed or renamed"),
    "piece-not-in-saved": ("{name} 用到了 {missing}，而保存的笔记本里没有定义 {missing}：要么"
                           "定义它的单元格在定义之前就出错停下了（上面「did not run」那一行会说"
                           "是哪一格），要么定义它的那一行被删掉或改了名",
                           "{name} uses {missing}, which the saved notebook does not define: "
                           "either the cell that defines it stopped with an error before it "
                           "(a \"did not run\" line above names the cell), or its definition "
                           "was removed or renamed"),
    # a check of one function that runs another of the student's functions first
    "piece-wrong": ("这一项检查先用了你的 {piece}，而 {call} 的结果不对（{piece} 自己的检查会说"
                    "错在哪里），所以这里还判断不了 {name}：先改好 {piece}",
                    "this check runs your {piece} first, and {call} gives a wrong result "
                    "({piece}'s own checks say what is wrong), so it cannot judge {name} yet: "
                    "fix {piece} first"),
    "raised": ("{name} 抛出了异常 {error}", "{name} raised {error}"),
    "unchecked": ("无法检查这个结果（{error}）", "the result could not be checked ({error})"),
    "all-pass": ("{count}/{count} 项检查通过", "{count}/{count} checks"),
    "quiz-answered": ("每道题都已作答；答案不随作业发放，提交后评分时才判对错",
                      "every question has an answer; graded later, since the key is not "
                      "shipped with the assignment"),
    # check("<part>")'s note on stderr, which the Validate button scores 0: a line for each
    # part that is not done, then what Validate makes of it. What is wrong is in the table
    # above it and is not said again. nbgrader validate cuts longer lines at 87 columns.
    "validate-scores-zero": ("Validate 按钮把这一格记为 0 分。",
                             "The Validate button scores this cell 0."),
    "cell-failed": ("{name} 没有通过（原因见这一格输出的表）。",
                    "{name} failed (this cell's table says why)."),
    "cell-not-written": ("{name} 还没有实现。", "{name} is not implemented yet."),
    "cell-not-answered": ("{name} 还没有作答。", "{name} is not answered yet."),
    "cell-not-run": ("{name} 还没有运行：先运行上面的单元格（或者用 Run All）。",
                     "{name} has not run yet: run the cells above first (or Run All)."),
    # the table's first failure: the check, named as a check, then what it found
    "failed-check": ("检查「{check}」没有通过：{message}", "the check “{check}” failed: {message}"),
    "too-much-ipython": ("整个笔记本的 IPython 命令多得评分时读不完（这个单元格有 {lines} 行）；"
                         "删掉用不着的魔法命令和 ! 命令", "the notebook holds more IPython commands "
                         "than grading reads (this cell has {lines} lines of them); remove the "
                         "magics and ! commands it does not need"),
    # an import that grading cannot honour ({offered}: what it does offer, listed)
    "imports-row": ("导入 imports", "imports"),
    "foreign-import": ("评分时没有 {modules}：评分只提供 Python 标准库和 {offered}。"
                       "导入它的单元格会停在导入那一行，之后定义的函数评分时不存在，"
                       "在函数里导入的，函数一运行就出错（{where}）",
                       "{modules} will not be there when graded, which offers only the "
                       "standard library and {offered}: a cell that imports it stops at "
                       "that line, so what it defines after it is lost, and a function that "
                       "imports it fails when called ({where})"),
    "foreign-import-lost": ("{cell} 第 {line} 行导入了 {module}，评分时没有这个包（只有 Python "
                            "标准库和 {offered}）：单元格停在那一行，所以评分时 {name} "
                            "没有定义",
                            "{cell} imports {module} on line {line}, which grading does not "
                            "offer (only the standard library and {offered}): the cell "
                            "stopped there, so {name} was not defined when graded"),
    "foreign-import-called": ("{name} 一运行就导入 {module}，评分时没有这个包（只有 Python "
                              "标准库和 {offered}），所以每次调用都出错",
                              "{name} imports {module} when it runs, which grading does not "
                              "offer (only the standard library and {offered}), so every "
                              "call of it failed"),
    # a child process lost while grading: "{gone}" is one of the "gone-" phrases
    "gone": ("代码{gone}", "the code {gone}"),
    "gone-while-loading": ("运行答案单元时，代码{gone}",
                           "while running the answer cells, the code {gone}"),
    "not-run-again": ("{name}：不再运行，因为它{gone}", "{name}: not run again, since it {gone}"),
    "crashed-too-often": ("没有运行：代码让评分进程崩溃的次数太多（{last}）",
                          "not run: the code crashed the grading process too often ({last})"),
    "gone-too-slow": ("运行超过了 {seconds} 秒", "took longer than {seconds} s"),
    "gone-submission-too-slow": ("用完了整份作业可运行的 {seconds} 秒",
                                 "used up the {seconds} s that a whole submission may run"),
    "gone-killed": ("被信号 {signal} 终止（内存或 CPU 时间用完了？）",
                    "was killed by signal {signal} (out of memory or CPU time?)"),
    "gone-exited": ("结束了 Python 进程", "ended the Python process"),
    "gone-exit-code": ("结束了 Python 进程（退出码 {code}）",
                       "ended the Python process (exit code {code})"),
    "gone-silent": ("不再回应", "stopped answering"),
    "gone-not-reading": ("不再读取评分程序的请求", "stopped reading its requests"),
    "gone-too-large": ("发回的结果超过了评分程序接受的大小",
                       "sent a reply larger than the grader accepts"),
    "gone-protocol": ("违反了评分协议", "broke the grading protocol"),
    "gone-no-jail": ("无法在隔离环境里启动（评分机器的问题）",
                     "could not be started inside the jail (a problem of the grading machine)"),
    "quiz-wrong": ("不对。{explanation}", "not correct. {explanation}"),
    # structural diagnoses (structure.py): what a wrong result's shape of error says.
    # They name sizes and axes, never a number of the inputs.
    "structure-of-part": ("{part}：{text}", "{part}: {text}"),
    "structure-result-number": ("第 {number} 个结果", "result {number}"),
    "structure-factor": ("每个数都差同一个倍数：{phrase}。",
                         "Every entry is off by the same factor: {phrase}."),
    "structure-factor-ambiguous": ("每个数都差同一个倍数：{phrases}（这几个量在这组输入上恰好"
                                   "相等，分不出是哪一个）。",
                                   "Every entry is off by the same factor: {phrases} (these "
                                   "are equal on these inputs, so the check cannot tell which)."),
    "structure-or": ("；或者", "; or "),
    "structure-factor-unknown": ("每个数都差同一个倍数，但它不等于这次调用的任何一个尺寸"
                                 "（{sizes}）。可能是多了或少了一步缩放、缩放用错了量；也可能是"
                                 "前面某一步在这组输入上处处错得一样（输入里的数都相等时，很多"
                                 "错误看起来都只差一个倍数）。",
                                 "Every entry is off by the same factor, which equals none of "
                                 "this call's sizes ({sizes}). A scaling step too many, missing "
                                 "or by the wrong amount does this; so does an earlier step that "
                                 "is off alike everywhere on these inputs (where the inputs "
                                 "hold many equal numbers, many mistakes look like one factor)."),
    "structure-factor-unnamed": ("每个数都差同一个倍数。可能是多了或少了一步缩放、缩放用错了"
                                 "量；也可能是前面某一步在这组输入上处处错得一样。",
                                 "Every entry is off by the same factor. A scaling step too "
                                 "many, missing or by the wrong amount does this; so does an "
                                 "earlier step that is off alike everywhere on these inputs."),
    "structure-phrase-missing": ("还没有除以 {right}", "the division by {right} is missing"),
    "structure-phrase-times": ("多乘了一个 {size}（或者少除了一个 {size}）",
                               "there is a factor {size} too many (or a division by {size} "
                               "missing)"),
    "structure-phrase-over": ("多除了一个 {size}", "it is divided by {size} once too often"),
    "structure-phrase-over-instead": ("除以的是 {size}，应该除以 {right}",
                                      "it is divided by {size} where it should be divided by "
                                      "{right}"),
    "structure-phrase-times-instead": ("乘上了 {size}，其实应该除以 {right}",
                                       "it is multiplied by {size} where it should be divided "
                                       "by {right}"),
    "structure-phrase-sign": ("正负号反了", "the sign is flipped"),
    "structure-named-axis": ("{name} 轴", "the {name} axis"),
    "structure-numbered-axis": ("第 {axis} 轴（即 axis={negative}）",
                                "axis {axis} (that is, axis={negative})"),
    "structure-reversed": ("数值都对，但{axis}上的顺序整个反过来了：第一个和最后一个换了位置。",
                           "The values are right, but along {axis} they come in reverse order: "
                           "the first and the last have changed places."),
    "structure-swapped": ("数值都对，只是轴的顺序成了 {got}，应该是 {expected}：{first}和"
                          "{second}对调了。",
                          "The values are right, but the axes come in the order {got} "
                          "instead of {expected}: {first} and {second} are swapped."),
    "structure-permuted": ("数值都对，只是轴的顺序成了 {got}，应该是 {expected}。",
                           "The values are right, but the axes come in the order {got} "
                           "instead of {expected}."),
    "structure-reordered": ("每个数都对，但有些放错了位置。常见的原因是 reshape 读各个轴的顺序"
                            "和想的不一样，或者它需要的 swapaxes（或 transpose）没有在它之前做。",
                            "Every number is right, but some are in the wrong places. A "
                            "common cause is a reshape that reads the axes in another order "
                            "than meant, or a swapaxes (or transpose) it needs that does not "
                            "come before it."),
    "structure-other-axis": ("结果沿{got}加起来是 1，沿{expected}却不是：要么求和用错了轴，要么"
                             "轴是对的，但求和时没写 keepdims=True，相除时和就对到了另一个轴上。",
                             "The result sums to 1 along {got}, not along {expected}: either "
                             "the sum runs along the wrong axis, or it runs along the right "
                             "one without keepdims=True, so that the division lines it up "
                             "with another axis."),
    "structure-whole": ("整个结果加起来是 1：归一化时对整个数组求了和，应该只沿{expected}求和"
                        "（keepdims=True）。",
                        "The whole result sums to 1: the normalisation sums the whole array; "
                        "sum along {expected} only (with keepdims=True)."),
    "structure-row-factor": ("沿{axis}的每一组数都和正确值成比例，只是各差一个倍数：这些组没有"
                             "除以各自的和，可能是少了这一步除法，也可能是除以了别的和。每组都除以"
                             "自己的和，加起来才是 1。",
                             "Along {axis}, each group of entries is proportional to the right "
                             "one, but each is off by its own factor: the groups are not "
                             "divided by their own sums, either because the division is "
                             "missing or because it uses another sum. Divided by its own sum, "
                             "each group sums to 1."),
    "structure-found-nan": ("有 NaN", "contains NaN"),
    "structure-found-wrong": ("数值不对", "has wrong values"),
    "structure-batch-wrong": ("算错了", "gives wrong values"),
    "structure-batch-raised": ("抛出了异常", "raises an exception"),
    "structure-batch-axes": ("每一项单独算（不带前面的批量维）都对，带着批量维 {shape} 一起算"
                             "就{found}。把整个数组当成一项来算的写法会这样，比如：.T、np.dot "
                             "或不带参数的 transpose()（它们也会动到批量维）；求和或求最大值时"
                             "没写 keepdims=True（相除或相减时结果会对到别的轴上）；从前往后数"
                             "的轴编号（axis=1、transpose(0, 2, 1)）。只作用于最后几维的写法是 "
                             "np.swapaxes(x, -1, -2)、@，以及 axis=-1 加 keepdims=True。",
                             "Each item alone (without the leading batch axes) comes out "
                             "right, but with the batch axes {shape} it {found}. Code that "
                             "treats the whole array as one item does this, for example: .T, "
                             "np.dot or transpose() without arguments (they act on the batch "
                             "axes too); a sum or a max without keepdims=True (its result lines "
                             "up with another axis in a division or a subtraction); axis "
                             "numbers counted from the front (axis=1, transpose(0, 2, 1)). "
                             "What acts on the last axes only: np.swapaxes(x, -1, -2), @, and "
                             "axis=-1 with keepdims=True."),
    "structure-more-batch-axes": ("少一个批量维时是对的，带着全部 {count} 个批量维 {shape} "
                                  "就{found}。只为固定个数的轴写的代码会这样，比如从前往后数的"
                                  "轴编号（transpose(0, 2, 1)、axis=1），或写死了尺寸的 "
                                  "reshape。用负数编号的轴（-1、-2）和 X.shape[:-2] 这样读出的"
                                  "形状，就不受批量维个数的影响。",
                                  "Right with one leading batch axis fewer, but with all "
                                  "{count} batch axes {shape} it {found}. Code written for a "
                                  "fixed number of axes does this, for example axis numbers "
                                  "counted from the front (transpose(0, 2, 1), axis=1) or a "
                                  "reshape with fixed sizes. Negative axes (-1, -2) and shapes "
                                  "read as X.shape[:-2] work whatever the number of batch axes."),
    "structure-one-of": ("有几种解释都符合这个结果，检查分不出是哪一种：{listed}",
                         "Several explanations fit this result, and the check cannot tell "
                         "which: {listed}"),
}


def language():
    """The language the feedback speaks right now."""
    return _current.get()


@contextlib.contextmanager
def speaking(chosen):
    """Speak ``chosen`` ("zh" or "en") inside the block."""
    if chosen not in LANGUAGES:
        raise ValueError(f"unknown language {chosen!r}; expected one of {LANGUAGES}")
    token = _current.set(chosen)
    try:
        yield
    finally:
        _current.reset(token)


def decide(requested=None, notebook=None):
    """The language to speak: ``requested`` when it is one ("zh" or "en"), else the one
    the build recorded in ``notebook``'s metadata, else the release's."""
    if requested in LANGUAGES:
        return requested
    meta = notebook.get("metadata") if isinstance(notebook, dict) else None
    meta = meta.get("mhakit") if isinstance(meta, dict) else None
    recorded = meta.get("language") if isinstance(meta, dict) else None
    return recorded if recorded in LANGUAGES else LANGUAGE


def pick(texts, chosen=None):
    """The text of a {"zh": ..., "en": ...} pair (or a (zh, en) tuple) for the language."""
    chosen = chosen or language()
    if isinstance(texts, dict):
        return texts.get(chosen, texts["en"])
    return texts[LANGUAGES.index(chosen)]


class Words:
    """Texts by key, each a (Chinese, English) pair with ``{fields}``."""

    def __init__(self, texts):
        self.texts = texts

    def say(self, key, **fields):
        return pick(self.texts[key]).format(**fields)


say = Words(TEXTS).say


def shapes_of(arrays):
    """The shapes of the arrays among ``arrays``, joined with the language's "and"."""
    return say("and").join(str(a.shape) for a in arrays if hasattr(a, "shape"))
