"""One memory limit and one process limit for a whole submission, and nothing of it left
when its grading ends.

Each test grades a notebook whose answers attack the limits, through grade_notebook, and
looks at the submission's processes from outside: their memory in /proc and in the
cgroup the grader made, and whether any of them is still alive afterwards. In CI (root,
cgroup v1) the tests that need the jail or a cgroup fail when either is missing.
"""

import functools
import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mhakit.grader.grading import grade_notebook
from tests.mha_exercise import POINTS, QUIZ_POINTS
from mhakit.sandbox import Limits, cgroups, confinement, uids

from tests.attacks.corpus import ATTACKS, Attack
from tests.attacks.on_limits import hogs, outlive

# The tests look for a submission's processes by name among all of the machine's: each
# test names its own (unique_name), so that they may run beside any other test.

IN_CI = bool(os.environ.get("CI"))
FULL = {name: float(sum(p)) for name, p in POINTS.items()}
FULL["quiz"] = float(sum(QUIZ_POINTS.values()))
REPO = Path(__file__).resolve().parents[2]


def jailed():
    return confinement.jail_works(Limits())


@functools.cache
def cgroup_works():
    """Probed when a test first asks, never while pytest collects."""
    if os.environ.get("MHAKIT_CGROUP") == "0":
        return False
    made = cgroups.create(16 << 20, 4)
    if made is None:
        return False
    made.remove()
    return True


def need(present, what):
    if present:
        return
    if IN_CI:
        pytest.fail(f"CI runs as root with cgroup v1, but {what} is missing here "
                    f"(modes not built: {confinement.choice(Limits()).problems}, cgroup: {cgroups.PROBLEM})")
    pytest.skip(f"this machine has no {what}")


def expected(zero):
    return {part: 0.0 if part in zero else full for part, full in FULL.items()}


# --- the attacks -----------------------------------------------------------------------

def unique_name(kind):
    """A process name (at most 15 bytes) that no other test, nor another run, uses."""
    return f"{kind}-{secrets.token_hex(4)}"


def named(name):
    """Processes on this machine whose name (comm) is ``name``."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == name:
                found.append(int(comm.parent.name))
        except (OSError, ValueError):
            continue
    return found


def resident_bytes(pids):
    """Anonymous memory held by ``pids`` together: the sum of their proportional set
    sizes, in which a page that several of them share (after fork) counts once in all.
    (Pages of shared libraries are left out: the page cache holds them for everyone.)"""
    total = 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss_Anon:"):
                total += int(line.split()[1]) << 10
    return total


class Sampler(threading.Thread):
    """The most resident memory that the processes named ``name`` held together."""

    def __init__(self, name):
        super().__init__(daemon=True)
        self.name, self.peak, self.seen, self.done = name, 0, set(), threading.Event()

    def run(self):
        while not self.done.wait(0.01):
            pids = named(self.name)
            self.seen.update(pids)
            self.peak = max(self.peak, resident_bytes(pids))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()


def notebook(tmp_path, **edits):
    path = tmp_path / "mha.ipynb"
    path.write_bytes(Attack("limits", edits=edits).make())
    return path


# --- memory -----------------------------------------------------------------------------

def test_eight_forked_processes_share_one_memory_limit(tmp_path, monkeypatch):
    need(jailed(), "jail")
    need(cgroup_works(), "cgroup with memory and pids controllers")
    limit = 1024 << 20
    monkeypatch.setenv("MHAKIT_MEMORY_MB", str(limit >> 20))
    peaks = []
    kill = cgroups.SubmissionCgroup.kill

    def measured_kill(group, *args, **kwargs):  # the kernel's own count, before the end
        peaks.append(group.peak_memory())
        return kill(group, *args, **kwargs)

    monkeypatch.setattr(cgroups.SubmissionCgroup, "kill", measured_kill)
    name = unique_name("hog")
    hog = 320 << 20
    path = notebook(tmp_path, answer_softmax=hogs(8, hog >> 20, name))  # 2.5 GB in all
    with Sampler(name) as sampler:
        result = grade_notebook(path, seed=3)
    extra = result.extra
    assert extra["parts"] == expected(("softmax",)), extra
    assert any(layer.startswith("cgroup v") and "1024 MB" in layer
               for layer in extra["isolation"]), extra["isolation"]
    # Seen from outside, the hogs held well under the 2.5 GB they asked for. The slack: a
    # sample reads the hogs one after another, and on a busy machine one may free its
    # memory, and another take it, between two reads; and the pages they inherited from
    # the warm parent are charged to that parent's cgroup but show in their own counts.
    assert sampler.peak <= limit + hog, f"the hogs held {sampler.peak >> 20} MB"
    assert None not in peaks and max(peaks) <= limit
    # The attack was real: together the hogs reached the limit they were held to.
    assert max(peaks) >= limit // 2, f"peak {max(peaks) >> 20} MB"
    assert len(sampler.seen) >= 2, sampler.seen  # and the sampler saw them by their name
    assert not named(name)


# --- lifetime ---------------------------------------------------------------------------

def test_a_process_that_leaves_its_session_does_not_outlive_grading(tmp_path, monkeypatch):
    need(jailed(), "jail")
    monkeypatch.setenv("MHAKIT_CALL_SECONDS", "2")
    target, name = tmp_path / "written-after-grading.txt", unique_name("ghost")
    result = grade_notebook(notebook(tmp_path, answer_split_heads=outlive(target, name)),
                            seed=3)
    extra = result.extra
    assert extra["parts"] == expected(("split_heads",)), extra
    assert not named(name), "a process of the submission outlived its grading"
    assert not uids.LEFT_BEHIND  # every uid went back, every cgroup was removed
    assert not target.exists()


def test_nothing_of_a_class_outlives_a_class_run(tmp_path):
    """A class run's workers end their children in the background (process.Teardown):
    still, when `mhakit grade` exits, every process of every submission has ended."""
    need(jailed(), "jail")
    submitted, name = tmp_path / "submitted", unique_name("ghost")
    targets = []
    for number in range(3):
        folder = submitted / f"ghost{number}" / "mha"
        folder.mkdir(parents=True)
        targets.append(tmp_path / f"written-after-grading-{number}.txt")
        (folder / "mha.ipynb").write_bytes(
            Attack("limits", edits={"answer_split_heads": outlive(targets[-1], name)}).make())
    done = subprocess.run(
        [sys.executable, "-m", "mhakit.integrations.cli", "grade", str(submitted),
         "--out", str(tmp_path / "out"), "--seed", "3", "--jobs", "2", "--json"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env=dict(os.environ, MHAKIT_CALL_SECONDS="2"))
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    assert {s: r["extra_data"]["parts"]["split_heads"] for s, r in results.items()} == {
        f"ghost{n}": 0.0 for n in range(3)}
    assert not named(name), "a process of the class outlived its run"
    assert not any(target.exists() for target in targets)


PLAIN_GRADING = """
import json, sys
from pathlib import Path
from mhakit.grader.grading import grade_notebook
from mhakit.sandbox import uids
def named(name):
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == name:
                found.append(int(comm.parent.name))
        except (OSError, ValueError):
            continue
    return found
