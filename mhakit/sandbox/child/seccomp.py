"""A seccomp filter that makes chosen system calls fail: the layers' tool. Stdlib only.

Layers (layers/) name the calls they refuse; the launcher installs one filter of them
all, last. It holds for root as well, and across exec. The kit's tests use the same
filter to play a container that forbids namespaces (tests/sandbox/without_namespaces.py).
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


def program(refusals, more_numbers=None):
    """BPF for ``refusals``: [(call name, errno, test)]. A call is refused when its number
    matches and its test holds: None always; an int, when the first argument has one of
    its bits (clone's flags, say); or a tuple that ``_checks`` reads. Calls of another
    ABI, and x32's numbers, are refused outright. ``more_numbers``: this architecture's
    numbers of calls that ARCHES does not list (a layer's CALLS)."""
    arch, numbers = ARCHES[platform.machine()]
    numbers = dict(numbers, **(more_numbers or {}))
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


def install(refusals, more_numbers=None):
    code = b"".join(struct.pack("HBBI", *row) for row in program(refusals, more_numbers))
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

