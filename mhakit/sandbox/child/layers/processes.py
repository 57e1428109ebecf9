"""One layer: what bounds the processes a submission starts. Stdlib only.

With a cgroup (cgroup.py) the whole submission shares one process limit. Without one,
and always when the child keeps the grader's uid and so could leave a cgroup, the child
may start no process at all: fork, vfork, clone and clone3 fail with EAGAIN, as past
RLIMIT_NPROC, and RLIMIT_NPROC is 1 for a child that is not root (root ignores it).
"""

import errno
import os
import resource

ORDER = 60
NEW_PROCESSES = [(name, errno.EAGAIN, None) for name in ("fork", "vfork", "clone", "clone3")]


def plan(setting):
    alone = not setting.mode.pool_uid or setting.cgroup is None
    nproc = None
    if setting.mode.pool_uid or os.geteuid() != 0:
        nproc = 1 if alone else setting.limits.processes
    return {"refused": alone and setting.seccomp, "nproc": nproc,
            "cgroup": setting.cgroup is not None}


def describe(section):
    said = ["no new processes (seccomp filter on fork, vfork and clone)"] * section["refused"]
    if section["nproc"] == 1:
        said.append("no new processes (RLIMIT_NPROC=1)")
    if not said and not section["cgroup"]:
        said.append("no limit on processes for the whole submission here")
    return said


def apply(section, _plan):
    if section["nproc"] is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (section["nproc"], section["nproc"]))
    return NEW_PROCESSES if section["refused"] else None
