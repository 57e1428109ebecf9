"""Confine a grading child, then become it. Run by the grader as ``python -I -S -c``.

Trusted code, stdlib only. It reads one JSON argument (the plan that ../plan.py made),
confines itself layer by layer and execs the child's interpreter; no student code runs
before that. The zygote (zygote.py) runs the same steps in each child it forks.

Each layer is a file of its own in layers/ (their __init__ says what a layer file
holds), loaded here by its path, every file there. The plan names the layers this
machine builds, each with its section, in the order they apply; whatever the plan asks
for must hold, or the child does not run. The seccomp refusals of every layer go into one
filter, installed last.

In the namespaces the launcher stays behind as a waiter: the child is PID 1 of its own
PID namespace, and the waiter kills it when it is asked to end (SIGTERM).
"""

import ctypes
import json
import os
import signal
import sys
import types

PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None, use_errno=True)


class Loaded:
    """The layer files and the seccomp tool, loaded by path: none is importable where the
    child runs, and the child must not learn where the kit is."""

    def __init__(self, folder):
        self.seccomp = _load(folder, "seccomp")
        where = os.path.join(folder, "layers")
        self.layers = {name[:-3]: _load(where, name[:-3]) for name in sorted(os.listdir(where))
                       if name.endswith(".py") and name != "__init__.py"}


def numbers_of(layers, machine):
    """The numbers, on ``machine``, of the calls that ``layers`` add to seccomp's (their
    CALLS)."""
    found = {}
    for layer in layers:
        found.update(getattr(layer, "CALLS", {}).get(machine, {}))
    return found


def _load(folder, name):
    module = types.ModuleType(f"mhakit_child_{name}")
    with open(os.path.join(folder, f"{name}.py"), encoding="utf-8") as handle:
        exec(compile(handle.read(), f"<mhakit child: {name}>", "exec"), module.__dict__)
    return module


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


def enter(loaded, config):
    """In the process that stays behind (the waiter): a session of its own and, when the
    plan has namespaces, new ones, so that the child it forks next is PID 1 there."""
    die_with_parent()
    os.setsid()
    for name, section in config["layers"].items():
        enter_layer = getattr(loaded.layers[name], "enter", None)
        if enter_layer is not None:
            enter_layer(section)


def confine(loaded, config):
    """In the child, layer by layer, before any student code: every layer the plan names
    holds when this returns, or it raised."""
    refusals = []
    for name, section in config["layers"].items():
        refusals += loaded.layers[name].apply(section, config) or []
    if refusals:
        loaded.seccomp.install(list(dict.fromkeys(refusals)),
                               numbers_of(loaded.layers.values(), os.uname().machine))
    die_with_parent()  # again: a change of uid clears it


def main():
    config = json.loads(sys.argv[1])
    loaded = Loaded(config["child_dir"])
    enter(loaded, config)
    if config["namespaces"]:
        hold_sigterm()
        pid = os.fork()
        if pid:
            wait_and_mirror(pid)
        release_sigterm()
    confine(loaded, config)
    os.execve(config["argv"][0], config["argv"], config["env"])


if __name__ == "__main__":
    main()
