"""What a grading child may see and use: the modes this machine can build, the child's
plan in each, and which layers held. The grader's side: trusted.

Modes, strongest first (each layer is a file of its own in child/):

- "jail": root with namespaces. New mount, PID, network, IPC and UTS namespaces, a root of
  the child's own that shows only /usr, Python and numpy, an unprivileged uid of its own.
- "userns": the same jail built by an ordinary user inside a user namespace, keeping the
  user's uid but no capabilities. (Ubuntu 24.04 and later restrict these through AppArmor.)
- "uid": root that cannot make namespaces (a container): an unprivileged uid and gid of
  its own, no supplementary groups.
- "landlock": Landlock alone, for an ordinary user without user namespaces, or for root
  whose Python an unprivileged uid cannot read (root then keeps its uid, without any
  capability).

Landlock (see child/landlock.py) is added to every mode where the kernel has it, so that
it holds on its own when another layer cannot be built. Where the child keeps the grader's
uid (userns, landlock), a seccomp filter (child/seccomp.py) refuses what Landlock leaves to
that uid: chmod, chown, utime, extended attributes, truncate by path, and signals, ptrace
and the like to any process but the child itself. Where it has no network namespace (uid,
landlock) it makes no socket. Its scratch is bounded in every mode (scratch.py): a tmpfs of
``Limits.scratch_bytes``, or read-only where the grader may not mount one; without
Landlock the uid mode could write to /tmp, and is refused. A mode counts only if a probe child,
confined as a submission would be, fails to read the reference, the hidden checks and the
grader's files, to list or write the grader's working folder, and each of those calls on
the course's files and the grader's process (``PROBE_CALLS``). When no mode
passes, grading refuses (``Unconfined``) unless the risk is accepted with
``MHAKIT_ALLOW_UNCONFINED=1`` (``mhakit grade --allow-unconfined``); then the "plain" mode
runs student code as the grader's own user, and every result says so. On systems other
than Linux, where the kit has no layer, plain mode runs with a warning.

``MHAKIT_SANDBOX=<mode>`` tries that one mode only ("plain" included);
``MHAKIT_LANDLOCK=0`` leaves Landlock out; ``MHAKIT_HIDE`` names more folders to hide.
"""

import atexit
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy

from ..settings import pass_on, settings
from . import scratch as scratch_space
from .hidden import course_paths, covered, grants, listable, sentinels
from .child import seccomp

LAUNCHER_SOURCE = Path(__file__).parent.joinpath("child", "launcher.py").read_text(encoding="utf-8")
PYTHON_PREFIX = Path(os.path.realpath(sys.base_prefix))
PYTHON_BINARY = Path(os.path.realpath(sys.executable))
NUMPY_DIRS = [p for p in (Path(numpy.__file__).parent,
                          Path(numpy.__file__).parent.with_name("numpy.libs")) if p.is_dir()]
UID_BASE = 64000
UID_LOCKS = Path(tempfile.gettempdir()) / "mhakit-uids"

LOG = logging.getLogger(__name__)
COMMON_LAYERS = ["separate process, started fresh", "resource limits (CPU, memory, file size)",
                 "wall-clock timeout per call", "interpreter without site-packages (-I -S)"]


