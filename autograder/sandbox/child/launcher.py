"""Confine a grading child, then become it. Run by the grader as ``python -I -S -c``.

Trusted code, stdlib only. It reads one JSON argument, builds what the child may
see, drops root and execs the child's interpreter; no student code runs before that.

In "jail" mode (root on Linux) the child gets new mount, PID, network, IPC and UTS
namespaces. Its root is a small tmpfs that holds read-only binds of /usr, of the
Python installation and of numpy, and a scratch folder. Course files, the graders and
the other submissions are not mounted, so they do not exist for it. There is no network
and it runs under an unprivileged uid of its own, so RLIMIT_NPROC applies.
In "plain" mode (no root, or no namespaces) it only applies the resource limits.

Before it drops root, the child moves itself into the submission's cgroup when the plan
names one (see ../cgroups.py): one memory limit and one process limit for everything it
starts. Without a cgroup, the plan asks for no new processes at all: RLIMIT_NPROC=1 for a
child that is not root, and a seccomp filter that fails fork, vfork and clone. The
waiter that stays behind kills the child when it is asked to end (SIGTERM).
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 38, 22, 2
# seccomp: the architecture as the kernel reports it, and the numbers of the system calls
# that make a process or a thread (clone3 is 435 everywhere).
FORK_CALLS = {"x86_64": (0xC000003E, (56, 57, 58, 435)), "aarch64": (0xC00000B7, (220, 435))}

LIBC = ctypes.CDLL(None, use_errno=True)


def _call(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source, target, fstype, flags, data=None):
    _call(LIBC.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                     flags, data and data.encode()), f"mount {target}")


def bind_read_only(source, target):
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def enter_namespaces():
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    _call(LIBC.unshare(flags), "unshare")


def build_jail(config):
    """A tmpfs root with only what the child needs, then chroot and drop root."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below leaks to the host
    root = config["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID, f"size={config['tmpfs_bytes']},mode=755")
    for source, inside in config["binds"]:
        bind_read_only(source, os.path.join(root, inside.lstrip("/")))
    for link, target in config["links"]:
        os.symlink(target, os.path.join(root, link))
    uid = config["uid"]
    # The one writable folder, also the child's TMPDIR. (No /tmp of its own: the binds may
    # already have made one, when Python or numpy live under /tmp on the host.)
    scratch = os.path.join(root, "scratch")
    os.makedirs(scratch, mode=0o700)
    os.chown(scratch, uid, uid)
    os.chdir(root)
    os.chroot(".")
    os.chdir("/scratch")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


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
        with open(procs, "w", encoding="ascii") as handle:
            handle.write("0")


def forbid_new_processes():
    """A seccomp filter: fork, vfork and clone (threads too) fail with EAGAIN, as they
    would past RLIMIT_NPROC. It holds for root as well, and across exec."""
    import platform
    import struct

    arch, calls = FORK_CALLS[platform.machine()]
    eagain = 0x00050000 | 11  # SECCOMP_RET_ERRNO | EAGAIN
    allow = 0x7FFF0000
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06

    def op(code, k, jt=0, jf=0):
        return (code, jt, jf, k)

    program = [op(load, 4), op(jeq, arch, 1, 0), op(ret, eagain),  # another ABI: refused
               op(load, 0), op(jge, 0x40000000, len(calls) + 1, 0)]  # x32 numbers: refused
    for index, number in enumerate(calls):
        program.append(op(jeq, number, len(calls) - index, 0))
    program += [op(ret, allow), op(ret, eagain)]
    code = b"".join(struct.pack("HBBI", *row) for row in program)
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(program), ctypes.addressof(buffer))
    _call(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _call(LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def confine_processes(config):
    """After the resource limits: no new processes, when the plan has no cgroup."""
    if config.get("forbid_new_processes"):
        forbid_new_processes()


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
    """The launcher stays behind as a root-owned waiter and exits as the child did."""
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


def main():
    config = json.loads(sys.argv[1])
    die_with_parent()
    os.setsid()
    if config["mode"] == "jail":
        # The child becomes PID 1 of a new PID namespace: when it dies, every process
        # it started dies with it, whatever session or group they moved to.
        enter_namespaces()
        hold_sigterm()
        pid = os.fork()
        if pid:
            wait_and_mirror(pid)
        release_sigterm()
        join_cgroup(config)
        build_jail(config)
    else:
        join_cgroup(config)
        os.chdir(config["scratch"])
    apply_limits(config)
    confine_processes(config)
    die_with_parent()
    # Past the file-size limit a write fails with EFBIG instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.execve(config["argv"][0], config["argv"], config["env"])


if __name__ == "__main__":
    main()
