"""Imports that grading cannot honour: a package the release does not offer.

In the student's kernel a cell may import whatever their environment holds; when graded,
only the standard library and the exercise's ``STUDENT_IMPORTS`` are there, and the
import raises. The self-check names such imports before the student submits (from the
kernel's namespace, or from the saved cells), and the grader names them in the feedback
with what they cost (from the cells it graded).
"""

import ast
import dis
import functools
import re
import sys
import types
from pathlib import Path

DEFAULT = ("numpy", "IPython.display")  # every kernel has IPython


def allowed_by(shipped):
    """The packages, beside the standard library, that an exercise's shipped package
    (its ``STUDENT_IMPORTS``) lets students import; IPython always, as in every kernel."""
    declared = tuple(getattr(shipped, "STUDENT_IMPORTS", DEFAULT))
    return tuple(dict.fromkeys(declared + ("IPython.display",)))


# Names that are no import of the student's: the kit's own package and the kernel's.
NOT_IMPORTS = {"__main__", "builtins", "mhakit_student", "__student__"}
KERNEL_GLOBALS = {"In", "Out", "get_ipython", "exit", "quit"}


def root_of(module):
    return module.split(".")[0]


def offered(root, allowed):
    """Whether a module ``root`` (its first dotted part) can be imported when graded;
    ``allowed`` names modules, whose packages are offered whole, with every package they
    need (matplotlib's dateutil and cycler, which pylab's names come from)."""
    return (root in {root_of(module) for module in allowed} or root in sys.stdlib_module_names
            or root in NOT_IMPORTS or root.startswith("_")
            or root in needed_modules(tuple(allowed)))


@functools.lru_cache(maxsize=8)
def needed_modules(allowed):
    """The top-level modules of every package that the ``allowed`` modules' packages need,
    as installed here (the grading child links the same: sandbox/student_site.py)."""
    roots = {root_of(module) for module in allowed} - {"IPython"}  # the child's own
    try:
        return frozenset(path.name.split(".")[0] for distribution in
                         needed_distributions(tuple(sorted(roots)))
                         for path in top_level(distribution))
    except Exception:  # noqa: BLE001 - a broken install: the offered packages alone count
        return frozenset()


@functools.lru_cache(maxsize=8)
def needed_distributions(roots):
    """The installed distributions of the packages ``roots`` (top-level module names),
    and of every package they need, extras aside (they are not installed for students);
    what is not installed is left out."""
    import importlib.metadata  # 20 to 40 ms: only for a module that is not offered outright

    found, todo, seen = [], sorted(roots), set()
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in distribution.requires or ():
            if "extra ==" not in requirement:
                todo.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())
        found.append(distribution)
    return tuple(found)


def top_level(distribution):
    """The importable things a distribution installed at the top of its site-packages."""
    base = Path(distribution.locate_file(""))
    tops = {Path(str(f)).parts[0] for f in distribution.files or ()
            if not str(f).startswith("..")}
    return [base / top for top in sorted(tops)
            if not top.endswith((".dist-info", ".egg-info", ".pth")) and top != "__pycache__"
            and ((base / top).is_dir() or top.endswith((".py", ".so")))]


CACHED_CELL = 20_000  # characters: a lesson's cell, never a tree that holds much memory


def parsed(source):
    """A cell's syntax tree, None for a cell that does not parse. Cells of a usual size
    are read once for the grader's several notes on one notebook; nobody changes the
    tree it hands out."""
    return _parsed_small(source) if len(source) <= CACHED_CELL else _parse(source)


@functools.lru_cache(maxsize=256)
def _parsed_small(source):
    return _parse(source)


def _parse(source):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def cell_imports(source):
    """[(line, statement level: True at the cell's top, module root)] of a cell's source
    (as the kernel compiles it); [] for a cell that does not parse. The grader's notes
    ask it twice per cell, hence the cache, as for ``parsed``; the list is a copy."""
    if len(source) > CACHED_CELL:
        return _cell_imports(source)
    return list(_cell_imports_small(source))


@functools.lru_cache(maxsize=256)
def _cell_imports_small(source):
    return tuple(_cell_imports(source))


def _cell_imports(source):
    # Every import statement spells the keyword: most cells have none, and need no walk.
    tree = parsed(source) if "import" in source else None
    if tree is None:
        return []
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, id(node) in top, alias.name.split(".")[0])
                      for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, id(node) in top, node.module.split(".")[0]))
    return sorted(found)


def foreign_in_cells(cells, allowed):
    """[(cell id, line, module)] of the imports in ``cells`` that grading cannot honour."""
    written = written_modules(cells)
    return [(cell_id, line, root) for cell_id, source in cells
            for line, _, root in cell_imports(source)
            if not offered(root, allowed) and root not in written]


# A cell that writes a module, `%%writefile helper.py` on its first line: as IPython reads
# it (a call of get_ipython()), or as typed where IPython is missing (ipython_syntax.py).
WRITEFILE = re.compile(r"""\s*(?:get_ipython\(\)\.run_cell_magic\('writefile',\s*["']|"""
                       r"""(?:pass  # )?%%writefile[ \t]+)(?:(?:-a|--append)[ \t]+)?["']?"""
                       r"""([A-Za-z_][A-Za-z0-9_]*)\.py\b""")


def written_modules(cells):
    """The modules the notebook writes itself (``%%writefile helper.py``): grading writes
    them too, where the cells' imports find them, as the kernel finds them beside the
    notebook."""
    return {found.group(1) for _, source in cells
            if isinstance(source, str) and (found := WRITEFILE.match(source))}


def foreign_in_namespace(namespace, allowed, names=None):
    """{module root: [global names that bring it]} in a live namespace (the kernel's):
    modules bound to a name, functions and classes imported from them, and imports
    inside the student's own functions. ``names`` limits it to what those globals use."""
    chosen = namespace if names is None else {n: namespace[n] for n in names if n in namespace}
    found = {}
    for name, value in list(chosen.items()):
        if name.startswith("_") or name in KERNEL_GLOBALS:
            continue
        for root in _roots_of(value, namespace if names is not None else None):
            if not offered(root, allowed):
                found.setdefault(root, []).append(name)
    return found


def _roots_of(value, namespace=None, depth=0):
    if isinstance(value, types.ModuleType):
        return {value.__name__.split(".")[0]}
    module = getattr(value, "__module__", None) if isinstance(value, (type, types.FunctionType,
                                                                       types.BuiltinFunctionType)) else None
    if not isinstance(module, str):
        return set()
    roots = {module.split(".")[0]}
    code = getattr(value, "__code__", None)
    if isinstance(code, types.CodeType) and module in NOT_IMPORTS:
        roots |= _imported_in(code)
        if namespace is not None and depth < 3:  # what a checked function calls, too
            for used in _global_names(code):
                if used in namespace and namespace[used] is not value:
                    roots |= _roots_of(namespace[used], namespace, depth + 1)
    return roots


def _codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _imported_in(code):
    return {str(ins.argval).split(".")[0] for inner in _codes(code)
            for ins in dis.get_instructions(inner) if ins.opname == "IMPORT_NAME"}


def _global_names(code):
    return {name for inner in _codes(code) for name in inner.co_names}
