"""One layer: where the child keeps the grader's uid (a user namespace, or Landlock
alone), it changes no file it has not opened for writing and reaches no process but its
own. Stdlib only.

Landlock governs opening, creating, renaming and removing, but never chmod, chown, utime,
extended attributes or file flags, nor (below its ABI 3) truncate, nor (below ABI 6)
signals; a uid of the grader's own may do all of those to the grader's files and
processes. A seccomp filter refuses them, for root as well, and across exec. A uid of the
pool's may do none of them to what is not its own, so every confining mode's probe
tries them all.
"""

import errno
import os

ORDER = 70

# What the child never does to what it has not opened for writing.
FILE_CHANGES = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
                "fchownat", "utime", "utimes", "futimesat", "utimensat", "setxattr",
                "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
                "fremovexattr", "removexattrat", "truncate", "file_setattr")
# ...nor to another process: these reach one by a pid or a pidfd, past any argument a
# filter could read, so none is allowed at all.
PROCESS_CHANGES = ("ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open",
                   "kcmp", "pidfd_send_signal", "pidfd_getfd", "process_madvise",
                   "process_mrelease", "ioprio_set", "migrate_pages", "move_pages")
# fcntl: an owner of its own descriptor's SIGIO is a signal to whoever it names.
F_SETOWN, F_SETSIG, F_SETOWN_EX = 8, 10, 15
# ioctl: the same owner by the socket's name for it; a file's flags (chattr) and version,
# which need only a descriptor opened for reading; a character typed into a terminal.
IOCTLS = {"FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902, "FS_IOC_SETFLAGS": 0x40086602,
          "FS_IOC32_SETFLAGS": 0x40046602, "FS_IOC_FSSETXATTR": 0x401C5820,
          "FS_IOC_SETVERSION": 0x40087602, "TIOCSTI": 0x5412}
# io_uring runs its operations (setxattr by path, a socket, an open) past any filter, so
# a child whose filter matters has none.
RINGS = [(name, errno.ENOSYS, None)
         for name in ("io_uring_setup", "io_uring_enter", "io_uring_register")]
SAID = ("seccomp: no chmod, chown, utime, extended attributes, file flags or truncate by "
        "path; no signal, ptrace, memory access, priority or limit for any process but its own")


def plan(setting):
    if setting.mode.pool_uid or setting.mode.name == "plain" or not setting.seccomp:
        return None
    return {}


def describe(_section):
    return [SAID]


def apply(_section, _plan):
    return refusals(os.getpid())


