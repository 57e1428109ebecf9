"""The plan of one grading child: the layers its mode builds here, each with its section,
as JSON for the launcher and the zygote (child/launcher.py), and the layers in plain words
for the result. The grader's side: trusted.

Each layer is a file of its own in child/layers/ and makes its own section of the plan
(see child/layers/__init__.py); this module gathers what they need into a Setting.
"""

import dataclasses
import functools
import json
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..settings import settings
from . import scratch as scratch_space
from .child import seccomp
from .child.layers import all_layers
from .hidden import course_paths, covered, grants, listable
from .limits import Limits
from .student_site import PYTHON_BINARY, readable_roots, student_site

CHILD_DIR = Path(__file__).parent / "child"
LAUNCHER_SOURCE = (CHILD_DIR / "launcher.py").read_text(encoding="utf-8")
LAYERS = all_layers()
SECCOMP_WORKS = sys.platform == "linux" and seccomp.WORKS
DEVICES = [f"/dev/{name}" for name in ("null", "zero", "urandom")]
COMMON_LAYERS = ["separate process, started fresh", "wall-clock timeout per call",
                 "interpreter without site-packages (-I -S)"]


@dataclass(frozen=True)
class Mode:
    """What a mode builds: new namespaces ("root": root's jail, "user": the same jail in a
    user namespace, None: none), and whether its children run as a uid lent from the pool
    (else as the grader's own)."""
    name: str
    namespaces: str | None
    pool_uid: bool


MODES = {mode.name: mode for mode in (
    Mode("jail", "root", True), Mode("userns", "user", False), Mode("uid", None, True),
    Mode("landlock", None, False), Mode("plain", None, False))}


@dataclass(frozen=True)
class Setting:
    """What the layers plan from: the mode, the limits, the child's folder (its jail's
    root with namespaces, else its scratch), its uid (None: the grader's own, unchanged),
    its cgroup, whether a tmpfs bounds its scratch, and what this machine offers."""
    mode: Mode
    limits: Limits
    folder: Path
    uid: int | None = None
    cgroup: Any = None
    scratch_bounded: bool = False
    landlock_abi: int = 0
    seccomp: bool = False

    @cached_property
    def links_and_binds(self):
        return _links_and_binds(self.limits.packages)

    def covered(self, binds):
        """The course's paths that ``binds`` would show in the jail."""
        return covered(binds, course_paths())

    @cached_property
    def grants(self):
        """What Landlock lets it read (the readable roots, minus the course, and DEVICES)
        and list, and the course's paths whose names it may therefore list."""
        granted = grants(tuple(readable_roots(self.limits.packages)), tuple(course_paths()))
        return {"read": list(granted["read"]) + DEVICES, "list": list(granted["list"]),
                "listable": listable(granted["list"])}


@dataclass(frozen=True)
class Plan:
    """How to confine one child: its mode, the layers this machine builds for it (each
    layer's section, in the order they apply), its environment and the folder that holds
    the packages it may import. It crosses to the launcher and the zygote as JSON."""
    mode: str
    namespaces: str | None
    layers: dict[str, dict]
    env: dict[str, str]
    site: str
    child_dir: str = str(CHILD_DIR)

    def as_json(self, **more: Any) -> str:
        # Its fields as they are: json walks the sections itself, and asdict's deep copy
        # of every bind cost a millisecond per child.
        return json.dumps({field.name: getattr(self, field.name)
                           for field in dataclasses.fields(self)} | more)


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


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    if sys.platform != "linux" or not settings().landlock:
        return 0
    from .child.layers import landlock

    return landlock.abi()


def plan(mode: str, limits: Limits, env: dict[str, str], uid: int | None = None,
         root: Any = None, scratch: Any = None, cgroup: Any = None,
         scratch_tmpfs: bool = False) -> Plan:
    """How to confine one child in ``mode`` (a name of MODES). ``root`` is its jail's root where the mode has namespaces, else
    ``scratch`` its folder, on which a tmpfs of ``limits.scratch_bytes`` is mounted when
    ``scratch_tmpfs``; ``cgroup`` (see cgroups.py), the submission's."""
    spec = MODES[mode]
    setting = Setting(spec, limits, Path(root if spec.namespaces else scratch), uid=uid,
                      cgroup=cgroup, scratch_bounded=bool(scratch_tmpfs) and mode != "plain",
                      landlock_abi=landlock_abi() if mode != "plain" else 0,
                      seccomp=SECCOMP_WORKS)
    sections = {name: layer.plan(setting) for name, layer in LAYERS.items()}
    if spec.namespaces:
        env = dict(env, HOME="/scratch", TMPDIR="/scratch", PATH="/usr/bin:/bin")
    else:
        env = dict(env, HOME=str(scratch), TMPDIR=str(scratch), MPLCONFIGDIR=str(scratch))
    return Plan(mode, spec.namespaces,
                {name: section for name, section in sections.items() if section is not None},
                env, str(student_site(limits.packages)))


def child_environment() -> dict[str, str]:
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


def child_plan(mode: str, limits: Limits, env: dict[str, str], folder: Any,
               pool_uid: int | None = None, cgroup: Any = None) -> Plan:
    """``plan`` for one child in a fresh ``folder``: its jail's root where the mode has
    namespaces, else its scratch folder, then made over to the uid it runs as.
    ``pool_uid`` is the uid lent from the pool, for the modes that take one."""
    spec = MODES[mode]
    uid = pool_uid if spec.pool_uid else os.geteuid() if spec.namespaces else None
    if spec.namespaces:
        return plan(mode, limits, env, uid=uid, root=folder, cgroup=cgroup)
    if uid is not None:
        os.chown(folder, uid, uid)
    bounded = mode != "plain" and scratch_space.mount_tmpfs(folder, limits.scratch_bytes, uid)
    return plan(mode, limits, env, uid=uid, scratch=folder, cgroup=cgroup, scratch_tmpfs=bounded)


def describe(config: Plan, facts: dict | None = None) -> list[str]:
    """The layers a plan builds, in plain words, for the result; with ``facts``, what the
    mode's probe child found it could and could not do."""
    said = list(COMMON_LAYERS)
    for name, section in config.layers.items():
        said += LAYERS[name].describe(section)
    if facts:
        said.append("probed: the child " + ", ".join(
            ("could" if facts.get(key) else "could not") + what for key, what in
            (("tcp", " bind a TCP socket"), ("signal", " signal the grader"))))
        if facts.get("tried"):
            said.append("probed, and each refused on the course's files or the grader's "
                        "process: " + ", ".join(facts["tried"]))
    if config.mode == "plain":
        said.append("UNCONFINED: student code runs as the grader's own user and can read "
                    "what the grader can")
    return said


def launcher_command(config: Plan, runtime_source: str, fds: Any = (),
                     extra: Any = ()) -> list[str]:
    """Start a child afresh: the launcher confines itself, then execs Python on the runtime."""
    argv = [str(PYTHON_BINARY), "-I", "-S", "-c", runtime_source, *map(str, fds), *extra,
            config.site]
    return [str(PYTHON_BINARY), "-I", "-S", "-c", LAUNCHER_SOURCE, config.as_json(argv=argv)]