class UidPool:
    """One uid per running child: RLIMIT_NPROC counts processes per uid, so two children
    must never share one, not even children of two grading runs on the same machine.
    A uid is held by an exclusive lock on a file of its own.

    A uid found free is one that no process has: finding one reads every process's
    status, which costs more than the rest of a child's start. So a uid that a child of
    this process gave back with nothing of its own left (``give_back``) stays locked by
    this process, and the next child takes it without a search: while the lock is held,
    no other grader can have used it."""

    def __init__(self, base=UID_BASE, folder=UID_LOCKS):
        self.base, self.folder, self.lock = base, folder, threading.Lock()
        self._kept, self._kept_by = [], os.getpid()

    def lend(self):
        """A free uid, locked: (uid, the open lock file). Close the file to give it up."""
        with self.lock:
            if self._kept_by != os.getpid():  # a forked copy shares the parent's locks
                self._kept, self._kept_by = [], os.getpid()
            if self._kept:
                return self._kept.pop()
            self.folder.mkdir(mode=0o700, exist_ok=True)
            for uid in range(self.base, self.base + 10_000):
                handle = open(self.folder / str(uid), "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.close()
                    continue
                if not processes_of_uid(uid):  # nothing of an earlier grading lives on it
                    return uid, handle
                handle.close()
        raise RuntimeError("no free uid for a grading child")

    def give_back(self, lease):
        """A lease from ``lend`` whose child has ended with nothing of it left (its cgroup
        empty, or no process of the uid): kept locked for this process's next child."""
        with self.lock:
            if self._kept_by == os.getpid():
                self._kept.append(lease)
                return
        lease[1].close()

    @contextmanager
    def take(self):
        uid, handle = self.lend()
        try:
            yield uid
        finally:
            handle.close()  # closing the file releases the lock


UIDS = UidPool()
LEFT_BEHIND: list = []  # uid leases and cgroups that still held a process when grading ended


def processes_of_uid(uid):
    """The pids of every process (zombies too: they count against RLIMIT_NPROC) of ``uid``."""
    found, marker = [], b"\nUid:\t"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as handle:
                head = handle.read(1024)
        except OSError:
            continue
        at = head.find(marker)
        if at >= 0 and head[at + len(marker):].split(b"\t", 1)[0] == str(uid).encode():
            found.append(int(name))
    return found


def none_left(cgroup, uid, seconds=5.0):
    """True once no process of a submission is left: its cgroup is empty and, in the jail,
    no process of its uid exists. A bounded wait, for the kernel to reap them."""
    deadline, pause = time.monotonic() + seconds, 0.0005
    while True:
        left = set(cgroup.pids()) if cgroup is not None else set()
        if uid is not None:
            left.update(processes_of_uid(uid))
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        if cgroup is not None:
            cgroup.kill(seconds=0)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


CHILD_DIR = Path(__file__).parent / "child"
MODES = {  # what each mode builds: namespaces, and whether it lends a uid of the pool
    "jail": {"namespaces": "root", "uid": True},
    "userns": {"namespaces": "user", "uid": False},
    "uid": {"namespaces": None, "uid": True},
    "landlock": {"namespaces": None, "uid": False},
    "plain": {"namespaces": None, "uid": False},
}
DEVICES = [f"/dev/{name}" for name in ("null", "zero", "urandom")]


def _links_and_binds(packages):
    """What the jail shows, each at the path it has on the host, so that a child forked
    from the zygote (which has already imported numpy) finds modules it imports later at
    the same place, and libpython's absolute rpath still holds."""
    binds = [(path, path) for path in readable_roots(packages)] + [(d, d) for d in DEVICES]
    links = []
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            links.append((name, os.readlink(path)))
        elif path.is_dir():
            binds.append((str(path), f"/{name}"))
    return links, binds


def readable_roots(packages=("numpy",)):
    """The folders a child reads: the system, Python, and the ``packages`` students may
    import (the site that holds only those, and what its links point to)."""
    roots = ["/usr", str(PYTHON_PREFIX), str(student_site(packages))]
    roots += [str(d) for d in student_dirs(packages)]
    roots += [f"/{name}" for name in ("bin", "lib", "lib64", "sbin")
              if Path(f"/{name}").is_dir() and not Path(f"/{name}").is_symlink()]
    return list(dict.fromkeys(roots))


# Offered by the child's runtime itself, inert (selfcheck/inert_ipython.py): the real
# IPython would bring a shell that starts processes.
BUILT_INTO_CHILD = {"IPython"}


@functools.lru_cache(maxsize=8)
def student_dirs(packages):
    """The folders and modules of ``packages`` (modules, as an exercise's STUDENT_IMPORTS
    names them: each brings its whole package) and of every package they need, as
    installed here: numpy always, and what is not installed is left out (its import then
    fails as it would in a kernel without it)."""
    roots = {module.split(".")[0] for module in packages}
    found, todo, seen = list(NUMPY_DIRS), sorted(roots - BUILT_INTO_CHILD), set()
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in distribution.requires or ():
            if "extra ==" not in requirement:  # extras are not installed for students
                todo.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())
        found += _top_level(distribution)
    return list(dict.fromkeys(found))


def _top_level(distribution):
    """The importable things a distribution installed at the top of its site-packages."""
    base = Path(distribution.locate_file(""))
    tops = {Path(str(f)).parts[0] for f in distribution.files or ()
            if not str(f).startswith("..")}
    return [base / top for top in sorted(tops)
            if not top.endswith((".dist-info", ".egg-info", ".pth")) and top != "__pycache__"
            and ((base / top).is_dir() or top.endswith((".py", ".so")))]


