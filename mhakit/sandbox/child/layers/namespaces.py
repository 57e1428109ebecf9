"""One layer: namespaces and a root of the child's own. Stdlib only.

The child gets new mount, PID, network, IPC and UTS namespaces. Its root is a small tmpfs
that holds read-only binds of /usr, of the Python installation and of numpy, and one
scratch folder. Course files, the graders and the other submissions are not mounted, so
they do not exist for it; folders of the kit that a bind would show (a kit installed
into the same site-packages as numpy) are covered by empty ones. There is no network.

Root builds this directly. An ordinary user builds it inside a user namespace of its own,
where it maps only its own uid and gid; since Linux 5.14 RLIMIT_NPROC counts per user
namespace, so the child's process limit still counts only its own processes.
"""

import ctypes
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x4000000, 0x8000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
# Flags a bind inherits from its source and, in a user namespace, must keep on a remount.
KEPT_FLAGS = MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096  # ... | noatime | nodiratime | relatime

LIBC = ctypes.CDLL(None, use_errno=True)
ORDER = 20


def plan(setting):
    """The jail's root: what it binds and links from the host, what it covers."""
    if not setting.mode.namespaces:
        return None
    links, binds = setting.links_and_binds
    return {"user": setting.mode.namespaces == "user", "root": str(setting.folder),
            "uid": setting.uid, "links": links, "binds": binds,
            "cover": setting.covered(binds), "tmpfs_bytes": setting.limits.scratch_bytes}


def describe(section):
    said = ["user namespace: the grader's own uid, no capabilities"] if section["user"] else []
    return said + ["mount namespace: only /usr, Python and numpy are visible, read-only",
                   "PID, IPC and UTS namespaces of its own", "network namespace: no network"]


def apply(section, _plan):
    build_root(section)


def _call(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write(path, text):
    # Not open(): see launcher.join_cgroup (Python's io, first woken in a forked child).
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def mount(source, target, fstype, flags, data=None):
    _call(LIBC.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                     flags, data and data.encode()), f"mount {target}")


def enter(section):
    """New namespaces for this process; the next child it forks is PID 1 of the new PID
    namespace. For an ordinary user, first a user namespace that maps its own ids."""
    user, uid, gid = section["user"], os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    _call(LIBC.unshare(flags | (CLONE_NEWUSER if user else 0)), "unshare")
    if user:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            _write(f"/proc/self/{name}", text)


def bind_read_only(source, target):
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)
    kept = os.statvfs(source).f_flag & KEPT_FLAGS
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | kept)


def cover(target):
    """Hide what a bind showed at ``target``: an empty, read-only folder or file on top."""
    if os.path.isdir(target):
        mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=000")
    elif os.path.lexists(target):
        mount("/dev/null", target, None, MS_BIND)


def build_root(config):
    """Mount the child's root and step into it, at its scratch folder."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below leaks to the host
    root = config["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={config['tmpfs_bytes']},mode=755")
    for source, inside in config["binds"]:
        bind_read_only(source, os.path.join(root, inside.lstrip("/")))
    for hidden in config.get("cover", ()):
        cover(os.path.join(root, hidden.lstrip("/")))
    for link, target in config["links"]:
        os.symlink(target, os.path.join(root, link))
    # The one writable folder, also the child's TMPDIR. (No /tmp of its own: the binds may
    # already have made one, when Python or numpy live under /tmp on the host.)
    scratch = os.path.join(root, "scratch")
    os.makedirs(scratch, mode=0o700)
    os.chown(scratch, config["uid"], config["uid"])
    os.chdir(root)
    os.chroot(".")
    os.chdir("/scratch")
