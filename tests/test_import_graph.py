"""The kit's modules depend on each other in one direction, and the sandbox is the bottom.

Every import counts, at the top of a module or inside a function: a late import is still
a dependency, only a hidden one. The graph is read from the source (ast), not from a run,
so a branch that no test takes is in it too.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KIT = "mhakit"
# Above the sandbox: it is told what to hide and how much to allow, and asks none of them.
ABOVE_THE_SANDBOX = ("mhakit.grader", "mhakit.exercise", "mhakit.exercises",
                     "mhakit.integrations", "mhakit.authoring")


def modules_of(root, package):
    """{dotted name: file} for every module of ``package`` under ``root``."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _bound_names(path):
    """The names a module binds at its top level (definitions, assignments, imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for target in targets for t in ast.walk(target)
                         if isinstance(t, ast.Name))
    return names


def _imported(name, node, modules):
    """The kit's modules that ``node``, an import in module ``name``, makes Python run."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = name.split(".")
        if modules[name].name != "__init__.py":
            base = base[:-1]  # a module's relative imports start from its package
        if node.level:
            base = base[:len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module
        wanted = []
        for alias in node.names:
            if f"{source}.{alias.name}" in modules:
                wanted.append(f"{source}.{alias.name}")
            elif source in modules and (not name.startswith(source + ".")
                                        or alias.name in _bound_names(modules[source])):
                # From a package its module is in, a name that the package itself does
                # not bind is a module that exists elsewhere (the release's vendored
                # exercise): importing it runs nothing of the package that has not run.
                wanted.append(source)
    found = []
    for target in wanted:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append(target)
    return found


def import_graph(root, package):
    """{module: the kit's modules it imports}, every import counted, late ones too."""
    modules = modules_of(root, package)
    graph = {}
    for name, path in modules.items():
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name].update(_imported(name, node, modules))
    return graph


def circles(graph):
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _said(graph, group):
    return "; ".join(f"{a} -> {b}" for a in group for b in sorted(graph[a] & set(group)))


GRAPH = import_graph(REPO, KIT)


def test_no_module_of_the_kit_imports_itself_in_a_circle():
    found = circles(GRAPH)
    assert not found, [_said(GRAPH, group) for group in found]


def test_the_sandbox_imports_nothing_of_the_grader_the_exercises_or_the_doors():
    sandbox = [name for name in GRAPH if name.startswith("mhakit.sandbox")]
    assert len(sandbox) > 10
    wrong = {name: sorted(t for t in GRAPH[name] if t.startswith(ABOVE_THE_SANDBOX))
             for name in sandbox}
    assert not {name: targets for name, targets in wrong.items() if targets}


def test_the_child_and_the_self_check_stand_alone():
    """The child's files run in a jail without the kit; the self-check ships to students
    as a package of its own (mhakit_student): neither reaches outside its folder."""
    for folder in ("mhakit.sandbox.child", "mhakit.selfcheck"):
        outside = {name: sorted(t for t in GRAPH[name] if not t.startswith(folder))
                   for name in GRAPH if name.startswith(folder)}
        assert not {name: targets for name, targets in outside.items() if targets}, folder


def test_the_graph_sees_a_circle_through_a_late_import_and_not_an_import_from_the_release(
        tmp_path):
    package = tmp_path / "kit"
    files = {"__init__.py": "from .runner import main\n",
             "runner.py": "def main():\n    from . import exercise  # the release's own\n",
             "low.py": "def f():\n    from .high import g\n",
             "high.py": "from .low import f\ng = 1\n"}
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    graph = import_graph(tmp_path, "kit")
    assert circles(graph) == [["kit.high", "kit.low"]]
    assert graph["kit.runner"] == set() and graph["kit"] == {"kit.runner"}
    (package / "__init__.py").write_text("from .runner import main\nexercise = None\n")
    assert ["kit", "kit.runner"] in circles(import_graph(tmp_path, "kit"))
