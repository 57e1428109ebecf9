"""What a grading child may see and use: the launcher's plan, and which layers hold.

The strongest plan ("jail") needs root on Linux with namespaces. Everything else
(no root, a laptop, a container that forbids ``unshare``) gets the "plain" plan, and
the result records which layers were in force. Set ``MHAKIT_SANDBOX=plain`` to force
the plain plan.
"""

import atexit
import fcntl
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy

LAUNCHER_SOURCE = Path(__file__).parent.joinpath("child", "launcher.py").read_text(encoding="utf-8")
PYTHON_PREFIX = Path(os.path.realpath(sys.base_prefix))
PYTHON_BINARY = Path(os.path.realpath(sys.executable))
NUMPY_DIRS = [p for p in (Path(numpy.__file__).parent,
                          Path(numpy.__file__).parent.with_name("numpy.libs")) if p.is_dir()]
UID_BASE = 64000
UID_LOCKS = Path(tempfile.gettempdir()) / "mhakit-uids"

COMMON_LAYERS = ["separate process, started fresh", "resource limits (CPU, memory, file size)",
                 "wall-clock timeout per call", "interpreter without site-packages (-I -S)"]
JAIL_LAYERS = ["unprivileged uid of its own", "mount namespace: only /usr, Python "
               "and numpy are visible, read-only", "network namespace: no network",
               "scratch folder on a size-limited tmpfs"]


class UidPool:
    """One uid per running child: RLIMIT_NPROC counts processes per uid, so two children
    must never share one, not even children of two grading runs on the same machine.
    A uid is held by an exclusive lock on a file of its own."""

    def __init__(self, base=UID_BASE, folder=UID_LOCKS):
        self.base, self.folder, self.lock = base, folder, threading.Lock()

    @contextmanager
    def take(self):
        self.folder.mkdir(mode=0o700, exist_ok=True)
        with self.lock:
            for uid in range(self.base, self.base + 10_000):
                handle = open(self.folder / str(uid), "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.close()
                    continue
                if not processes_of_uid(uid):  # nothing of an earlier grading lives on it
                    break
                handle.close()
            else:
                raise RuntimeError("no free uid for a grading child")
        try:
            yield uid
        finally:
            handle.close()  # closing the file releases the lock


UIDS = UidPool()
LEFT_BEHIND = []  # uid leases and cgroups that still held a process when grading ended


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


def _links_and_binds():
    """What the jail shows, each at the path it has on the host, so that a child forked
    from the zygote (which has already imported numpy) finds modules it imports later at
    the same place, and libpython's absolute rpath still holds."""
    binds = [("/usr", "/usr"), (str(PYTHON_PREFIX), str(PYTHON_PREFIX)),
             (str(numpy_site()), str(numpy_site()))]
    binds += [(str(d), str(d)) for d in NUMPY_DIRS]  # what the site's symlinks point to
    binds += [(f"/dev/{name}", f"/dev/{name}") for name in ("null", "zero", "urandom")]
    links = []
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            links.append((name, os.readlink(path)))
        elif path.is_dir():
            binds.append((str(path), f"/{name}"))
    return links, binds


@functools.lru_cache(maxsize=1)
def numpy_site():
    """A folder that holds numpy and nothing else: the child's only entry on sys.path.
    (The real site-packages also holds the kit.) One per grading process."""
    site = Path(tempfile.mkdtemp(prefix="mhakit-site-"))
    site.chmod(0o755)  # the child's uid must read it; mkdtemp makes it private to root
    for folder in NUMPY_DIRS:
        (site / folder.name).symlink_to(folder)
    atexit.register(shutil.rmtree, site, ignore_errors=True)
    return site


def plan(mode, limits, env, uid=None, root=None, scratch=None, cgroup=None):
    """How to confine one child: the JSON the launcher and the zygote both read.

    With a cgroup (see cgroups.py) the whole submission shares one memory and one process
    limit. Without one, and always in plain mode, where the child runs as the grader's own
    user and could leave a cgroup, the child may start no process at all (see
    ``process_layers``)."""
    rlimits = {"cpu": limits.cpu_seconds, "as": limits.memory_bytes, "fsize": limits.file_bytes,
               "core": 0, "nofile": 64}
    alone = mode != "jail" or cgroup is None
    shared = {"cgroup_procs": cgroup.procs_files if cgroup is not None else [],
              "forbid_new_processes": alone and SECCOMP_WORKS}
    if mode != "jail":
        if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; the seccomp filter holds for it
            rlimits["nproc"] = 1
        return dict(shared, mode="plain", scratch=str(scratch), limits=rlimits, env=env)
    links, binds = _links_and_binds()
    return dict(shared, mode="jail", root=str(root), uid=uid, links=links, binds=binds,
                tmpfs_bytes=limits.scratch_bytes,
                limits=dict(rlimits, nproc=1 if alone else limits.processes),
                env=dict(env, HOME="/scratch", TMPDIR="/scratch", PATH="/usr/bin:/bin"))


SECCOMP_WORKS = sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64")


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


def launcher_command(config, runtime_source, fds=()):
    """Start a child afresh: the launcher confines itself, then execs Python on the runtime."""
    argv = [str(PYTHON_BINARY), "-I", "-S", "-c", runtime_source, *map(str, fds),
            str(numpy_site())]
    return [str(PYTHON_BINARY), "-I", "-S", "-c", LAUNCHER_SOURCE,
            json.dumps(dict(config, argv=argv))]


_JAIL_WORKS = None


def jail_works(limits):
    """Can this machine build the jail? Tried once, by starting a jailed numpy."""
    global _JAIL_WORKS
    if _JAIL_WORKS is None:
        _JAIL_WORKS = os.environ.get("MHAKIT_SANDBOX") != "plain" and _probe(limits)
    return _JAIL_WORKS


JAIL_PROBLEM = []  # why the jail could not be built here, when it could not


def _probe(limits):
    if sys.platform != "linux" or os.geteuid() != 0:
        JAIL_PROBLEM.append("not root on Linux")
        return False
    probe = "import sys; sys.path.insert(0, sys.argv[-1]); import numpy; print(numpy.ones(2).sum())"
    env = {"LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for _attempt in range(2):  # once more, in case the machine was only busy
        root = tempfile.mkdtemp(prefix="mhakit-jail-")
        try:
            with UIDS.take() as uid:
                config = plan("jail", limits, env, uid=uid, root=root)
                done = subprocess.run(launcher_command(config, probe), capture_output=True,
                                      text=True, timeout=60)
            if done.returncode == 0 and done.stdout.strip() == "2.0":
                return True
            JAIL_PROBLEM.append((done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
        except (OSError, subprocess.SubprocessError) as error:
            JAIL_PROBLEM.append(f"{type(error).__name__}: {error}")
        finally:
            os.rmdir(root)
    return False