result = grade_notebook(sys.argv[1], seed=3)
left = named(sys.argv[2])
print(json.dumps({"parts": result.parts, "left": left,
                  "isolation": result.extra["isolation"],
                  "left_behind": len(uids.LEFT_BEHIND)}))
"""


# The modes in which the child keeps the grader's own uid, and so could leave a cgroup:
# Landlock alone, and plain (unconfined, accepted).
SAME_UID_MODES = ["landlock", "plain"]


def grade_plainly(path, mode, name, **env):
    """What grading ``path`` in ``mode`` gave, in a process of its own, with the pids of
    the processes named ``name`` that were left when it ended."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_GRADING, str(path), name], capture_output=True,
        text=True, timeout=600, cwd=REPO,
        env=dict(os.environ, MHAKIT_SANDBOX=mode, MHAKIT_ALLOW_UNCONFINED="1",
                 MHAKIT_CALL_SECONDS="2", **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", SAME_UID_MODES)
@pytest.mark.parametrize("cgroup", ["with a cgroup", "without"])
def test_under_the_graders_uid_nothing_outlives_grading_or_writes_after_it(tmp_path, cgroup,
                                                                          mode):
    if cgroup == "with a cgroup":
        need(cgroup_works() or os.geteuid() != 0, "cgroup with memory and pids controllers")
    target, name = tmp_path / "written-after-grading.txt", unique_name("ghost")
    path = notebook(tmp_path, answer_split_heads=outlive(target, name))
    seen = grade_plainly(path, mode, name,
                         **({"MHAKIT_CGROUP": "0"} if cgroup == "without" else {}))
    assert seen["parts"] == expected(("split_heads",)), seen
    assert seen["left"] == [] and seen["left_behind"] == 0, seen
    assert any(layer.startswith("no new processes") for layer in seen["isolation"]), seen
    # The grader has exited too: had anything of the submission survived, it would
    # have seen its watched process go, and written at once.
    watcher = subprocess.run([sys.executable, "-c", "import time; time.sleep(1)"], timeout=60)
    assert watcher.returncode == 0
    assert not named(name)
    assert not target.exists(), target.read_text()


@pytest.mark.parametrize("mode", SAME_UID_MODES)
def test_a_fork_bomb_under_the_graders_uid_is_contained(tmp_path, mode):
    bomb = next(attack for attack in ATTACKS if attack.name == "fork-bomb")
    # The corpus's bomb, under a name of its own: whatever it forked would carry it.
    name = unique_name("bomb")
    named_bomb = {cell: f"import ctypes\nctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"
                  + source for cell, source in bomb.edits.items()}
    path = tmp_path / "mha.ipynb"
    path.write_bytes(Attack("fork-bomb", zero=bomb.zero, edits=named_bomb).make())
    seen = grade_plainly(path, mode, name, MHAKIT_CGROUP="0")
    assert seen["parts"] == expected(bomb.zero), seen
    assert "no new processes (seccomp filter on fork, vfork and clone)" in seen["isolation"] \
        or "no new processes (RLIMIT_NPROC=1)" in seen["isolation"], seen["isolation"]
    assert seen["left"] == [] and not named(name), seen


def test_the_result_names_the_process_limits_that_held(tmp_path):
    result = grade_notebook(notebook(tmp_path), seed=3)
    layers = result.extra["isolation"]
    assert result.score == 100
    if cgroup_works():
        assert any(layer.startswith("cgroup v") and "processes for the whole submission"
                   in layer for layer in layers), layers
    else:
        assert any(layer.startswith("no new processes") for layer in layers), layers
