"""What collecting the test suite does, and how a parallel run hands out its tests.

- Collecting starts no process: no test module probes the confinement (or makes a
  cgroup) while pytest imports it. A probe starts a child and takes a fifth of a second,
  and each of the parallel run's processes collects every module.
- Under ``pytest -n``, the tests that share a costly fixture run on one worker, which then
  builds it once (tests/worker_groups.py): every module-scoped fixture, and the
  session-scoped ones of ONCE_PER_RUN (a browser, a user account, a venv).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.worker_groups import ONCE_PER_RUN

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''
import json, os
from mhakit.sandbox import cgroups, confinement
from tests.worker_groups import groups_of

def refuse(*args, **kwargs):
    raise RuntimeError("probed while the suite was being collected")

def pytest_configure(config):
    confinement.first_that_confines = refuse
    cgroups.create = refuse

def pytest_collection_finish(session):
    groups = groups_of(session.items)
    seen = {}
    for item in session.items:
        info = getattr(item, "_fixtureinfo", None)
        scopes = {name: info.name2fixturedefs[name][-1].scope for name in item.fixturenames
                  if info and info.name2fixturedefs.get(name)}
        seen[item.nodeid] = {"group": groups.get(item.nodeid), "scopes": scopes}
    with open(os.environ["COLLECTED_TO"], "w", encoding="utf-8") as out:
        json.dump(seen, out)
'''


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """(pytest's output, {test id: {"group": its group, "scopes": {fixture: scope}}})"""
    folder = tmp_path_factory.mktemp("collect")
    (folder / "watch_collection.py").write_text(PLUGIN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "watch_collection", str(REPO / "tests")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env=dict(os.environ, COLLECTED_TO=str(folder / "collected.json"),
                 PYTHONPATH=os.pathsep.join(filter(None, [str(folder), str(REPO),
                                                          os.environ.get("PYTHONPATH")]))))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout + done.stderr, json.loads((folder / "collected.json").read_text())


def test_collecting_the_suite_probes_nothing(collected):
    output, tests = collected
    assert "probed while" not in output
    assert " tests collected" in output and len(tests) > 1000


def test_the_tests_that_share_a_costly_fixture_are_one_group(collected):
    _, tests = collected
    users = {}  # a fixture built once per module, or once per run -> the groups of its tests
    for test, seen in tests.items():
        for name, scope in seen["scopes"].items():
            if scope == "module":
                users.setdefault(f"{test.split('::')[0]}::{name}", set()).add(seen["group"])
            elif scope == "session" and name in ONCE_PER_RUN:
                users.setdefault(name, set()).add(seen["group"])
    assert set(ONCE_PER_RUN) <= set(users)  # each still used, under the name listed
    for fixture, groups in users.items():
        assert None not in groups and len(groups) == 1, f"{fixture}: its tests' groups {groups}"
    free = [test for test, seen in tests.items() if seen["group"] is None]
    assert len(free) > len(tests) / 2  # the rest are handed out one by one


# A module of its own for the parallel run below: two tests share a module-scoped fixture,
# a third does not. Each pauses, so that xdist, left to itself, would give the first
# and third to one worker and the second to the other.
SHARING = """
import time
import pytest

@pytest.fixture(scope="module")
def shared():
    return object()

def test_first_shares(shared):
    time.sleep(0.3)

def test_second_shares(shared):
    time.sleep(0.3)

def test_alone():
    time.sleep(0.3)
"""
# The suite's own hooks (tests/conftest.py), and nothing else of it.
HOOKS = """
from tests.conftest import (pytest_collection_modifyitems, pytest_configure,
                            pytest_configure_node, pytest_unconfigure,
                            pytest_xdist_make_scheduler)
"""


def test_a_parallel_run_gives_a_group_to_one_worker(tmp_path):
    # xdist's own xdist_group mark sent the two to two workers under pytest 9.
    (tmp_path / "test_sharing.py").write_text(SHARING, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(HOOKS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-v",
         "test_sharing.py"], capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    workers = {test: worker for worker, test in re.findall(r"\[(gw\d+)\] .*PASSED (\S+)",
                                                           done.stdout)}
    shared = {worker for test, worker in workers.items() if "shares" in test}
    assert len(workers) == 3 and len(shared) == 1, done.stdout
