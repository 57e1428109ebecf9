"""A warm parent for grading children: numpy imported, nothing of the kit. Trusted code.

Starting Python and importing numpy costs more than grading a whole submission, so the
grader keeps one of these per grading run. It has imported numpy and read the child's
runtime and the launcher's jail code from their files, and nothing else. For each
submission the grader sends it a plan and its end of the child's socket, and it forks:

    zygote ── A (the waiter) ── B (the child: jailed, then serving the socket)

A enters the new namespaces, when the plan has them, and forks B, which becomes PID 1
there and confines itself layer by layer (launcher.confine), then serves. When B ends, A writes B's
exit status onto the socket, so the grader can say what happened, and exits. The zygote
reaps A. The zygote exits when the grader closes its control socket.

The grader may also send the zygote a batch of calls that every submission gets (in a
sealed memory file): the zygote decodes it once, and the children it forks afterwards
are sent only its key (see runtime.preload).

Without namespaces A tells the zygote B's pid, and the zygote tells the grader both: there
B may run as the grader's own user and could kill A, so the grader must be able to end B.
On SIGTERM, A kills B (in the namespaces, B is PID 1 of its own: all it started dies too).

argv: control socket fd, the folder that holds numpy (and the packages students may
import), runtime file, launcher file, the modules to import first (comma-separated), and
the inert IPython's file, whose text every child is sent (compiled here once, for all).
"""

import json
import os
import signal
import socket
import sys
import types

CONFINEMENT_FAILED = 70  # the child could not be confined; the grader says so


def load(path, name):
    """A module from a file, compiled under a name that does not say where the kit is."""
    module = types.ModuleType(name)
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def exit_frame(runtime, status):
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return runtime.pack({"op": "exited", "code": code})


def become_child(config, rfd, wfd, report, runtime, launcher, loaded):
    """Runs in A. Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # A waits for B itself
        launcher.enter(loaded, config)
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
            launcher.confine(loaded, config)
            os.environ.clear()
            os.environ.update(config["env"])
            sys.argv = ["-c"]  # the zygote's arguments name the kit's folders
        except BaseException:  # noqa: BLE001 - the grader hears it as exit code 70
            os._exit(CONFINEMENT_FAILED)
        runtime.Child(rfd, wfd).serve()
    finally:
        os._exit(0)


def read_file(fd):
    """The whole content of a memory file the grader sent."""
    size, chunks, offset = os.fstat(fd).st_size, [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def serve(control, runtime, launcher, loaded):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped automatically
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        except OSError:
            return
        if not message:
            return  # the grader is gone
        config = json.loads(message)
        if config.get("op") == "preload":  # a batch for the children forked from now on
            try:
                runtime.preload(config["key"], read_file(fds[0]))
                answer = {"held": list(runtime.PRELOADED)}  # the oldest may have gone
            except Exception as error:  # noqa: BLE001 - the grader sends the batch itself
                answer = {"error": type(error).__name__}
            for fd in fds:
                os.close(fd)
            control.send(json.dumps(answer).encode())
            continue
        # B's pid matters only without namespaces (there B is PID 1 of its namespace and
        # cannot kill A); waiting for it costs a fork's time, so only there.
        report_r, report_w = os.pipe() if not config["namespaces"] else (None, None)
        pid = os.fork()
        if pid == 0:
            control.close()
            if report_r is not None:
                os.close(report_r)
            become_child(config, fds[0], fds[1], report_w, runtime, launcher, loaded)
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

    import importlib

    for warm in filter(None, sys.argv[5].split(",") if len(sys.argv) > 5 else ()):
        try:
            importlib.import_module(warm)  # what these submissions import, from the same site
        except Exception:  # noqa: BLE001 - not installed, or broken: the child says so itself
            pass

    launcher_module = load(sys.argv[4], "mhakit_child_launcher")
    loaded_layers = launcher_module.Loaded(os.path.dirname(sys.argv[4]))
    runtime_module = load(sys.argv[3], "mhakit_child_runtime")
    if len(sys.argv) > 6:
        with open(sys.argv[6], encoding="utf-8") as handle:
            runtime_module.precompile(handle.read())
    serve(socket.socket(fileno=int(sys.argv[1])), runtime_module, launcher_module,
          loaded_layers)
