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
import shutil
import subprocess
import sys
import tempfile
import threading
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
JAIL_LAYERS = ["unprivileged uid of its own, process limit", "mount namespace: only /usr, Python "
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
                    break
                except OSError:
                    handle.close()
            else:
                raise RuntimeError("no free uid for a grading child")
        try:
            yield uid
        finally:
            handle.close()  # closing the file releases the lock


UIDS = UidPool()


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


def plan(mode, limits, env, uid=None, root=None, scratch=None):
    """How to confine one child: the JSON the launcher and the zygote both read."""
    rlimits = {"cpu": limits.cpu_seconds, "as": limits.memory_bytes, "fsize": limits.file_bytes,
               "core": 0, "nofile": 64}
    if mode != "jail":
        return {"mode": "plain", "scratch": str(scratch), "limits": rlimits, "env": env}
    links, binds = _links_and_binds()
    return {"mode": "jail", "root": str(root), "uid": uid, "links": links, "binds": binds,
            "tmpfs_bytes": limits.scratch_bytes, "limits": dict(rlimits, nproc=limits.processes),
            "env": dict(env, HOME="/scratch", TMPDIR="/scratch", PATH="/usr/bin:/bin")}


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
