"""One layer: a seccomp filter that makes chosen system calls fail. Stdlib only.

The child uses it for two things. To start no process at all when nothing else bounds its
processes (no cgroup): fork, vfork, clone and clone3 fail with EAGAIN, as they would past
RLIMIT_NPROC. And, where it keeps the grader's uid (Landlock alone, or a user namespace),
to touch nothing it has not opened for writing and no process but itself: Landlock
governs opening, creating, renaming and removing, but never chmod, chown, utime,
extended attributes or file flags, nor (below its ABI 3) truncate, nor (below ABI 6)
signals. A uid of the grader's own may do all of those to the grader's files and
processes. The filter holds for root as well, and across exec. The kit's tests use the
same filter to play a container that forbids namespaces (tests/sandbox/without_namespaces.py).
"""

import ctypes
import errno
import platform
import struct

# Numbers that x86_64 and aarch64 share: every call added since Linux 5.1.
SHARED = {"pidfd_send_signal": 424, "openat2": 437, "pidfd_getfd": 438, "process_madvise": 440,
          "process_mrelease": 448, "fchmodat2": 452, "setxattrat": 463, "removexattrat": 466,
          "file_setattr": 469, "clone3": 435, "landlock_create_ruleset": 444,
          "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}
# The architecture as the kernel reports it, and the numbers of the calls named here
# (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h for aarch64,
# which has none of the calls that only take a path and no folder: chmod, open...).
ARCHES = {
    "x86_64": (0xC000003E, dict(SHARED, **{
        "fork": 57, "vfork": 58, "clone": 56, "unshare": 272, "setns": 308,
        "socket": 41, "bpf": 321, "add_key": 248, "request_key": 249, "keyctl": 250,
        "open": 2, "ioctl": 16, "kill": 62, "fcntl": 72, "truncate": 76, "chmod": 90,
        "fchmod": 91, "chown": 92, "fchown": 93, "lchown": 94, "ptrace": 101,
        "rt_sigqueueinfo": 129, "utime": 132, "setpriority": 141, "sched_setparam": 142,
        "sched_setscheduler": 144, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
        "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "tkill": 200,
        "sched_setaffinity": 203, "tgkill": 234, "utimes": 235, "ioprio_set": 251,
        "migrate_pages": 256, "openat": 257, "fchownat": 260, "futimesat": 261,
        "fchmodat": 268, "move_pages": 279, "utimensat": 280, "rt_tgsigqueueinfo": 297,
        "perf_event_open": 298, "prlimit64": 302, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "sched_setattr": 314})),
    "aarch64": (0xC00000B7, dict(SHARED, **{
        "clone": 220, "unshare": 97, "setns": 268,
        "socket": 198, "bpf": 280, "add_key": 217, "request_key": 218, "keyctl": 219,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14,
        "lremovexattr": 15, "fremovexattr": 16, "fcntl": 25, "ioctl": 29, "ioprio_set": 30,
        "truncate": 45, "fchmod": 52, "fchmodat": 53, "fchownat": 54, "fchown": 55,
        "openat": 56, "utimensat": 88, "ptrace": 117, "sched_setparam": 118,
        "sched_setscheduler": 119, "sched_setaffinity": 122, "kill": 129, "tkill": 130,
        "tgkill": 131, "rt_sigqueueinfo": 138, "setpriority": 140, "migrate_pages": 238,
        "move_pages": 239, "rt_tgsigqueueinfo": 240, "perf_event_open": 241,
        "prlimit64": 261, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
        "sched_setattr": 274})),
}
WORKS = platform.machine() in ARCHES
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LOAD, JEQ, JGE, JSET, RET, AND, JA = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54, 0x05
NAMESPACE_FLAGS = 0x7E020080  # every CLONE_NEW* flag, CLONE_NEWTIME included
O_TRUNC, O_ACCMODE, O_WRONLY, O_RDWR = 0o1000, 3, 1, 2

# What a child that keeps the grader's uid never does to what it has not opened for writing.
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


def _op(code, k, jt=0, jf=0):
    return (code, jt, jf, k)


def _arg(index):
    """Where the low 32 bits of argument ``index`` lie in seccomp_data (both arches are
    little-endian). Every argument read here is an int, a pid_t or a cmd: the kernel
    itself reads no more than those bits."""
    return 16 + 8 * index


def _checks(test):
    """The argument tests of one rule, as ops whose jumps name "refuse" or "next"."""
    kind = test[0]
    if kind == "mask":  # refused when the argument has one of the mask's bits
        _, index, mask = test
        return [(LOAD, _arg(index), 0, 0), (JSET, mask, "refuse", "next")]
    if kind == "one_of":  # refused when the argument is one of the values
        _, index, values = test
        return ([(LOAD, _arg(index), 0, 0)] + [(JEQ, v, "refuse", 0) for v in values]
                + [(JA, "next", 0, 0)])
    if kind == "unless":  # refused unless every argument named is one of its values
        ops = []
        for at, (index, values) in enumerate(test[1]):
            ops.append((LOAD, _arg(index), 0, 0))
            ops += [(JEQ, v, f"ok{at}", 0) for v in values] + [(JA, "refuse", 0, 0),
                                                                ("label", f"ok{at}")]
        return ops + [(JA, "next", 0, 0)]
    if kind == "truncating_open":  # O_TRUNC on a descriptor not opened for writing
        _, index = test
        return [(LOAD, _arg(index), 0, 0), (JSET, O_TRUNC, 0, "next"),
                (AND, O_ACCMODE, 0, 0), (JEQ, O_WRONLY, "next", 0), (JEQ, O_RDWR, "next", "refuse")]
    raise ValueError(f"unknown test {test!r}")


def _assemble(ops):
    """Ops with labelled jumps ("label" markers) to BPF rows with relative jumps."""
    at, rows = {}, []
    for op in ops:
        if op[0] == "label":
            at[op[1]] = len(rows)
        else:
            rows.append(op)

    def offset(target, index):
        if not isinstance(target, str):
            return target
        jump = at[target] - index - 1
        assert 0 <= jump < 256, "a rule too long for BPF's jumps"
        return jump

    code = []
    for index, (kind, k, jt, jf) in enumerate(rows):
        if kind == JA:
            code.append(_op(JA, offset(k, index)))
        else:
            code.append(_op(kind, k, offset(jt, index), offset(jf, index)))
    return code


def program(refusals):
    """BPF for ``refusals``: [(call name, errno, test)]. A call is refused when its number
    matches and its test holds: None always; an int, when the first argument has one of
    its bits (clone's flags, say); or a tuple that ``_checks`` reads. Calls of another
    ABI, and x32's numbers, are refused outright."""
    arch, numbers = ARCHES[platform.machine()]
    deny = RET_ERRNO | errno.EPERM
    code = [_op(LOAD, 4), _op(JEQ, arch, 1, 0), _op(RET, deny),
            _op(LOAD, 0), _op(JGE, 0x40000000, 0, 1), _op(RET, deny)]
    for name, error, test in refusals:
        if name not in numbers:
            continue  # this architecture has no such call (aarch64 has no fork)
        refuse = RET_ERRNO | error
        if test is None:
            code += [_op(JEQ, numbers[name], 0, 1), _op(RET, refuse)]
            continue
        if isinstance(test, int):
            test = ("mask", 0, test)
        # The argument tests load arguments; "next" loads the number back for the next rule.
        code += _assemble([(JEQ, numbers[name], 0, "next"), *_checks(test),
                           ("label", "refuse"), (RET, refuse, 0, 0),
                           ("label", "next"), (LOAD, 0, 0, 0)])
    return code + [_op(RET, RET_ALLOW)]


NEW_PROCESSES = [(name, errno.EAGAIN, None) for name in ("fork", "vfork", "clone", "clone3")]
# io_uring runs its operations (setxattr by path, a socket, an open) past any filter, so
# a child whose filter matters has none.
RINGS = [(name, errno.ENOSYS, None)
         for name in ("io_uring_setup", "io_uring_enter", "io_uring_register")]
# A child without a network namespace makes no socket: nothing it needs speaks to one,
# Landlock bounds TCP only from ABI 4 and never UDP, and a Unix socket of the grader's
# uid (D-Bus, systemd's) would run commands outside every layer. Its socket to the grader
# is handed to it already made.
NO_SOCKETS = [("socket", errno.EPERM, None)] + RINGS


def others_untouched(pid):
    """The refusals for a child, ``pid`` as it sees itself, that keeps the grader's uid.

    Signals go to ``pid`` alone: not to 0 or a negative number, a process group (a child
    forked by the zygote shares its waiter's), nor to -1, every process the uid may
    signal. Priorities, affinities and limits may change for itself (0 or ``pid``) only.
    An open with O_TRUNC that asks neither to write nor to read and write would empty a
    file that Landlock below ABI 3 lets it open for reading only; openat2, whose flags
    lie behind a pointer, fails as on a kernel without it, and Python falls back to openat."""
    itself, itself_or_0 = (pid,), (0, pid)
    refusals = [(name, errno.EPERM, None) for name in FILE_CHANGES + PROCESS_CHANGES]
    # the uid's keyrings, and programs for the kernel
    refusals += [(name, errno.EPERM, None) for name in ("add_key", "request_key", "keyctl", "bpf")]
    refusals += RINGS
    refusals += [(name, errno.EPERM, ("unless", ((0, itself),)))
                 for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")]
    refusals += [(name, errno.EPERM, ("unless", ((0, itself_or_0),)))
                 for name in ("prlimit64", "sched_setaffinity", "sched_setparam",
                              "sched_setscheduler", "sched_setattr")]
    refusals += [("setpriority", errno.EPERM, ("unless", ((0, (0,)), (1, itself_or_0)))),
                 ("fcntl", errno.EPERM, ("one_of", 1, (F_SETOWN, F_SETSIG, F_SETOWN_EX))),
                 ("ioctl", errno.EPERM, ("one_of", 1, tuple(IOCTLS.values()))),
                 ("open", errno.EPERM, ("truncating_open", 1)),
                 ("openat", errno.EPERM, ("truncating_open", 2)),
                 ("openat2", errno.ENOSYS, None)]
    return refusals


def install(refusals):
    code = b"".join(struct.pack("HBBI", *row) for row in program(refusals))
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    fprog = Program(len(code) // 8, ctypes.addressof(buffer))
    for args, what in (((PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs"),
                       ((PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
                        "seccomp")):
        if libc.prctl(*args) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"{what}: {errno.errorcode.get(number, number)}")


def forbid_new_processes():
    install(NEW_PROCESSES)