def refusals(pid):
    """The refusals for a child, ``pid`` as it sees itself (1 in a PID namespace).

    Signals go to ``pid`` alone: not to 0 or a negative number, a process group (a child
    forked by the zygote shares its waiter's), nor to -1, every process the uid may
    signal. Priorities, affinities and limits may change for itself (0 or ``pid``) only.
    An open with O_TRUNC that asks neither to write nor to read and write would empty a
    file that Landlock below ABI 3 lets it open for reading only; openat2, whose flags
    lie behind a pointer, fails as on a kernel without it, and Python falls back to openat."""
    itself, itself_or_0 = (pid,), (0, pid)
    refused = [(name, errno.EPERM, None) for name in FILE_CHANGES + PROCESS_CHANGES]
    # the uid's keyrings, and programs for the kernel
    refused += [(name, errno.EPERM, None) for name in ("add_key", "request_key", "keyctl", "bpf")]
    refused += RINGS
    refused += [(name, errno.EPERM, ("unless", ((0, itself),)))
                for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")]
    refused += [(name, errno.EPERM, ("unless", ((0, itself_or_0),)))
                for name in ("prlimit64", "sched_setaffinity", "sched_setparam",
                             "sched_setscheduler", "sched_setattr")]
    refused += [("setpriority", errno.EPERM, ("unless", ((0, (0,)), (1, itself_or_0)))),
                ("fcntl", errno.EPERM, ("one_of", 1, (F_SETOWN, F_SETSIG, F_SETOWN_EX))),
                ("ioctl", errno.EPERM, ("one_of", 1, tuple(IOCTLS.values()))),
                ("open", errno.EPERM, ("truncating_open", 1)),
                ("openat", errno.EPERM, ("truncating_open", 2)),
                ("openat2", errno.ENOSYS, None)]
    return refused


# Each call in a form that changes nothing even where it is allowed: a file's own mode,
# owner, times and size set again; an attribute replaced that does not exist; signal 0;
# memory at address 0; a tracer that ends at once.
PROBE = """\
absent = (errno.ENODATA, errno.EOPNOTSUPP)  # the kernel looked for the attribute
for file in secrets["touch"]:
    path, bpath = file["path"], file["path"].encode()
    attempt("chmod", path, lambda: os.chmod(path, file["mode"]))
    attempt("fchmodat2", path, lambda: raw("fchmodat2", -100, bpath, file["mode"], 0))
    attempt("chown", path, lambda: os.chown(path, file["uid"], file["gid"]))
    attempt("lchown", path, lambda: os.lchown(path, file["uid"], file["gid"]))
    attempt("utime", path, lambda: os.utime(path, ns=(file["atime"], file["mtime"])))
    attempt("setxattr", path, lambda: os.setxattr(path, "user.mhakit-probe", b"",
                                                  os.XATTR_REPLACE), absent)
    attempt("removexattr", path, lambda: os.removexattr(path, "user.mhakit-probe"), absent)
    attempt("truncate", path, lambda: os.truncate(path, file["size"]))
def apart(pid):  # the grader is PID 1 in a container, as the child is in its namespace
    return [pid] if pid and pid != os.getpid() else []
info = struct.pack("iii", 0, 0, -1).ljust(128, b"\\0")  # SI_QUEUE: the kernel checks the pid
for pid in apart(secrets["grader"]):
    who = "the grader"
    attempt("kill", who, lambda: os.kill(pid, 0))
    attempt("tkill", who, lambda: raw("tkill", pid, 0))
    attempt("tgkill", who, lambda: raw("tgkill", pid, pid, 0))
    attempt("rt_sigqueueinfo", who, lambda: raw("rt_sigqueueinfo", pid, 0, info))
    attempt("rt_tgsigqueueinfo", who, lambda: raw("rt_tgsigqueueinfo", pid, pid, 0, info))
    attempt("pidfd_send_signal", who,
            lambda: raw("pidfd_send_signal", os.pidfd_open(pid), 0, None, 0))
    attempt("prlimit64", who, lambda: resource.prlimit(pid, resource.RLIMIT_CORE))
    attempt("setpriority", who, lambda: os.setpriority(
        os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid)))
    attempt("sched_setaffinity", who,
            lambda: os.sched_setaffinity(pid, os.sched_getaffinity(pid)))
one = ctypes.create_string_buffer(1)
mine = struct.pack("PN", ctypes.addressof(one), 1)
theirs = struct.pack("PN", 0, 1)
attr = struct.pack("IIQQQQQ", 1, 128, 0, 0, 0, 0, 1 | 32 | 64).ljust(128, b"\\0")
for pid in apart(secrets["other"]):
    who = "a process of the grader's"
    attempt("ptrace", who, lambda: raw("ptrace", 0x4206, pid, 0, 0))  # PTRACE_SEIZE
    for name in ("process_vm_readv", "process_vm_writev"):  # EFAULT: it got to address 0
        attempt(name, who, lambda: raw(name, pid, mine, 1, theirs, 1, 0), (errno.EFAULT,))
    attempt("perf_event_open", who, lambda: closed(raw("perf_event_open", attr, pid, -1, -1, 0)))
    attempt("kcmp", who, lambda: raw("kcmp", os.getpid(), pid, 1, 0, 0))  # KCMP_VM
    attempt("pidfd_getfd", who, lambda: closed(raw("pidfd_getfd", os.pidfd_open(pid), 0, 0)))
if not secrets["mode"]["pool_uid"]:  # a ring would do any of the above past the filter
    rings()
"""
