"""Feedback on imports that grading cannot honour, with what each cost.

A cell that imports a package the release does not offer (see selfcheck/imports.py)
stops at that line when graded, and a function that imports one fails when called. The
student ran the same cells in a kernel that had the package, so the feedback says which
import cost which function, in place of a bare "not implemented".
"""

import ast

from ..selfcheck.imports import cell_imports, offered, parsed, root_of, written_modules
from ..selfcheck.wording import say, speaking


def import_notes(cells, exercise, language="zh"):
    """{function: note} for each contract function that a foreign import cost."""
    allowed, names = exercise.student_imports, set(exercise.function_names)
    written = written_modules(cells)
    state = {}  # name -> None (defined) or the note that says why it was not
    with speaking(language):
        shown = ", ".join(allowed)
        for cell_id, source in cells:
            foreign = [(line, top, root) for line, top, root in cell_imports(source)
                       if not offered(root, allowed) and root not in written]
            stop = next(((line, root) for line, top, root in foreign if top), None)
            for node in _definitions(source, names):
                if stop and node.lineno > stop[0]:
                    if state.get(node.name, "") is not None:  # none defined before
                        state[node.name] = say("foreign-import-lost", cell=cell_id,
                                               line=stop[0], module=stop[1], offered=shown,
                                               name=node.name)
                    continue
                inside = [root for line, _, root in foreign
                          if node.lineno <= line <= node.end_lineno]
                state[node.name] = say("foreign-import-called", name=node.name,
                                       module=inside[0], offered=shown) if inside else None
    return {name: note for name, note in state.items() if note}


def _definitions(source, names):
    tree = parsed(source)
    return [] if tree is None else [node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names]


# Cheap to import, or served by the child itself: no warm parent of their own.
ALWAYS_READY = {"numpy", "IPython"}


def slow_imports(cells, allowed):
    """The declared modules (``STUDENT_IMPORTS``) whose package the cells import, but for
    numpy and IPython: the child should be forked from a parent that has them imported."""
    imported = {root for _, source in cells for _, _, root in cell_imports(source)}
    return tuple(sorted(module for module in allowed if root_of(module) in imported
                        and root_of(module) not in ALWAYS_READY))
