"""One layer: the submission's cgroup. Stdlib only.

Where the grader has a cgroup for the submission (../../cgroups.py), the child moves
itself into it first, while it is still root and not yet jailed: whatever it starts
later is born there and cannot leave, so one memory limit and one process limit hold for
the whole submission.
"""

import os

ORDER = 10


def plan(setting):
    if setting.cgroup is None:
        return None
    return {"procs": list(setting.cgroup.procs_files), "said": setting.cgroup.layer}


def describe(section):
    return [section["said"]]


def apply(section, _plan):
    for procs in section["procs"]:
        # A bare descriptor: a first text-mode open() in a freshly forked process wakes
        # Python's io and codec machinery, and copying the pages it touches cost about
        # 1 ms per child, as much as the rest of its confinement.
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