@functools.lru_cache(maxsize=8)
def student_site(packages=("numpy",)):
    """A folder that holds the packages students may import (numpy, and what
    ``student_dirs`` finds) and nothing else: the child's only entry on sys.path. (The
    real site-packages also holds the kit.) One per user and package set, shared by every
    grading process: a grading worker ends without running atexit, so a folder of its
    own would outlive it."""
    dirs = student_dirs(tuple(packages))
    key = hashlib.sha256("\0".join(map(str, dirs)).encode()).hexdigest()[:12]
    site = Path(tempfile.gettempdir()) / f"mhakit-site-{os.getuid()}-{key}"
    if _is_student_site(site, dirs):
        return site
    fresh = Path(tempfile.mkdtemp(prefix="mhakit-site-"))
    fresh.chmod(0o755)  # the child's uid must read it; mkdtemp makes it private to root
    for folder in dirs:
        (fresh / folder.name).symlink_to(folder)
    try:
        os.rename(fresh, site)  # atomic: of two processes, one wins and both use it
    except OSError:
        pass
    if _is_student_site(site, dirs):
        shutil.rmtree(fresh, ignore_errors=True)
        return site
    # The shared name is taken by something else: this process keeps a folder of its own.
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    return fresh


def _is_student_site(site, dirs):
    """Whether ``site`` is ours, writable by us alone, and holds just the links to ``dirs``."""
    try:
        info = os.lstat(site)
        links = {entry.name: os.readlink(entry) for entry in os.scandir(site)}
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o022
            and links == {folder.name: str(folder) for folder in dirs})


@functools.lru_cache(maxsize=1)
def landlock_abi():
    if sys.platform != "linux" or not settings().landlock:
        return 0
    from .child import landlock

    return landlock.abi()


def plan(mode, limits, env, uid=None, root=None, scratch=None, cgroup=None,
         scratch_tmpfs=False):
    """How to confine one child in ``mode``: the JSON that the launcher and the zygote read.

    Without namespaces ``scratch_tmpfs`` says that a tmpfs of ``limits.scratch_bytes`` is
    mounted on ``scratch``; else the child may write nothing there (see scratch.py).
    With a cgroup (see cgroups.py) the whole submission shares one memory and one process
    limit. Without one, and always when the child keeps the grader's uid and so could
    leave a cgroup, the child may start no process at all (see ``process_layers``)."""
    rlimits = {"cpu": limits.cpu_seconds, "as": limits.memory_bytes, "fsize": limits.file_bytes,
               "core": 0, "nofile": 64}
    spec = MODES[mode]
    alone = not spec["uid"] or cgroup is None
    config = {"mode": mode, "namespaces": spec["namespaces"], "child_dir": str(CHILD_DIR),
              "cgroup_procs": cgroup.procs_files if cgroup is not None else [],
              "forbid_new_processes": alone and SECCOMP_WORKS, "landlock": None,
              # A uid of the grader's own may chmod, truncate or signal what is the
              # grader's; a uid of the pool may not, and plain mode is unconfined by design.
              "others_untouched": not spec["uid"] and mode != "plain" and SECCOMP_WORKS,
              # No new socket where nothing but Landlock's ABI 4 stands between the
              # child and the network (UDP, the grader's own Unix sockets: D-Bus, say)
              "no_sockets": not spec["namespaces"] and mode != "plain" and SECCOMP_WORKS,
              "uid": uid, "limits": rlimits, "env": env,
              "site": str(student_site(limits.packages)),
              # Root that keeps its uid (Landlock alone) must lose its capabilities: with
              # them it could load a kernel module from memory, past every other layer.
              "drop_capabilities": spec["namespaces"] == "user" or (
                  not spec["uid"] and os.geteuid() == 0)}
    if spec["uid"] or os.geteuid() != 0:  # root ignores RLIMIT_NPROC; seccomp holds for it
        rlimits["nproc"] = 1 if alone else limits.processes
    abi = landlock_abi() if mode != "plain" else 0
    if spec["namespaces"]:
        links, binds = _links_and_binds(limits.packages)
        config.update(root=str(root), links=links, binds=binds,
                      cover=covered(binds, course_paths()), tmpfs_bytes=limits.scratch_bytes,
                      scratch_bytes=limits.scratch_bytes,
                      env=dict(env, HOME="/scratch", TMPDIR="/scratch", PATH="/usr/bin:/bin"))
        if abi:  # inside its own root, all that it sees is meant for it
            config["landlock"] = {"abi": abi, "read": ["/"], "write": ["/scratch", "/dev/null"]}
    else:
        bounded = scratch_tmpfs and mode != "plain"
        config.update(scratch=str(scratch), scratch_bytes=limits.scratch_bytes if bounded else 0,
                      env=dict(env, HOME=str(scratch), TMPDIR=str(scratch),
                               MPLCONFIGDIR=str(scratch)))
        if abi:
            granted = grants(tuple(readable_roots(limits.packages)), tuple(course_paths()))
            granted = {kind: list(paths) for kind, paths in granted.items()}  # the plan's own
            kept = [] if bounded else [str(scratch)]  # unbounded: read-only
            config["landlock"] = {"abi": abi, "write": [str(scratch)] * bounded + ["/dev/null"],
                                  "read": granted["read"] + DEVICES + kept,
                                  "list": granted["list"]}
    return config


