"""child/layers/ipc.py: without an IPC namespace, a child makes no System V IPC object or
POSIX message queue, which would outlive it, and reaches none of the grader's."""

import ctypes
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from mhakit.sandbox import Limits, plan, probe, scratch, uids
from mhakit.sandbox.child.layers import ipc

NUMBERS = ipc.CALLS[os.uname().machine]
LIBC = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT, IPC_RMID, IPC_STAT = 0, 0o1000, 0, 2

TRIES = """\
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
numbers, theirs = json.loads(sys.argv[-3]), int(sys.argv[-2])
def outcome(name, *args):
    result = libc.syscall(ctypes.c_long(numbers[name]), *[
        ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "done" if result >= 0 else errno.errorcode[ctypes.get_errno()]
buffer = ctypes.create_string_buffer(256)
print(json.dumps({
    "a segment of its own": outcome("shmget", 0, 1 << 20, 0o1000 | 0o600),
    "a semaphore": outcome("semget", 0, 1, 0o1000 | 0o600),
    "a message queue": outcome("msgget", 0, 0o1000 | 0o600),
    "a POSIX queue": outcome("mq_open", b"mhakit-test-%d" % os.getpid(),
                             os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None),
    "the grader's segment, read": outcome("shmctl", theirs, 2, buffer),
    "the grader's segment, attached": outcome("shmat", theirs, None, 0),
    "the grader's segment, removed": outcome("shmctl", theirs, 0, None),
}))
"""


@pytest.fixture(scope="module", autouse=True)
def one_worker():
    """Puts this module's tests on one worker of a parallel run (tests/worker_groups.py):
    each compares every segment of the machine before and after, and another of them,
    run beside it, makes a segment of its own in between (CI saw {10} == set())."""


def segments():
    """The ids of every System V segment on the machine (this IPC namespace's)."""
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[1]) for line in lines}


def shmget(size):
    LIBC.shmget.restype = ctypes.c_int
    found = LIBC.shmget(IPC_PRIVATE, size, IPC_CREAT | 0o600)
    assert found >= 0, os.strerror(ctypes.get_errno())
    return found


def run_in(mode, theirs):
    folder = Path(tempfile.mkdtemp(prefix="mhakit-test-ipc-"))
    try:
        with uids.pool_uid_for(plan.MODES[mode]) as uid:
            config = plan.child_plan(mode, Limits(), plan.child_environment(), folder,
                                     pool_uid=uid)
            command = plan.launcher_command(config, TRIES,
                                            extra=[json.dumps(NUMBERS), str(theirs)])
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    finally:
        scratch.remove_tree(folder)
    assert done.returncode == 0, done.stderr[-2000:]
    return config, json.loads(done.stdout)


def test_without_an_ipc_namespace_the_child_makes_none_and_reaches_none_of_the_graders():
    theirs = shmget(4096)
    try:
        before = segments()
        config, seen = run_in("landlock", theirs)
        assert "ipc" in config.layers
        assert set(seen.values()) == {"EPERM"}, seen
        assert segments() == before  # nothing left behind, and the grader's still there
    finally:
        LIBC.shmctl(theirs, IPC_RMID, None)


def test_the_layer_is_described_where_it_is_built_and_only_there():
    for mode, built in (("landlock", True), ("uid", True), ("jail", False),
                        ("userns", False), ("plain", False)):
        config = plan.plan(mode, Limits(), {}, uid=None, root="/tmp/nowhere",
                           scratch="/tmp/nowhere")
        assert ("ipc" in config.layers) == built, mode
        assert (ipc.SAID in plan.describe(config)) == built, mode


def test_a_plan_that_lost_the_layer_is_refused_naming_the_call(monkeypatch):
    planned = plan.child_plan

    def without_ipc(*args, **kwargs):
        config = planned(*args, **kwargs)
        del config.layers["ipc"]
        return config

    monkeypatch.setattr(probe, "child_plan", without_ipc)
    before = segments()
    probed = probe.probe("landlock", Limits())
    assert not probed.ok
    (line,) = probed.problems
    # (Landlock itself refuses a POSIX queue, with EACCES: the filter is first, with EPERM)
    assert line.startswith("landlock: a probe child could shmget a System V segment"), line
    assert segments() == before  # the probe removes what it could make
    monkeypatch.undo()
    probed = probe.probe("landlock", Limits())
    assert probed.ok, probed.problems
    assert {"shmget", "mq_open"} <= set(probed.facts["tried"])
