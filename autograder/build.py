"""Building the nbgrader source folder, and the student release from it.

``source/mha/`` is derived, never edited by hand: its answer cells come from
``solutions/mha.py``, its points from the hidden checks, and its self-check files are
copies of ``autograder/public``. ``assignments/mha/`` is then produced by nbgrader's own
``generate_assignment``. Tests rebuild both and fail when the committed copies are stale.
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

import solutions

from .hidden_checks import POINTS, QUIZ_KEY, QUIZ_POINTS
from .public.notebook import PREAMBLE

ASSIGNMENT = "mha"
NOTEBOOK = "mha.ipynb"
SHIPPED_PACKAGE = "mhakit_student"
PUBLIC_DIR = Path(__file__).with_name("public")
SOLUTIONS_FILE = Path(solutions.mha.__file__)

INTRO = """\
# 多头注意力：动手实现 | Multi-head attention, by hand

这份作业跟着《多头注意力》一文的顺序走：先算词向量的点积，再做一组 Q、K、V 的注意力，
最后把几个头拼起来。每个函数下面有一个自查单元，运行它就知道哪里还不对；
最后一个单元会列出全部结果。评分时，你能编辑的代码单元会从上到下运行一遍，
然后检查它们留下的函数。

*This assignment follows the article's order: dot products of word vectors, attention with one
set of Q, K, V, then several heads put together. Run the self-check cell under each function;
the last cell prints every result. For grading, the cells you can edit run from top to bottom,
and the functions they leave defined are checked.*
"""

SECTION_TEXT = {
    "dot_product": "## 1. 词向量与点积 | Word vectors and the dot product\n\n"
                   "一个词就是一串数字。两个词的向量对应位置相乘再相加，就是点积：越像的词，点积越大。\n\n"
                   "*A word is a list of numbers; multiply two vectors entry by entry and add up, and "
                   "similar words score high.*",
    "attention_scores": "## 2. 缩放点积 | Scaled scores\n\n"
                        "每个 Q 和每个 K 做点积，再除以 √d_k（d_k = 64 时就是除以 8）。\n\n"
                        "*Every query meets every key; divide by √d_k, which is 8 when d_k = 64.*",
    "softmax": "## 3. softmax\n\n把分数变成加起来等于 1 的百分比。先减去最大值，大数也不会溢出。\n\n"
               "*Turn scores into shares that add up to 1; subtract the maximum first so that large "
               "logits do not overflow.*",
    "attention": "## 4. 一组 Q、K、V 的注意力 | Attention with one set of Q, K, V\n\n"
                 "打分、缩放、softmax、按百分比混合 V。`mask` 为 True 的位置才允许关注；"
                 "一个查询若一个位置都不许看，输出和权重都是 0。\n\n"
                 "*Score, scale, softmax, blend the values. A query may attend only where `mask` is "
                 "True; a query allowed nothing gets zeros.*",
    "split_heads": "## 5. 拆分成多个头 | Split into heads\n\n"
                   "把 d_model 列平均切成 num_heads 段，第 i 个头拿第 i 段。\n\n"
                   "*Cut the d_model columns into num_heads equal slices; head i takes slice i.*",
    "concat_heads": "## 6. 拼接 | Concatenate\n\n按顺序把各头的结果接起来，头 1 在最前面。\n\n"
                    "*Put the heads' results side by side again, the first head first.*",
    "output_projection": "## 7. 输出矩阵 | The output matrix\n\n"
                         "拼接后的长串乘以输出矩阵 W_o，回到模型的宽度，也让各头的信息互相配合。\n\n"
                         "*Multiply by W_o: back to the model's width, and the heads' findings mix.*",
    "multi_head_attention": "## 8. 多头注意力 | Multi-head attention\n\n"
                            "用上面的零件拼出完整的多头注意力。\n\n"
                            "*Assemble multi-head attention from the pieces above.*",
}

QUIZ_TEXT = """\
## 检验一下 | Review

**第 1 题**：如果「借」只用一组 Q、K、V，同时去关注小明、书和小红，会出什么问题？

- A. 计算量变成原来的三倍
- B. 三个词的 V 被按比例混成一份，「借」分不清谁借出、谁借到
- C. softmax 会溢出
- D. 词向量会变长