SECCOMP_WORKS = sys.platform == "linux" and seccomp.WORKS


def child_environment():
    """What every child finds in its environment: none of the grader's own variables but
    PATH and the machine's BLAS fixes."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
           # matplotlib, which students may import, draws where nobody sees it
           "MPLBACKEND": "Agg"}
    # One BLAS thread: many children run side by side, and threads would fight.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine-specific BLAS fixes
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def child_plan(mode, limits, env, folder, pool_uid=None, cgroup=None):
    """``plan`` for one child in a fresh ``folder``: its jail's root where the mode has
    namespaces, else its scratch folder, then made over to the uid it runs as.
    ``pool_uid`` is the uid lent from UIDS, for the modes that take one."""
    spec = MODES[mode]
    uid = pool_uid if spec["uid"] else os.geteuid() if spec["namespaces"] else None
    if spec["namespaces"]:
        return plan(mode, limits, env, uid=uid, root=folder, cgroup=cgroup)
    if uid is not None:
        os.chown(folder, uid, uid)
    bounded = mode != "plain" and scratch_space.mount_tmpfs(folder, limits.scratch_bytes, uid)
    return plan(mode, limits, env, uid=uid, scratch=folder, cgroup=cgroup, scratch_tmpfs=bounded)


def layers_of(config):
    """The layers a plan builds, in plain words, for the result."""
    mode, layers = config["mode"], list(COMMON_LAYERS)
    if config["namespaces"]:
        if config["namespaces"] == "user":
            layers.append("user namespace: the grader's own uid, no capabilities")
        layers += ["mount namespace: only /usr, Python and numpy are visible, read-only",
                   "PID, IPC and UTS namespaces of its own", "network namespace: no network"]
    if mode != "plain":
        layers.append(scratch_space.layer(config["scratch_bytes"], "a size-limited tmpfs"
                                    if config["namespaces"] or config["scratch_bytes"]
                                    else "Landlock: its folder is read-only, no file may be written"))
    if MODES[mode]["uid"]:
        layers.append("unprivileged uid and gid of its own, no supplementary groups")
    elif config["drop_capabilities"] and not config["namespaces"]:
        layers.append("the grader's uid (root) without any capability")
    if config["landlock"]:
        layers += landlock_layers(config["landlock"]["abi"])
        layers += [f"Landlock: the names in {path} can be listed, not opened"
                   for path in listable(config)]
    if config.get("others_untouched"):
        layers.append(OTHERS_UNTOUCHED)
    if config.get("no_sockets"):
        layers.append(NO_SOCKETS)
    facts = PROBED.get(mode)
    if facts:
        layers.append("probed: the child " + ", ".join(
            ("could" if facts.get(key) else "could not") + what for key, what in
            (("tcp", " bind a TCP socket"), ("signal", " signal the grader"))))
        if facts.get("tried"):
            layers.append("probed, and each refused on the course's files or the grader's "
                          "process: " + ", ".join(facts["tried"]))
    if mode == "plain":
        layers.append("UNCONFINED: student code runs as the grader's own user and can read "
                      "what the grader can")
    return layers


OTHERS_UNTOUCHED = ("seccomp: no chmod, chown, utime, extended attributes, file flags or "
                    "truncate by path; no signal, ptrace, memory access, priority or limit "
                    "for any process but its own")


NO_SOCKETS = "seccomp: no new socket of any kind (TCP, UDP, Unix, raw)"


def process_layers(config, cgroup):
    """What holds the submission's processes, in plain words, for the result."""
    layers = [cgroup.layer] if cgroup is not None else []
    if config.get("forbid_new_processes"):
        layers.append("no new processes (seccomp filter on fork, vfork and clone)")
    if config["limits"].get("nproc") == 1:
        layers.append("no new processes (RLIMIT_NPROC=1)")
    if not layers:
        layers.append("no limit on processes for the whole submission here")
    return layers


