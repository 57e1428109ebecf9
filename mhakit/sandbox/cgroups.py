"""One cgroup per submission: one memory limit and one process limit for every process
the submission starts, and one way to end all of them. The grader's side: trusted.

Resource limits (setrlimit) hold per process, so eight forked processes may each hold
the whole memory limit. A cgroup counts them together. The grader makes one, under its
own cgroup, for each child; the trusted launcher or zygote code moves the child into it
while it is still root, before it drops to the child's uid, so nothing the child starts
can leave it. At the end of grading every process in it is killed, wherever it moved
its session or its signals, and the cgroup is removed.

Both cgroup versions are supported. Version 1 (separate ``memory`` and ``pids``
hierarchies, as on this kit's CI machines) has no ``cgroup.kill``: the processes listed
in ``cgroup.procs`` are killed until the list is empty, a bounded number of rounds,
which the process limit keeps short. Version 2 has ``memory.max``, ``pids.max`` and
``cgroup.kill``. Where neither can be made (an unprivileged grader, a container that
delegates no controllers), ``create`` returns None and says why in ``PROBLEM``; the
child then gets no new processes at all (see child/launcher.py).

``MHAKIT_CGROUP=0`` turns cgroups off, to try that fallback.
"""

import functools
import itertools
import os
import select
import signal
import threading
import time
from pathlib import Path

from ..settings import settings

PREFIX = "mhakit"
PROBLEM: list[str] = []  # why no cgroup could be made here, when none could
_COUNTER = itertools.count()
_STATE = {"works": None}
_LOCK = threading.Lock()


