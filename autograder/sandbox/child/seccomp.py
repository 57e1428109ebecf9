"""One layer: a seccomp filter that makes chosen system calls fail. Stdlib only.

The child uses it to start no process at all when nothing else bounds its processes (no
cgroup): fork, vfork, clone and clone3 fail with EAGAIN, as they would past RLIMIT_NPROC.
It holds for root as well, and across exec. The kit's tests use the same filter to play
a container that forbids namespaces (tests/sandbox/without_namespaces.py).
"""

import ctypes
import errno
import platform
import struct

# The architecture as the kernel reports it, and the numbers of the calls named here.
ARCHES = {
    "x86_64": (0xC000003E, {"fork": 57, "vfork": 58, "clone": 56, "clone3": 435,
                            "unshare": 272, "setns": 308, "landlock_create_ruleset": 444}),
    "aarch64": (0xC00000B7, {"clone": 220, "clone3": 435, "unshare": 97, "setns": 268,
                             "landlock_create_ruleset": 444}),
}
WORKS = platform.machine() in ARCHES
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LOAD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
NAMESPACE_FLAGS = 0x7E020080  # every CLONE_NEW* flag, CLONE_NEWTIME included


def _op(code, k, jt=0, jf=0):
    return (code, jt, jf, k)


def program(refusals):
    """BPF for ``refusals``: [(call name, errno, mask of the first argument or None)].
    A call is refused when its number matches and, if a mask is given, when its first
    argument has one of the mask's bits (clone's flags, say). Calls of another ABI, and
    x32's numbers, are refused outright."""
    arch, numbers = ARCHES[platform.machine()]
    deny = RET_ERRNO | errno.EPERM
    code = [_op(LOAD, 4), _op(JEQ, arch, 1, 0), _op(RET, deny),
            _op(LOAD, 0), _op(JGE, 0x40000000, 0, 1), _op(RET, deny)]
    for name, error, mask in refusals:
        if name not in numbers:
            continue  # this architecture has no such call (aarch64 has no fork)
        refuse = RET_ERRNO | error
        if mask is None:
            code += [_op(JEQ, numbers[name], 0, 1), _op(RET, refuse)]
        else:  # load the argument, test it, and load the number back for the next rule
            code += [_op(JEQ, numbers[name], 0, 4), _op(LOAD, 16), _op(JSET, mask, 0, 1),
                     _op(RET, refuse), _op(LOAD, 0)]
    return code + [_op(RET, RET_ALLOW)]


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
    install([(name, errno.EAGAIN, None) for name in ("fork", "vfork", "clone", "clone3")])