def landlock_layers(abi):
    said = [f"Landlock (ABI {abi}): opens files only of the system, Python and numpy, "
            "writes only its scratch folder"]
    said.append("Landlock: no TCP bind or connect" if abi >= 4
                else f"Landlock ABI {abi} has no network rule (ABI 4 has)")
    said.append("Landlock: no signals or abstract sockets outside its domain" if abi >= 6
                else f"Landlock ABI {abi} has no signal scope (ABI 6 has)")
    return said


def launcher_command(config, runtime_source, fds=(), extra=()):
    """Start a child afresh: the launcher confines itself, then execs Python on the runtime."""
    argv = [str(PYTHON_BINARY), "-I", "-S", "-c", runtime_source, *map(str, fds), *extra,
            config["site"]]
    return [str(PYTHON_BINARY), "-I", "-S", "-c", LAUNCHER_SOURCE,
            json.dumps(dict(config, argv=argv))]


class Unconfined(RuntimeError):
    """No layer here hides the course from student code, and the risk was not accepted."""


# What the probe child does to the course's files and to processes not its own, each in a
# form that changes nothing even where it is allowed: a file's own mode, owner, times and
# size set again; an attribute replaced that does not exist; signal 0; memory at address
# 0; a tracer that ends at once. ``errnos`` that mean the call got past every layer.
PROBE_CALLS = """\
import ctypes, errno, resource, struct
libc = ctypes.CDLL(None, use_errno=True)
numbers, grader, other = secrets["numbers"], secrets["grader"], secrets["other"]
tried = facts["tried"] = []
def attempt(name, what, call, errnos=()):
    tried.append(name)
    try:
        call()
    except OSError as error:
        if error.errno not in errnos:
            return
    seen.append(name + " " + what)
def raw(name, *args):
    if name not in numbers:
        raise OSError(errno.ENOSYS, name)
    result = libc.syscall(ctypes.c_long(numbers[name]), *[
        ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result
def closed(fd):
    os.close(fd)
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
for pid in apart(grader):
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
for pid in apart(other):
    who = "a process of the grader's"
    attempt("ptrace", who, lambda: raw("ptrace", 0x4206, pid, 0, 0))  # PTRACE_SEIZE
    for name in ("process_vm_readv", "process_vm_writev"):  # EFAULT: it got to address 0
        attempt(name, who, lambda: raw(name, pid, mine, 1, theirs, 1, 0), (errno.EFAULT,))
    attempt("perf_event_open", who, lambda: closed(raw("perf_event_open", attr, pid, -1, -1, 0)))
    attempt("kcmp", who, lambda: raw("kcmp", os.getpid(), pid, 1, 0, 0))  # KCMP_VM
    attempt("pidfd_getfd", who, lambda: closed(raw("pidfd_getfd", os.pidfd_open(pid), 0, 0)))
expect = secrets["plan"]
if expect["no_sockets"]:  # every family, and io_uring, which would make one past the filter
    for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM),
                         (socket.AF_UNIX, socket.SOCK_STREAM)):
        attempt("socket", "of family %d" % family, lambda: socket.socket(family, kind).close())
if expect["no_sockets"] or expect["others_untouched"]:
    params = ctypes.create_string_buffer(120)
    attempt("io_uring_setup", "", lambda: closed(raw("io_uring_setup", 1, params)))
# The scratch's bound: a tmpfs no larger than it, or (at 0) no file written at all.
made = ".mhakit-probe-scratch-%d" % os.getpid()
try:
    os.close(os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.unlink(made)
    room = os.statvfs(".").f_blocks * os.statvfs(".").f_frsize
    if not expect["scratch_bytes"] or room > expect["scratch_bytes"]:
        seen.append("write %d bytes in its scratch, past its bound of %d" % (room, expect["scratch_bytes"]))
except OSError:
    pass
tried.append("a file in its scratch")
tried[:] = list(dict.fromkeys(tried))
"""


PROBE = """\
import json, os, socket, sys
sys.path.insert(0, sys.argv[-1])
import numpy
secrets = json.loads(sys.argv[-2])
seen = []
for path in secrets["read"]:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        seen.append("read " + path)
    except OSError:
        pass
listed = {}
for path in secrets["list"]:
    try:
        listed[path] = sorted(os.listdir(path))[:100]
    except OSError:
        pass
for folder in secrets["write"]:
    target = os.path.join(folder, ".mhakit-probe-%d" % os.getpid())
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(target)
        seen.append("wrote in " + folder)
    except OSError:
        pass
facts = {}
try:  # what the network layers say: no TCP socket of its own
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
    facts["tcp"] = True
except OSError:
    facts["tcp"] = False
try:  # and what the uid, the PID namespace or Landlock's scope say: no signal out
    os.kill(secrets["grader"], 0)
    facts["signal"] = True
except OSError:
    facts["signal"] = False
""" + PROBE_CALLS + """
print(json.dumps({"sum": float(numpy.ones(2).sum()), "seen": seen, "listed": listed,
                  "facts": facts}))
"""


