"""A cell's source as the Python a Jupyter kernel would compile from it.

IPython's own input transformation turns magics, shell escapes and help syntax into
calls of ``get_ipython()`` and leaves plain Python alone, continuation lines that begin
with an operator included. What those calls do where no kernel runs is inert_ipython.py's
to say. A cell magic whose body runs in the user's namespace (``%%time``) becomes its
body, read the same way, so that a function it defines is defined when graded too.

The grader always has IPython (nbgrader needs it). A student's ``python selfcheck.py``
may run where it is missing; there a cell that compiles is taken as it is, and in one
that does not, each line that begins with ``%`` or ``!`` at the start of a statement is
left out, which is what IPython would do for the usual magics.
"""

import re

from .inert_ipython import BODY_RUNS

try:
    from IPython.core.inputtransformer2 import TransformerManager
except ImportError:  # a student's Python without IPython
    TransformerManager = None

BODY_MAGIC = re.compile(r"\s*%%(" + "|".join(BODY_RUNS) + r")\b[^\n]*(\n|$)")
_manager = TransformerManager() if TransformerManager is not None else None


def as_python(source):
    """The Python source the kernel would run for this cell's ``source``."""
    body = BODY_MAGIC.match(source)
    if body:  # a blank line keeps the body's line numbers in tracebacks
        return "\n" + as_python(source[body.end():])
    if _manager is not None:
        try:
            return _manager.transform_cell(source)
        except Exception:  # noqa: BLE001 - what IPython cannot read, the kernel cannot run
            return source if source.endswith("\n") else source + "\n"
    return _without_magic_lines(source)


def _without_magic_lines(source):
    try:
        compile(source, "<cell>", "exec")
        return source if source.endswith("\n") else source + "\n"
    except SyntaxError:
        pass
    lines, depth = [], 0
    for line in source.splitlines():
        body = line.lstrip()
        if depth == 0 and body.startswith(("%", "!")) and not body.startswith("!="):
            line = line[:len(line) - len(body)] + "pass  # " + body
        lines.append(line)
        depth = max(0, depth + sum(line.count(c) for c in "([{") -
                    sum(line.count(c) for c in ")]}"))
    return "\n".join(lines) + "\n"
