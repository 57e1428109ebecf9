"""The pool of unprivileged uids that grading children run as (root's jail and the uid
mode), and whether anything of a submission is left once it ended. The grader's side.
"""

import fcntl
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

UID_BASE = 64000
UID_LOCKS = Path(tempfile.gettempdir()) / "mhakit-uids"


class UidPool:
    """One uid per running child: RLIMIT_NPROC counts processes per uid, so two children
    must never share one, not even children of two grading runs on the same machine.
    A uid is held by an exclusive lock on a file of its own.

    A uid found free is one that no process has: finding one reads every process's
    status, which costs more than the rest of a child's start. So a uid that a child of
    this process gave back with nothing of its own left (``give_back``) stays locked by
    this process, and the next child takes it without a search: while the lock is held,
    no other grader can have used it."""

    def __init__(self, base=UID_BASE, folder=UID_LOCKS):
        self.base, self.folder, self.lock = base, folder, threading.Lock()
        self._kept, self._kept_by = [], os.getpid()

    def lend(self):
        """A free uid, locked: (uid, the open lock file). Close the file to give it up."""
        with self.lock:
            if self._kept_by != os.getpid():  # a forked copy shares the parent's locks
                self._kept, self._kept_by = [], os.getpid()
            if self._kept:
                return self._kept.pop()
            self.folder.mkdir(mode=0o700, exist_ok=True)
            for uid in range(self.base, self.base + 10_000):
                handle = open(self.folder / str(uid), "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.close()
                    continue
                if not processes_of_uid(uid):  # nothing of an earlier grading lives on it
                    return uid, handle
                handle.close()
        raise RuntimeError("no free uid for a grading child")

    def give_back(self, lease):
        """A lease from ``lend`` whose child has ended with nothing of it left (its cgroup
        empty, or no process of the uid): kept locked for this process's next child."""
        with self.lock:
            if self._kept_by == os.getpid():
                self._kept.append(lease)
                return
        lease[1].close()

    @contextmanager
    def take(self):
        uid, handle = self.lend()
        try:
            yield uid
        finally:
            handle.close()  # closing the file releases the lock


UIDS = UidPool()
LEFT_BEHIND: list = []  # uid leases and cgroups that still held a process when grading ended


def processes_of_uid(uid):
    """The pids of every process (zombies too: they count against RLIMIT_NPROC) of ``uid``."""
    found, marker = [], b"\nUid:\t"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as handle:
                head = handle.read(1024)
        except OSError:
            continue
        at = head.find(marker)
        if at >= 0 and head[at + len(marker):].split(b"\t", 1)[0] == str(uid).encode():
            found.append(int(name))
    return found


def none_left(cgroup, uid, seconds=5.0):
    """True once no process of a submission is left: its cgroup is empty and, in the jail,
    no process of its uid exists. A bounded wait, for the kernel to reap them."""
    deadline, pause = time.monotonic() + seconds, 0.0005
    while True:
        left = set(cgroup.pids()) if cgroup is not None else set()
        if uid is not None:
            left.update(processes_of_uid(uid))
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        if cgroup is not None:
            cgroup.kill(seconds=0)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


@contextmanager
def pool_uid_for(mode):
    """A uid lent from the pool for a Mode that takes one, else None."""
    if mode.pool_uid:
        with UIDS.take() as uid:
            yield uid
    else:
        yield None