def probe_targets(packages=("numpy",)):
    """What the probe child tries: the files it was told of (hidden.sentinels: the
    reference, the hidden checks) and a few in every hidden folder must not open; the
    course's folders must not list, nor take a new file."""
    files = sentinels()
    roots, hidden = [r.rstrip("/") + "/" for r in readable_roots(packages)], course_paths()
    files += [f for folder in hidden for f in _some_files(folder, roots)]
    folders = [str(p) for p in hidden] + [f"/proc/{os.getpid()}/cwd"]
    files = list(dict.fromkeys(map(str, files)))
    # and the folders every uid may write to, which no scratch bound would cover
    writable = [p for p in dict.fromkeys(["/tmp", "/var/tmp", "/dev/shm", tempfile.gettempdir()])
                if os.path.isdir(p)]
    numbers = seccomp.ARCHES[os.uname().machine][1] if seccomp.WORKS else {}
    return {"grader": os.getpid(), "read": files, "list": folders,
            "write": folders[:-1] + writable,
            "touch": _as_they_are(files), "numbers": numbers, "other": None}


def _as_they_are(files, count=4):
    """A few of ``files`` with their mode, owner, times and size, for the probe to set
    again: where the call is allowed, it changes nothing (but the change time)."""
    found = []
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and len(found) < count:
            found.append({"path": path, "mode": stat.S_IMODE(info.st_mode), "uid": info.st_uid,
                          "gid": info.st_gid, "size": info.st_size, "atime": info.st_atime_ns,
                          "mtime": info.st_mtime_ns})
    return found


def _some_files(folder, roots, count=8):
    """A few files in a hidden folder and its subfolders: a folder that cannot be listed
    may still hold files that anyone who knows their names can read. Not those on the way
    to what the child reads (``roots``, each ending in "/"): a virtual environment inside
    the hidden folder, whose numpy the child needs, is meant to stay readable."""
    found, queue = [], [Path(folder)]
    while queue and len(found) < count:
        try:
            entries = sorted(os.scandir(queue.pop(0)), key=lambda e: e.name)[:64]
        except OSError:
            continue
        for entry in entries:
            real = os.path.realpath(entry.path) + "/"
            if any(real.startswith(root) or root.startswith(real) for root in roots):
                continue
            if entry.is_file(follow_symlinks=False) and len(found) < count:
                found.append(entry.path)
            elif entry.is_dir(follow_symlinks=False) and len(queue) < 16:
                queue.append(Path(entry.path))
    return found


def candidates():
    forced = settings().sandbox
    if forced:
        return [forced] if forced in MODES else []
    if sys.platform != "linux":
        return []
    return ["jail", "userns", "uid", "landlock"] if os.geteuid() == 0 else ["userns", "landlock"]


_CHOSEN: dict[str, str | None] = {}
PROBLEMS: list[str] = []  # why each stronger mode did not count here
# mode: what its probe child could still do (bind TCP, signal the grader)
PROBED: dict[str, dict] = {}


def chosen_mode(limits):
    """The strongest mode whose probe child could not reach the course, once per process.
    Raises Unconfined when none could and the risk was not accepted."""
    mode = _probed_mode(limits)
    if mode is not None:
        return mode
    if sys.platform == "linux" and not settings().allow_unconfined:
        raise Unconfined(unconfined_message())
    if not settings().warned:  # once per run: the workers are told
        pass_on(warned=True)
        LOG.warning(unconfined_message(accepted=True))
    return "plain"


@dataclass(frozen=True)
class Choice:
    """What one process learned by probing: the mode its children run in (None: none
    confines), what each mode's probe child could still do, and why stronger modes were
    not built. A class run probes once, in its main process, and hands this to its
    grading workers (adopt), which run on the same machine as the same user."""
    mode: str | None
    probed: dict
    problems: tuple


def choice(limits):
    """This process's Choice, probing first if it has not."""
    return Choice(_probed_mode(limits), dict(PROBED), tuple(PROBLEMS))


