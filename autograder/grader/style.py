"""Style notes that cost no points: a Python loop where NumPy would take the whole array.

Found by reading the answer cells with ``ast`` (parsing runs no code, so it is safe on
the grader's side), never by timing them. A loop counts when it walks a range, an array
or a zip/enumerate of them, as loops over heads or over the batch do. A loop over a
literal tuple, such as the reference's check of the four weight matrices, does not.
"""

import ast

from ..selfcheck.wording import pick

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


def style_notes(cells, exercise, language="zh"):
    """{function: note} for each graded function whose last definition loops over data;
    the hint is the exercise's (its ``style.HINTS``)."""
    hints = exercise.content("style").HINTS
    defined = {}
    for _, source in cells:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in hints:
                defined[node.name] = node  # a later cell's definition wins, as when run
    notes = {}
    for name, function in defined.items():
        lines = sorted(set(_loops(function)))
        if lines:
            where = ", ".join(str(line) for line in lines)
            loop = pick((f"第 {where} 行有 Python 循环；", f"a Python loop (line {where}); "),
                        language)
            zh, en = hints[name]
            notes[name] = pick(LABEL, language) + loop + pick((zh, en), language)
    return notes