在下面的单元里写 `quiz_1 = "A"`（或 B、C、D）。

*Question 1: if 借 attends to 小明, 书 and 小红 with a single set of Q, K, V, what goes wrong?
Write `quiz_1 = "A"` (or B, C, D) in the cell below.*
"""

OUTRO = "## 全部自查 | The whole self-check\n\n运行下面的单元，查看所有部分的结果。\n\n*Run it to see every part at once.*"


def _meta(grade_id, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def solution_cell_source(function_name):
    """The reference function, its body wrapped in nbgrader's solution markers."""
    text = SOLUTIONS_FILE.read_text(encoding="utf-8")
    lines = text.splitlines()
    node = next(n for n in ast.parse(text).body
                if isinstance(n, ast.FunctionDef) and n.name == function_name)
    docstring = node.body[0]
    head = lines[node.lineno - 1:docstring.end_lineno]
    body = lines[docstring.end_lineno:node.end_lineno]
    return "\n".join(head + ["    ### BEGIN SOLUTION"] + body + ["    ### END SOLUTION"])


def test_cell_source(part):
    return (f"# 自查 {part}（公开检查）| Self-check for {part} (public checks)\n"
            f'check("{part}")\n'
            "### BEGIN HIDDEN TESTS\n"
            f"# 评分时，mha-kit 在隔离的进程里用随机输入检查 {part}。\n"
            f"# When grading, mha-kit checks {part} on random inputs in an isolated process.\n"
            "### END HIDDEN TESTS")


def build_notebook():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md(INTRO, id="intro"),
             code(PREAMBLE + "from selfcheck import check", id="setup",
                  metadata=_meta("setup", locked=True))]
    for name in solutions.FUNCTIONS:
        cells += [md(SECTION_TEXT[name], id=f"about_{name}"),
                  code(solution_cell_source(name), id=f"answer_{name}",
                       metadata=_meta(f"answer_{name}", solution=True)),
                  code(test_cell_source(name), id=f"test_{name}",
                       metadata=_meta(f"test_{name}", grade=True, locked=True,
                                      points=sum(POINTS[name])))]
    cells += [md(QUIZ_TEXT, id="about_quiz"),
              code(f'### BEGIN SOLUTION\nquiz_1 = "{QUIZ_KEY["quiz_1"]}"\n### END SOLUTION', id="answer_quiz",
                   metadata=_meta("answer_quiz", solution=True)),
              code(test_cell_source("quiz"), id="test_quiz",
                   metadata=_meta("test_quiz", grade=True, locked=True,
                                  points=sum(QUIZ_POINTS.values()))),
              md(OUTRO, id="about_selfcheck"),
              code("check()", id="selfcheck_all", metadata=_meta("selfcheck_all", locked=True))]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"},
                         "language_info": {"name": "python"}}
    nbformat.validate(notebook)
    return notebook


SELFCHECK_SCRIPT = '''\
"""自查 mha 作业 | Self-check for the mha assignment.

    python selfcheck.py mha.ipynb

checks the saved notebook with the public checks, prints a table and exits non-zero
while anything fails. Inside the notebook, `check()` does the same for the functions as
they are defined right now. Needs only numpy.
"""

import sys

from mhakit_student import check, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
'''


def source_files():
    """{relative path: text} of everything under source/mha/."""
    files = {NOTEBOOK: nbformat.writes(build_notebook()) + "\n",
             "selfcheck.py": SELFCHECK_SCRIPT}
    for path in sorted(PUBLIC_DIR.glob("*.py")):
        files[f"{SHIPPED_PACKAGE}/{path.name}"] = path.read_text(encoding="utf-8")
    return files


def write_source(course_dir):
    target = Path(course_dir) / "source" / ASSIGNMENT
    if target.exists():
        shutil.rmtree(target)
    for relative, text in source_files().items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target


def generate_release(course_dir):
    """Run nbgrader's generate_assignment in ``course_dir``; return the release folder."""
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force",
               "--log-level=WARN"]
    done = subprocess.run(command, cwd=course_dir, capture_output=True, text=True,
                          env=tool_environment())
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{done.stdout}{done.stderr}")
    return Path(course_dir) / "assignments" / ASSIGNMENT


def tool_environment():
    """nbgrader runs helper programs (alembic) by name: find them beside this Python."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
