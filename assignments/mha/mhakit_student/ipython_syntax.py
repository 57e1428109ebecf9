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

import functools
import re

from .inert_ipython import BODY_RUNS
from .wording import say

BODY_MAGIC = re.compile(r"\s*%%(" + "|".join(BODY_RUNS) + r")\b[^\n]*(\n|$)")
# Where IPython would change anything: an escape at the start of a line (magic, shell,
# help, autocall), `x = %magic` or `x = !cmd`, help at the end, a pasted prompt. A cell
# with none of these is left as it is, without IPython's (slow) tokenizing.
IPYTHON_SYNTAX = re.compile(r"^[ \t]*(?:[%!?/,;]|>>>|\.\.\.|In \[)|\?[ \t]*$|=[ \t]*[%!]",
                            re.MULTILINE)
# IPython tokenizes the whole cell again after each line it changes, so its cost grows
# with those lines times the cell's length; a notebook's cells share this many characters
# of that work, about a second's worth, far above what any cell of a lesson needs. Each
# pass is charged as it is made: what the pattern above only suspects (a doctest's
# ">>>" in a docstring, a comment that ends in "?") costs one pass, as it does IPython.
BUDGET = 200_000
PASSES = 500  # IPython's own limit (TRANSFORM_LOOP_LIMIT), past which it gives up


@functools.lru_cache(maxsize=1)
def manager():
    """IPython's transformer, imported on first need (its import is a third of a
    self-check's time); None in a student's Python without IPython."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return None
    return TransformerManager()


class Reader:
    """Reads one notebook's cells, sharing ``BUDGET`` among them."""

    def __init__(self, budget=BUDGET):
        self.budget = budget

    def as_python(self, source):
        """The Python source the kernel would run for this cell's ``source``."""
        skipped = 0  # a blank line for each magic line keeps tracebacks' line numbers
        while body := BODY_MAGIC.match(source):
            source, skipped = source[body.end():], skipped + 1
        if skipped:
            return "\n" * skipped + self.as_python(source)
        source = source if source.endswith("\n") else source + "\n"
        changes = len(IPYTHON_SYNTAX.findall(source))
        if not changes and not source[:1].isspace():
            return source
        ipython = manager()
        if ipython is None:
            return _without_magic_lines(source)
        try:
            lines = source.splitlines(keepends=True)
            for transform in ipython.cleanup_transforms + ipython.line_transforms:
                lines = transform(lines)
            if not changes:  # an indented cell: IPython's line-by-line clean-up alone
                return "".join(lines)
            return "".join(self._token_transforms(ipython, lines, changes))
        except Exception:  # noqa: BLE001 - what IPython cannot read, the kernel cannot run
            return source

    def _token_transforms(self, ipython, lines, changes):
        """IPython's transform_cell after its line transforms: a pass over the cell's
        tokens until one changes nothing, each pass charged to the budget first."""
        for _ in range(PASSES):
            self.budget -= sum(map(len, lines))  # a change may lengthen the cell
            if self.budget < 0:
                return [f"raise SyntaxError({say('too-much-ipython', lines=changes)!r})\n"]
            changed, lines = ipython.do_one_token_transform(lines)
            if not changed:
                return lines
        raise RuntimeError(f"IPython's transformation still changed the cell after {PASSES} "
                           "passes")


def as_python(source):
    """One cell read on its own (see ``Reader``)."""
    return Reader().as_python(source)


def _without_magic_lines(source):
    try:
        compile(source, "<cell>", "exec")
        return source
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
