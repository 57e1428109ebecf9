"""Confine a grading child, then become it. Run by the grader as ``python -I -S -c``.

Trusted code, stdlib only. It reads one JSON argument (the plan that ../confinement.py
made), confines itself layer by layer and execs the child's interpreter; no student code
runs before that. The zygote (zygote.py) runs the same steps in each child it forks.

Each layer is a file of its own next to this one: namespaces.py (new namespaces and a root
of the child's own), landlock.py (the kernel's file and network sandbox), identity.py (an
unprivileged uid, or no capabilities in a user namespace) and seccomp.py (no new
processes; and, where the child keeps the grader's uid, nothing done to a file it has not
opened for writing or to another process). The plan says which of them this machine can
build; whatever the plan asks for must hold, or the child does not run.

Before it drops its privileges, the child moves itself into the submission's cgroup when
the plan names one (see ../cgroups.py): one memory limit and one process limit for
everything it starts. Without a cgroup, the plan asks for no new processes at all:
RLIMIT_NPROC=1 for a child that is not root, and the seccomp filter. In the namespaces
the launcher stays behind as a waiter: the child is PID 1 of its own PID namespace, and
the waiter kills it when it is asked to end (SIGTERM).
"""

import ctypes
import json
import os
import resource
import signal
import sys
import types

PR_SET_PDEATHSIG = 1
LAYERS = ("namespaces", "landlock", "identity", "seccomp")
LIBC = ctypes.CDLL(None, use_errno=True)
# The layers' modules, set by load_layers: none is importable where the child runs.
namespaces = landlock = identity = seccomp = None


def load_layers(folder):
    """The layer files, loaded as modules without naming their folder to the child."""
    global namespaces, landlock, identity, seccomp
    namespaces, landlock, identity, seccomp = (_load_layer(folder, name) for name in LAYERS)


def _load_layer(folder, name):
    module = types.ModuleType(f"mhakit_child_{name}")
    with open(os.path.join(folder, f"{name}.py"), encoding="utf-8") as handle:
        exec(compile(handle.read(), f"<mhakit child: {name}>", "exec"), module.__dict__)
    return module


def apply_limits(config):
    limits = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS,
              "fsize": resource.RLIMIT_FSIZE, "core": resource.RLIMIT_CORE,
              "nproc": resource.RLIMIT_NPROC, "nofile": resource.RLIMIT_NOFILE}
    for name, value in config["limits"].items():
        resource.setrlimit(limits[name], (value, value))


def join_cgroup(config):
    """Move this process (still root, not yet jailed) into the submission's cgroup;
    whatever it starts later is born there and cannot leave it."""
    for procs in config.get("cgroup_procs") or ():
        # A bare descriptor: a first text-mode open() in a freshly forked process wakes
        # Python's io and codec machinery, and copying the pages it touches cost about
        # 1 ms per child, as much as the rest of its confinement.
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


def hold_sigterm():
    """Blocked from before the fork, so that the waiter has its handler before a SIGTERM
    can end it without killing the child."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def release_sigterm(child_pid=None):
    """In the waiter: SIGTERM (the grader ending the submission) kills the child, which is
    PID 1 of its namespace in the jail, so everything it started dies with it. In the
    child: the signal mask is inherited, and must not stay blocked."""
    if child_pid is not None:
        def end_child(_signum, _frame):
            try:
                os.kill(child_pid, signal.SIGKILL)
            except OSError:
                pass
        signal.signal(signal.SIGTERM, end_child)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def wait_and_mirror(pid):
    """The launcher stays behind as the waiter, outside the child's confinement, and exits
    as the child did."""
    for fd in range(3, 256):  # the child's socket must close when the child dies
        try:
            os.close(fd)
        except OSError:
            pass
    release_sigterm(pid)
    _, status = os.waitpid(pid, 0)
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def die_with_parent():
    """If the grader is killed (kill -9), its children go too; set again after setuid,
    which clears it."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def enter(config):
    """In the process that stays behind (the waiter): a session of its own and, when the
    plan has namespaces, new ones, so that the child it forks next is PID 1 there."""
    die_with_parent()
    os.setsid()
    if config["namespaces"]:
        namespaces.enter(user=config["namespaces"] == "user")


def confine(config):
    """In the child, layer by layer, before any student code: every layer the plan names
    holds when this returns, or it raised."""
    join_cgroup(config)  # while it may still write to the cgroup's files
    if config["namespaces"]:
        namespaces.build_root(config)
    else:
        os.chdir(config["scratch"])
    if config["landlock"]:  # before the uid changes: the rules' paths are opened as the grader
        rules = config["landlock"]
        landlock.restrict(rules["read"], rules["write"], rules["abi"], rules.get("list", ()))
    if config["drop_capabilities"]:
        identity.drop_capabilities()
    elif config.get("uid") is not None:
        identity.become(config["uid"], config["uid"])
    apply_limits(config)
    # One filter, last: the layers above use what it refuses (the jail's scratch is
    # chowned), and a filter stacked on another would run on every call the child makes.
    refusals = list(seccomp.NEW_PROCESSES) if config.get("forbid_new_processes") else []
    if config.get("others_untouched"):  # its pid as it sees itself: 1 in a PID namespace
        refusals += seccomp.others_untouched(os.getpid())
    if config.get("no_sockets"):
        refusals += [refusal for refusal in seccomp.NO_SOCKETS if refusal not in refusals]
    if refusals:
        seccomp.install(refusals)
    die_with_parent()  # again: a change of uid clears it
    # Past the file-size limit a write fails with EFBIG instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def main():
    config = json.loads(sys.argv[1])
    load_layers(config["child_dir"])
    enter(config)
    if config["namespaces"]:
        hold_sigterm()
        pid = os.fork()
        if pid:
            wait_and_mirror(pid)
        release_sigterm()
    confine(config)
    os.execve(config["argv"][0], config["argv"], config["env"])


if __name__ == "__main__":
    main()
