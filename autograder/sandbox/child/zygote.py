"""A warm parent for grading children: numpy imported, nothing of the kit. Trusted code.

Starting Python and importing numpy costs more than grading a whole submission, so the
grader keeps one of these per grading run. It has imported numpy and read the child's
runtime and the launcher's jail code from their files, and nothing else. For each
submission the grader sends it a plan and its end of the child's socket, and it forks:

    zygote ── A (a root-owned waiter) ── B (the child: jailed, then serving the socket)

A enters the new namespaces and forks B, which becomes PID 1 there, moves into the
submission's cgroup, builds the jail and drops root, then serves. When B ends, A writes B's
exit status onto the socket, so the grader can say what happened, and exits. The zygote
reaps A. The zygote exits when the grader closes its control socket.

In plain mode A tells the zygote B's pid, and the zygote tells the grader both: there B
runs as the grader's own user and could kill A, so the grader must be able to end B. On
SIGTERM, A kills B (in the jail, B is PID 1 of its namespace: all it started dies too).

argv: control socket fd, the folder that holds numpy, runtime file, launcher file.
"""

import json
import os
import signal
import socket
import sys
import types

CONFINEMENT_FAILED = 70  # the child could not be confined; the grader says so


def load(path, name):
    module = types.ModuleType(name)
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def exit_frame(runtime, status):
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return runtime.pack({"op": "exited", "code": code})


def become_child(config, rfd, wfd, report, runtime, launcher):
    """Runs in A. Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # A waits for B itself
        launcher.die_with_parent()
        os.setsid()
        if config["mode"] == "jail":
            launcher.enter_namespaces()
        launcher.hold_sigterm()
        pid = os.fork()
        if pid:
            launcher.release_sigterm(pid)
            if report is not None:
                os.write(report, str(pid).encode())
                os.close(report)
            if rfd != wfd:
                os.close(rfd)
            _, status = os.waitpid(pid, 0)
            os.write(wfd, exit_frame(runtime, status))
            os._exit(0)
        try:
            if report is not None:
                os.close(report)
            launcher.release_sigterm()
            launcher.join_cgroup(config)
            if config["mode"] == "jail":
                launcher.build_jail(config)
            else:
                os.chdir(config["scratch"])
            launcher.apply_limits(config)
            launcher.confine_processes(config)
            launcher.die_with_parent()
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            os.environ.clear()
            os.environ.update(config["env"])
        except BaseException:  # noqa: BLE001 - the grader hears it as exit code 70
            os._exit(CONFINEMENT_FAILED)
        runtime.Child(rfd, wfd).serve()
    finally:
        os._exit(0)


def serve(control, runtime, launcher):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped automatically
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        except OSError:
            return
        if not message:
            return  # the grader is gone
        config = json.loads(message)
        # B's pid matters only in plain mode (in the jail B cannot kill A, and is PID 1 of
        # its namespace); waiting for it costs a fork's time, so only there.
        report_r, report_w = os.pipe() if config["mode"] != "jail" else (None, None)
        pid = os.fork()
        if pid == 0:
            control.close()
            if report_r is not None:
                os.close(report_r)
            become_child(config, fds[0], fds[1], report_w, runtime, launcher)
        for fd in fds:
            os.close(fd)
        child = None
        if report_r is not None:
            os.close(report_w)
            with os.fdopen(report_r, "rb") as handle:  # at its end once A wrote or died
                reported = handle.read(32)
            child = int(reported) if reported.isdigit() else None
        control.send(json.dumps({"pid": pid, "child": child}).encode())


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[2])
    import numpy  # noqa: F401 - warm: every child starts with numpy imported

    serve(socket.socket(fileno=int(sys.argv[1])), load(sys.argv[3], "mhakit_child_runtime"),
          load(sys.argv[4], "mhakit_child_launcher"))