def adopt(taken):
    """Take another process's Choice instead of probing (a grading worker's start)."""
    _CHOSEN["mode"] = taken.mode
    PROBED.clear()
    PROBED.update(taken.probed)
    PROBLEMS[:] = taken.problems


def _probed_mode(limits):
    if "mode" not in _CHOSEN:
        _CHOSEN["mode"] = _first_that_confines(limits)
    return _CHOSEN["mode"]


def _first_that_confines(limits):
    """The strongest candidate mode whose probe child reached nothing, or None. Each mode
    tried is explained at INFO level (``mhakit --verbose``)."""
    tried = [mode for mode in candidates() if mode != "plain"]
    forced = " (as MHAKIT_SANDBOX asks)" if settings().sandbox else ""
    LOG.info("confinement: trying %s, strongest first%s", ", ".join(tried) or "no mode", forced)
    for mode in tried:
        before = len(PROBLEMS)
        if _probe(mode, limits):
            refused = (PROBED.get(mode) or {}).get("tried") or []
            LOG.info("confinement: %s: its probe child reached nothing of the course%s; "
                     "every child of this process runs in it", mode,
                     f" (and was refused {', '.join(refused)})" if refused else "")
            return mode
        LOG.info("confinement: %s: not used: %s", mode,
                 "; ".join(PROBLEMS[before:]) or "its probe failed")
    return None


def unconfined_message(accepted=False):
    why = "; ".join(dict.fromkeys(PROBLEMS)) or (
        "MHAKIT_SANDBOX=plain asks for none" if settings().sandbox == "plain"
        else "the kit has no confinement on this system" if sys.platform != "linux"
        else "no mode was tried")
    if accepted:
        return (f"grading unconfined, student code can read the course ({why}); "
                "every result is flagged for review")
    return (f"no layer here can hide the course from student code ({why}); refusing to "
            "grade. Rerun with --allow-unconfined (nbgrader: c.BoundedNotebookReader."
            "allow_unconfined = True in "
            "nbgrader_config.py) to accept the risk; every result is then flagged for review")


def refusal(allow_unconfined=False, limits=None):
    """Why grading must not start here (nothing can hide the course from student code),
    or None. For the doors to ask once, before the first notebook; accepting the risk is
    passed on to worker processes through the environment."""
    from .limits import Limits

    if allow_unconfined:
        pass_on(allow_unconfined=True)
    try:
        chosen_mode(limits or Limits())
    except Unconfined as refused:
        return str(refused)
    return None


def confined(limits):
    """Is the child confined here (any mode but plain)? For tests and benchmarks."""
    try:
        return chosen_mode(limits) != "plain"
    except Unconfined:
        return False


def jail_works(limits):
    """Is the strongest mode, root's jail, in force here?"""
    return confined(limits) and chosen_mode(limits) == "jail"


