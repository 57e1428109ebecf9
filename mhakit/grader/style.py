"""Style notes that cost no points: a Python loop over heads or batch items, where NumPy
would take the whole array.

Found by reading the answer cells with ``ast`` (parsing runs no code, so it is safe on
the grader's side), never by timing them. Which parameters hold a head count and which
hold batched arrays is the exercise's vocabulary (its ``style.HEAD_COUNTS`` and
``style.BATCHED``). From those, every name a function assigns gets a kind:

- a *count*: a head count, a size read from an array (``x.shape[0]``, ``len(x)``), or
  arithmetic on them (``d // h``);
- an *array*: a batched array or anything computed from one (``np.asarray(x)``, ``x @ w``);
- *pieces*: an array cut into a list (``np.split``, ``np.array_split``, a comprehension
  over data).

A ``for`` loop or a comprehension is noted when it walks a range of a count, an array,
pieces, or an enumerate/zip of them; a ``while`` loop when its condition compares with a
count. A loop over a literal tuple, a range of a constant, or a condition such as
``x.ndim < 2`` walks no heads and no batch: no note.
"""

import ast
import re

from ..selfcheck.imports import parsed
from ..selfcheck.wording import pick

LABEL = {"zh": "写法提示（不扣分）：", "en": "Style note (no points): "}

COUNT, SHAPE, ARRAY, PIECES, WALK = "count", "shape", "array", "pieces", "walk"
WALKED = (ARRAY, PIECES, WALK)  # what a loop over heads or the batch iterates
RANGES = ("range", "arange")
LOOP_WORD = re.compile(r"(?:for|while)\b")  # no \b before: "[1for h in ...]" is a loop
PASSING_ON = ("enumerate", "zip", "reversed", "list", "tuple", "iter", "sorted")
SPLITS = ("split", "array_split", "hsplit", "vsplit", "dsplit")
NOT_SIZES = ("ndim", "dtype", "itemsize")  # numbers an array has that are no axis's length


class _Kinds:
    """The kind of each expression of one function, from its parameters' kinds."""

    def __init__(self, names):
        self.names = dict(names)

    def of(self, node):
        method = getattr(self, "_" + type(node).__name__, None)
        return method(node) if method else None

    def _Name(self, node):
        return self.names.get(node.id)

    def _Starred(self, node):
        return self.of(node.value)

    def _Attribute(self, node):
        owner = self.of(node.value)
        if owner not in (ARRAY, PIECES):
            return None
        if node.attr == "shape":
            return SHAPE
        return None if node.attr in NOT_SIZES else (COUNT if node.attr == "size" else ARRAY)

    def _Subscript(self, node):
        owner = self.of(node.value)
        if owner == SHAPE:
            return SHAPE if isinstance(node.slice, ast.Slice) else COUNT
        # An item of an array or of its pieces is an array; an index a range hands out
        # is no size of anything.
        if owner == WALK:
            return WALK if isinstance(node.slice, ast.Slice) else None
        return ARRAY if owner in (ARRAY, PIECES) else owner

    def _BinOp(self, node):
        return _strongest(self.of(node.left), self.of(node.right))

    def _UnaryOp(self, node):
        return self.of(node.operand)

    def _IfExp(self, node):
        return _strongest(self.of(node.body), self.of(node.orelse))

    def _comprehension_kind(self, node):
        return PIECES if any(self.walks(gen.iter) for gen in node.generators) else None

    _ListComp = _SetComp = _GeneratorExp = _comprehension_kind

    def _Call(self, node):
        name = _called(node.func)
        args = [self.of(arg) for arg in node.args]
        if name in RANGES:
            return WALK if COUNT in args else None
        if name in PASSING_ON:
            return next((kind for kind in args if kind in WALKED), None)
        if name == "len":
            return COUNT if args and args[0] in (ARRAY, PIECES) else None
        if name == "shape":
            return SHAPE if args and args[0] in (ARRAY, PIECES) else None
        if name in SPLITS:
            return PIECES if args and args[0] in (ARRAY, PIECES) else None
        if name in NOT_SIZES:
            return None
        method_of = self.of(node.func.value) if isinstance(node.func, ast.Attribute) else None
        kinds = args + [self.of(k.value) for k in node.keywords] + [method_of]
        return ARRAY if any(k in (ARRAY, PIECES) for k in kinds) else (
            COUNT if COUNT in kinds else None)

    def walks(self, iterable):
        return self.of(iterable) in WALKED

    def learn(self, target, value):
        """Give the names of an assignment's target the kind of its value."""
        if isinstance(target, ast.Name):
            kind = self.of(value)
            if kind and target.id not in self.names:
                self.names[target.id] = kind
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for each_target, each_value in zip(target.elts, value.elts):
                    self.learn(each_target, each_value)
                return
            element = {SHAPE: COUNT, ARRAY: ARRAY, PIECES: ARRAY}.get(self.of(value))
            for each in target.elts:
                if isinstance(each, ast.Name) and element and each.id not in self.names:
                    self.names[each.id] = element


