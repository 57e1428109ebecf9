"""child/layers/: every file there is a layer, the grader and the launcher find the same
ones, and each can be loaded where nothing of the kit can be imported."""

import ast
import sys
from pathlib import Path

from mhakit.sandbox import Limits, plan
from mhakit.sandbox.child import launcher, seccomp
from mhakit.sandbox.child.layers import all_layers

LAYERS = all_layers()
FOLDER = Path(plan.CHILD_DIR) / "layers"


def test_every_file_is_a_layer_with_the_whole_interface_and_an_order_of_its_own():
    files = {path.stem for path in FOLDER.glob("*.py")} - {"__init__"}
    assert set(LAYERS) == files
    for name, layer in LAYERS.items():
        assert isinstance(layer.ORDER, int), name
        for needed in ("plan", "apply", "describe"):
            assert callable(getattr(layer, needed, None)), (name, needed)
        assert hasattr(layer, "wanted") <= hasattr(layer, "PROBE"), name  # wanted says when
    orders = [layer.ORDER for layer in LAYERS.values()]
    assert len(set(orders)) == len(orders) and orders == sorted(orders)


def test_the_launcher_loads_the_same_layers_by_path_in_the_plans_order():
    loaded = launcher.Loaded(str(plan.CHILD_DIR))
    assert set(loaded.layers) == set(LAYERS)
    for mode in plan.MODES:
        config = plan.plan(mode, Limits(), {}, root="/tmp/nowhere", scratch="/tmp/nowhere")
        names = list(config.layers)
        assert names == sorted(names, key=lambda name: LAYERS[name].ORDER), mode
        assert "rlimits" in names and "scratch" in names, mode


def test_a_layer_file_imports_the_standard_library_alone():
    """The launcher runs it by its text, before anything but the standard library exists
    for the child."""
    for path in FOLDER.glob("*.py"):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and node.module.split(".")[0] in sys.stdlib_module_names, \
                    (path.name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, (path.name, alias.name)


def test_the_calls_a_layer_numbers_are_not_numbered_otherwise_by_seccomp():
    for name, layer in LAYERS.items():
        for machine, numbers in getattr(layer, "CALLS", {}).items():
            assert machine in seccomp.ARCHES, (name, machine)
            known = seccomp.ARCHES[machine][1]
            clash = {call: number for call, number in numbers.items()
                     if known.get(call, number) != number or (call not in known and number
                                                               in known.values())}
            assert not clash, (name, machine, clash)


def test_a_layer_that_cannot_be_built_stops_the_child_before_its_code_runs(tmp_path):
    """Whatever the plan asks for must hold: here the submission's cgroup is not there."""
    import dataclasses
    import subprocess

    from mhakit.sandbox import scratch, uids

    folder = tmp_path / "child"
    folder.mkdir()
    mode = plan.MODES["landlock"]
    with uids.pool_uid_for(mode) as uid:
        config = plan.child_plan(mode.name, Limits(), plan.child_environment(), folder,
                                 pool_uid=uid)
    lost = {"procs": [str(tmp_path / "no-cgroup" / "cgroup.procs")], "said": "a cgroup"}
    broken = dataclasses.replace(config, layers={"cgroup": lost, **config.layers})
    for each, expect_ran in ((config, True), (broken, False)):
        done = subprocess.run(plan.launcher_command(each, "print('student code ran')"),
                              capture_output=True, text=True, timeout=60)
        assert ("student code ran" in done.stdout) == expect_ran, done.stderr[-500:]
    assert done.returncode != 0 and "FileNotFoundError" in done.stderr
    scratch.remove_tree(folder)