def _probe(mode, limits):
    """Start one child in ``mode`` the way a submission's starts; True if it ran numpy
    and reached nothing of the course. Tried twice, in case the machine was only busy."""
    if mode == "landlock" and not landlock_abi():
        PROBLEMS.append("landlock: this kernel offers no Landlock")
        return False
    if mode == "uid" and not landlock_abi():
        PROBLEMS.append("uid: without Landlock nothing bounds what the child writes "
                        "(/tmp and /dev/shm take files of every uid)")
        return False
    # A process of the grader's that is not the grader, for the calls that would stop or
    # trace the one they reach: the probe tries those on it.
    other = subprocess.Popen(
        [str(PYTHON_BINARY), "-I", "-S", "-c", "import time; time.sleep(120)"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return _probe_with(mode, limits, dict(probe_targets(limits.packages), other=other.pid))
    finally:
        other.kill()
        other.wait()


def _probe_with(mode, limits, targets):
    for _attempt in range(2):  # once more only if the machine was too busy to answer
        folder = Path(tempfile.mkdtemp(prefix="mhakit-probe-"))
        try:
            with pool_uid_for(mode) as uid:
                config = child_plan(mode, limits, child_environment(), folder, pool_uid=uid)
                # What the mode must deny, whatever the plan built: a plan that lost a
                # layer is refused, not trusted.
                expect = {"no_sockets": not MODES[mode]["namespaces"],
                          "others_untouched": not MODES[mode]["uid"],
                          "scratch_bytes": config.get("scratch_bytes") or 0}
                command = launcher_command(config, PROBE,
                                           extra=[json.dumps(dict(targets, plan=expect))])
                done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            answer = _last_json(done.stdout)
            if done.returncode == 0 and answer.get("sum") == 2.0:
                seen = list(answer.get("seen") or []) + _listed_too_much(
                    answer.get("listed"), skip=listable(config), packages=limits.packages)
                if not seen:
                    PROBED[mode] = answer.get("facts") or {}
                    return True
                PROBLEMS.append(could_line(mode, seen))
                return False
            problem = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            PROBLEMS.append(f"{mode}: {problem[:200]}{_apparmor_note(mode)}")
            return False
        except subprocess.TimeoutExpired:
            PROBLEMS.append(f"{mode}: the probe child did not answer within 60 s")
        except (OSError, subprocess.SubprocessError, RuntimeError) as error:
            PROBLEMS.append(f"{mode}: {type(error).__name__}: {error}")
            return False
        finally:
            remove_tree(folder)
    return False


def could_line(mode, seen):
    """One line for what a probe child could do: the first two in full, then the name of
    each other call (or "read", "list"...) it got through."""
    shown = {entry.split(" ", 1)[0] for entry in seen[:2]}
    more = [name for name in dict.fromkeys(entry.split(" ", 1)[0] for entry in seen[2:])
            if name not in shown]
    return (f"{mode}: a probe child could {', '.join(seen[:2])}"
            + (f" (and {', '.join(more)})" if more else ""))


def remove_tree(folder):
    """Remove a child's folder whatever modes the child left on what it made there: a
    folder it made read-only, or unsearchable, is made ours again first. Says so when
    something is still left (a log warning), never silently."""
    folder = os.path.abspath(folder)

    def own_folder(path):
        """Only a real folder inside ``folder`` (never /tmp above it, never what a link
        the child left points to) has its mode put back."""
        try:
            inside = os.path.commonpath([path, folder]) == folder
            return inside and stat.S_ISDIR(os.lstat(path).st_mode)
        except (OSError, ValueError):
            return False

    def left(_function, path, error):
        LOG.warning("could not remove %s from the grading child's folder %s: %s",
                    path, folder, error[1])

    tried = set()

    def again(function, path, error):
        if path in tried:  # once only: a second failure is not the modes
            return left(function, path, error)
        tried.add(path)
        for fix in (os.path.dirname(path), path):  # the folder it is in, then itself
            if own_folder(fix):
                try:
                    os.chmod(fix, 0o700)
                except OSError:
                    pass
        try:
            if function in (os.rmdir, os.unlink, os.remove):
                function(path)
            elif own_folder(path):  # its listing failed: that folder, again from the top
                shutil.rmtree(path, onerror=again)
        except FileNotFoundError:
            pass
        except OSError as error:
            left(function, path, (type(error), error, None))

    if not os.path.lexists(folder):
        return True
    if not scratch_space.unmount(folder):
        return False
    shutil.rmtree(folder, onerror=again)
    if os.path.lexists(folder):
        LOG.warning("the grading child's folder %s is still there after its removal", folder)
        return False
    return True


APPARMOR_USERNS = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")


def _apparmor_note(mode):
    """Ubuntu 24.04 and later let AppArmor refuse unprivileged user namespaces."""
    try:
        restricted = mode == "userns" and APPARMOR_USERNS.read_text().strip() == "1"
    except OSError:
        restricted = False
    return (" (AppArmor restricts unprivileged user namespaces here: "
            "kernel.apparmor_restrict_unprivileged_userns=1)") if restricted else ""


def _listed_too_much(listed, skip=(), packages=("numpy",)):
    """Folders the probe could list beyond the way down to what the child may read (in
    the jail a bind of numpy inside the course makes the course's folder, holding only
    that way down), but for those in ``skip``, whose names the plan lets it list."""
    if not isinstance(listed, dict):
        return []
    roots = readable_roots(packages)
    found = []
    for folder, entries in listed.items():
        if folder in skip:
            continue
        way = {os.path.relpath(r, folder).split(os.sep)[0] for r in roots
               if str(r).startswith(str(folder).rstrip("/") + "/")}
        if set(map(str, entries if isinstance(entries, list) else [])) - way:
            found.append(f"list {folder}")
    return found


@contextmanager
def pool_uid_for(mode):
    """A uid lent from the pool for the modes that take one, else None."""
    if MODES[mode]["uid"]:
        with UIDS.take() as uid:
            yield uid
    else:
        yield None


def _last_json(text):
    try:
        answer = json.loads(text.strip().splitlines()[-1])
        return answer if isinstance(answer, dict) else {}
    except (IndexError, ValueError):
        return {}