def _mounts(mountinfo="/proc/self/mountinfo"):
    """{controller: (mount point, root of the mount)} for version 1, and "" for version 2."""
    found = {}
    with open(mountinfo, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            root, point, fstype, options = fields[3], fields[4], tail[0], tail[2].split(",")
            if fstype == "cgroup2":
                found.setdefault("", (point, root))
            elif fstype == "cgroup":
                for name in ("memory", "pids"):
                    if name in options:
                        found.setdefault(name, (point, root))
    return found


def _own_paths(own="/proc/self/cgroup"):
    """{controller: path of the grader's own cgroup}; "" is version 2's unified path."""
    paths = {}
    with open(own, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) != 3:
                continue
            for name in parts[1].split(",") if parts[1] else [""]:
                paths[name] = parts[2]
    return paths


def _folder(mounts, paths, name):
    """Where the grader's own cgroup of ``name`` is, in this process's file system."""
    if name not in mounts or name not in paths:
        return None
    point, root = mounts[name]
    inside = os.path.relpath(paths[name], root) if root != "/" else paths[name].lstrip("/")
    if inside.startswith(".."):
        return None  # our cgroup is outside what is mounted here
    folder = Path(point) / inside if inside != "." else Path(point)
    return folder if folder.is_dir() else None


def _write(path, text):
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def _pids(folder):
    try:
        text = (folder / "cgroup.procs").read_text(encoding="ascii")
    except OSError:
        return []
    return [int(word) for word in text.split()]


def _held(pids):
    """{pid: its pidfd, or None where pidfds are missing}; a process already gone is left out."""
    held = {}
    for pid in pids:
        try:
            held[pid] = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        except ProcessLookupError:
            continue
        except OSError:
            held[pid] = None
    return held


def _kill(pid, fd=None):
    try:
        if fd is None:
            os.kill(pid, signal.SIGKILL)
        else:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass


def _until_ended(fds, deadline):
    """Wait until every process of ``fds`` (pidfds) has ended, or the deadline: a pidfd
    turns readable when its process ends, so this waits as long as they take and no
    longer (about 1.3 ms for a child's last process, on this project's machine)."""
    waiting = select.poll()
    for fd in fds:
        waiting.register(fd, select.POLLIN)
    while fds and (left := deadline - time.monotonic()) > 0:
        for fd, _ in waiting.poll(max(1, int(left * 1000))):
            waiting.unregister(fd)
            fds.remove(fd)


class SubmissionCgroup:
    """The cgroup(s) of one submission: one folder in version 2, one per controller in 1."""

    def __init__(self, version, folders, memory_bytes, processes):
        self.version, self.folders = version, folders
        self.memory_bytes, self.processes = memory_bytes, processes

    @property
    def procs_files(self):
        """What the trusted launcher writes "0" into, to move the child in."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    @property
    def layer(self):
        return (f"cgroup v{self.version}: memory {self.memory_bytes >> 20} MB and "
                f"{self.processes} processes for the whole submission, killed as a whole "
                f"when its grading ends")

    def pids(self):
        found = set()
        for folder in self.folders:
            found.update(_pids(folder))
        return found

    def peak_memory(self):
        """The most memory the whole submission held at once, in bytes (None if unknown)."""
        names = ("memory.max_usage_in_bytes",) if self.version == 1 else ("memory.peak",)
        for folder in self.folders:
            for name in names:
                try:
                    return int((folder / name).read_text(encoding="ascii").split()[0])
                except (OSError, ValueError, IndexError):
                    continue
        return None

    def kill(self, seconds=5.0):
        """Kill every process in the cgroup; True once none is left (bounded wait)."""
        kill_file = self.folders[0] / "cgroup.kill" if self.version == 2 else None
        if kill_file is not None and kill_file.exists():
            try:
                _write(kill_file, "1")
            except OSError:
                pass
        deadline = time.monotonic() + seconds
        pause, before = 0.0005, None
        while True:
            left = self.pids()
            if not left:
                return True
            ending = _held(left)
            stuck, before = left == before, left  # listed still after they all ended?
            try:
                # What cgroup.kill did not end (version 1 has none). Through the pidfd of
                # a process still listed after it was opened: never a process that took
                # the number of one that ended meanwhile.
                listed, signalled = self.pids(), []
                for pid, fd in ending.items():
                    if fd is None:
                        _kill(pid)
                    elif pid in listed:
                        _kill(pid, fd)
                        signalled.append(fd)
                if time.monotonic() > deadline:
                    return False
                if stuck or None in ending.values():
                    time.sleep(pause)  # no pidfd here: look again a little later
                    pause = min(pause * 2, 0.05)
                else:  # not a process that only took an ended one's number
                    _until_ended(signalled, deadline)
            finally:
                for fd in ending.values():
                    if fd is not None:
                        os.close(fd)

    def remove(self):
        """Remove the folders; True when all are gone (a cgroup with processes stays)."""
        removed = True
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                removed = False
        return removed


def create(memory_bytes, processes):
    """A new cgroup for one submission, with both limits, or None. Never raises."""
    if not settings().cgroups:
        if not PROBLEM:
            PROBLEM.append("cgroups turned off (MHAKIT_CGROUP=0)")
        return None
    if _STATE["works"] is False:
        return None
    name = f"{PREFIX}-{os.getpid()}-{next(_COUNTER)}"
    try:
        made = _make(name, memory_bytes, processes)
    except OSError as error:
        made, why = None, f"{type(error).__name__}: {error}"
    else:
        why = "no memory and pids controllers where this grader could make a cgroup"
    with _LOCK:
        if made is None and _STATE["works"] is None:
            _STATE["works"] = False
            PROBLEM.append(why)
        elif made is not None:
            _STATE["works"] = True
    return made


def _make(name, memory_bytes, processes):
    memory, pids, unified = _own_folders(os.getpid())
    if memory is not None and pids is not None:
        return _make_v1(memory / name, pids / name, memory_bytes, processes)
    if unified is not None:
        return _make_v2(unified, name, memory_bytes, processes)
    return None


@functools.lru_cache(maxsize=1)
def _own_folders(pid):
    """(memory, pids, unified): the folders of this process's own cgroups, or None each.
    Read once per process (``pid``), not once per child: reading the mount table was
    most of what making a cgroup cost the grader."""
    if not os.path.exists("/proc/self/cgroup"):
        return None, None, None
    mounts, paths = _mounts(), _own_paths()
    return tuple(_folder(mounts, paths, name) for name in ("memory", "pids", ""))


def _make_v1(memory, pids, memory_bytes, processes):
    made = []
    try:
        for folder in (memory, pids):
            folder.mkdir(mode=0o755)
            made.append(folder)
        _write(memory / "memory.limit_in_bytes", str(memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
            _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
        _write(pids / "pids.max", str(processes))
    except OSError:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    return SubmissionCgroup(1, [memory, pids], memory_bytes, processes)


def _make_v2(own, name, memory_bytes, processes):
    available = (own / "cgroup.controllers").read_text(encoding="ascii").split()
    if not {"memory", "pids"} <= set(available):
        return None
    enabled = (own / "cgroup.subtree_control").read_text(encoding="ascii").split()
    if not {"memory", "pids"} <= set(enabled):
        # Refused (EBUSY) when our own cgroup holds processes and is not the root:
        # then this grader cannot have one, and says so.
        _write(own / "cgroup.subtree_control", "+memory +pids")
    folder = own / name
    folder.mkdir(mode=0o755)
    try:
        _write(folder / "memory.max", str(memory_bytes))
        if (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", "0")
        _write(folder / "pids.max", str(processes))
    except OSError:
        folder.rmdir()
        raise
    return SubmissionCgroup(2, [folder], memory_bytes, processes)