def _strongest(*kinds):
    for kind in (ARRAY, PIECES, COUNT):
        if kind in kinds:
            return kind
    return None


def _called(func):
    """The name a call calls: ``range`` for range(...), ``split`` for np.split(...)."""
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _assignments(nodes):
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield target, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value:
            yield node.target, node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield node.target, ast.Subscript(node.iter, ast.Constant(0))  # one item of it


def kinds_in(function, vocabulary, nodes):
    """The kinds of the names ``function`` uses, its parameters' from ``vocabulary``
    ((head count names, batched array names)); assignments are followed until nothing
    changes. ``nodes``: every node of ``function`` (the caller walks it once)."""
    head_counts, batched = vocabulary
    arguments = function.args
    parameters = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    kinds = _Kinds({name: COUNT if name in head_counts else ARRAY for name in parameters
                    if name in head_counts or name in batched})
    assignments = list(_assignments(nodes))
    known = None
    while known != kinds.names:  # each pass can only add names, so this ends
        known = dict(kinds.names)
        for target, value in assignments:
            kinds.learn(target, value)
    return kinds


def _counts_in(test, kinds):
    return any(isinstance(node, ast.Compare) and
               any(kinds.of(side) == COUNT for side in [node.left, *node.comparators])
               for node in ast.walk(test))


def loop_lines(function, vocabulary):
    """The lines of ``function``'s loops over heads or batch items."""
    nodes = list(ast.walk(function))  # walked once, for the kinds and for the loops
    kinds = kinds_in(function, vocabulary, nodes)
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)) and kinds.walks(node.iter):
            yield node.lineno
        elif isinstance(node, ast.comprehension) and kinds.walks(node.iter):
            yield node.iter.lineno
        elif isinstance(node, ast.While) and _counts_in(node.test, kinds):
            yield node.lineno


def vocabulary_of(style):
    """(head count names, batched array names) from an exercise's style module."""
    return (frozenset(getattr(style, "HEAD_COUNTS", ())),
            frozenset(getattr(style, "BATCHED", ())))


def style_notes(cells, exercise, language="zh"):
    """{function: note} for each graded function whose last definition loops over heads
    or batch items; the hint is the exercise's (its ``style.HINTS``)."""
    style = exercise.content("style")
    hints, vocabulary = style.HINTS, vocabulary_of(style)
    defined = {}
    for _, source in cells:
        tree = parsed(source)  # the import notes read the same trees
        if tree is None:
            continue
        # Every loop spells its keyword: a cell without one needs no search (most answers
        # are loopless), but its definitions still replace earlier ones.
        loops = LOOP_WORD.search(source) is not None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in hints:
                defined[node.name] = node if loops else None  # the later wins, as when run
    notes = {}
    for name, function in defined.items():
        if function is None:
            continue
        try:
            lines = sorted(set(loop_lines(function, vocabulary)))
        except RecursionError:  # an expression nested deeper than the reading goes
            continue
        if lines:
            where = ", ".join(str(line) for line in lines)
            loop = pick((f"第 {where} 行有 Python 循环；", f"a Python loop (line {where}); "),
                        language)
            zh, en = hints[name]
            notes[name] = pick(LABEL, language) + loop + pick((zh, en), language)
    return notes
