"""Which tests of a parallel run (``pytest -n``) go to the same worker.

pytest-xdist builds a module- or session-scoped fixture once in every worker that runs a
test that needs it. The tests that share such a fixture are one group here, and a group's
tests run on one worker, one after the other: the fixture is built once per run. Every
module-scoped fixture counts, and the session-scoped ones of ONCE_PER_RUN; the others
each worker builds in seconds (the sample answers), or all share (the course folder, which
conftest's ``built_once`` makes for the whole run: too many tests use it to put them on
one worker). Without the groups,
three workers ran the kernel oracle's notebooks in kernels three times over, and one
worker copied the instructor's course afresh while another graded from it.

xdist's own ``xdist_group`` mark renames each test to carry its group, which pytest 9
ignores (a test's id comes from ``Node._id``). So each worker writes the groups it
found to a file once it has collected, and the controller's scheduler reads that file
when it hands out the tests, which is after every worker has collected.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ONCE_PER_RUN = {"browser", "instructor", "numpy_only_python", "hub_environment"}
GROUPS_FILE = pytest.StashKey[Path]()


def groups_of(items):
    """{test id: its group}: the tests linked, directly or through others, by a fixture
    they share (module-scoped: within their module; ONCE_PER_RUN: anywhere), named
    after the first of those fixtures. A test that shares none is in no group."""
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    first = {}
    for item in items:
        keys = sorted(shared_fixtures(item))
        for key in keys:
            parent[root(key)] = root(keys[0])
        if keys:
            first[item.nodeid] = keys[0]
    names = {}
    for key in sorted(parent):
        names.setdefault(root(key), key)
    return {test: names[root(key)] for test, key in first.items()}


def shared_fixtures(item):
    info = getattr(item, "_fixtureinfo", None)  # doctests and the like have none
    for name in getattr(item, "fixturenames", ()):
        definitions = info.name2fixturedefs.get(name) if info else None
        if not definitions:
            continue
        scope = definitions[-1].scope
        if scope == "module":  # one per module, even when a conftest defines it
            yield f"{item.nodeid.split('::')[0]}::{name}"
        elif scope == "session" and name in ONCE_PER_RUN:
            yield f"session::{name}"


# ------------------------------------------------ the hooks (tests/conftest.py calls them)

def configure(config):
    """In the controller of a parallel run: a private folder for the workers' groups."""
    if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        config.stash[GROUPS_FILE] = Path(tempfile.mkdtemp(prefix="mhakit-groups-")) / "groups"


def unconfigure(config):
    if GROUPS_FILE in config.stash:
        shutil.rmtree(config.stash[GROUPS_FILE].parent, ignore_errors=True)


def configure_node(node):
    if GROUPS_FILE in node.config.stash:
        node.workerinput["mhakit_groups"] = str(node.config.stash[GROUPS_FILE])


def record(config, items):
    """In a worker: the groups, written by the first worker to finish collecting (every
    worker collects the same tests)."""
    path = getattr(config, "workerinput", {}).get("mhakit_groups")
    if not path:
        return
    mine = Path(f"{path}.{os.getpid()}")
    mine.write_text(json.dumps(groups_of(items)), encoding="utf-8")
    try:
        os.link(mine, path)  # whole or not at all, and only once
    except FileExistsError:
        pass


def scheduler(config, log):
    """Under ``-n`` (xdist's ``--dist load``, or ``loadgroup``): xdist's scheduler of
    groups, which takes its groups from the workers' file too. Another ``--dist`` keeps
    xdist's own."""
    if config.getoption("dist") not in ("load", "loadgroup") or GROUPS_FILE not in config.stash:
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedFixtureScheduling(LoadGroupScheduling):
        groups = None

        def _split_scope(self, nodeid):
            if self.groups is None:
                path = config.stash[GROUPS_FILE]
                self.groups = json.loads(path.read_text("utf-8")) if path.exists() else {}
            group = self.groups.get(nodeid)
            return f"group: {group}" if group else super()._split_scope(nodeid)

    return SharedFixtureScheduling(config, log)
