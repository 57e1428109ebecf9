"""One layer: who the child is. Stdlib only.

Run as root, the grader gives each child an unprivileged uid and gid of its own, with no
supplementary groups: it can then read only what the world may read, signal nothing of
the grader's, and RLIMIT_NPROC counts its processes alone. In a user namespace the child
keeps the instructor's uid (the only one mapped) but must lose the capabilities that the
namespace gave it, or it could undo its own mounts.
"""

import ctypes
import os

LINUX_CAPABILITY_VERSION_3 = 0x20080522
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4

LIBC = ctypes.CDLL(None, use_errno=True)
ORDER = 40  # after Landlock: its rules' paths are opened as the grader


def plan(setting):
    """A uid of the pool's; or no capabilities, for a user namespace and for root that
    keeps its uid (with them, it could load a kernel module from memory, past every
    other layer)."""
    if setting.mode.pool_uid:
        return {"uid": setting.uid}
    user_namespace = setting.mode.namespaces == "user"
    if user_namespace or os.geteuid() == 0:
        return {"drop_capabilities": True, "user_namespace": user_namespace}
    return None


def describe(section):
    if "uid" in section:
        return ["unprivileged uid and gid of its own, no supplementary groups"]
    # in a user namespace, the namespaces layer says it
    return [] if section["user_namespace"] else ["the grader's uid (root) without any capability"]


def apply(section, _plan):
    if "uid" in section:
        become(section["uid"], section["uid"])
    else:
        drop_capabilities()


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def become(uid, gid):
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to all-unprivileged ids: every capability goes


def drop_capabilities():
    """No capability left in any set, none to regain on exec; checked, not assumed."""
    cap = 0
    while LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    LIBC.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (CapData * 2)()
    if LIBC.capset(ctypes.byref(header), data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"capset: {os.strerror(errno)}")
    left = (CapData * 2)()
    LIBC.capget(ctypes.byref(header), left)
    if any(part.effective or part.permitted or part.inheritable for part in left):
        raise OSError("capabilities remain after capset")
