"""The probe: before a mode counts, a child confined in it, as a submission's would be,
must fail to reach the course. The grader's side: trusted.

The probe child tries to read the reference, the hidden checks and the grader's files
(hidden.sentinels), to list or write the grader's working folder and the folders every
uid may write to; then each layer that the mode must have tries what that layer refuses
(its ``PROBE``, see child/layers/__init__.py), whether or not the plan built it. Its
code may use ``secrets`` (``probe_targets``, and ``mode`` and ``layers``: the mode and the
plan's sections), ``seen`` (what got through: the mode is not used), ``tried``,
``attempt(name, what, call, errnos)``, ``raw(name, *args)`` (a system call by its name),
``closed(fd)``, ``rings()`` (io_uring, once) and the modules os, socket, ctypes, errno,
resource and struct.
"""

import json
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .child import seccomp
from .child.launcher import numbers_of
from .limits import Limits
from .hidden import course_paths, sentinels
from .plan import LAYERS, MODES, Mode, child_environment, child_plan, launcher_command
from .scratch import remove_tree
from .student_site import PYTHON_BINARY, readable_roots
from .uids import pool_uid_for

APPARMOR_USERNS = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")

PROBE = """\
import ctypes, errno, json, os, resource, socket, struct, sys
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
libc = ctypes.CDLL(None, use_errno=True)
numbers = secrets["numbers"]
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
def rings():  # io_uring would run an open, a socket or a setxattr past any filter
    if "io_uring_setup" not in tried:
        params = ctypes.create_string_buffer(120)
        attempt("io_uring_setup", "", lambda: closed(raw("io_uring_setup", 1, params)))
"""
ANSWER = """
tried[:] = list(dict.fromkeys(tried))
print(json.dumps({"sum": float(numpy.ones(2).sum()), "seen": seen, "listed": listed,
                  "facts": facts}))
"""


@dataclass
class Probed:
    """What probing one mode found: whether it confines (``ok``), what its probe child
    could still do (``facts``: bind TCP, signal the grader, the calls it tried) and, when
    not ok, why, one line each (``problems``)."""
    ok: bool = False
    facts: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)


def code_for(mode: Mode) -> str:
    """The probe child's code for a Mode: the common part, then each wanted layer's."""
    probes = [layer.PROBE for layer in LAYERS.values()
              if getattr(layer, "PROBE", "") and getattr(layer, "wanted", lambda _mode: True)(mode)]
    return PROBE + "".join(probes) + ANSWER


def probe_targets(packages: tuple[str, ...] = ("numpy",)) -> dict[str, Any]:
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
    machine = os.uname().machine
    numbers = dict(seccomp.ARCHES[machine][1], **numbers_of(LAYERS.values(), machine)) if (
        seccomp.WORKS) else {}
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


def probe(mode: str, limits: Limits) -> Probed:
    """Start one child in ``mode`` (a name of MODES) the way a submission's starts: a
    Probed, ok if it ran numpy and reached nothing of the course. Tried twice, in case
    the machine was only busy."""
    from . import plan  # at call time: a test plays another kernel by replacing landlock_abi

    landlock_abi = plan.landlock_abi
    if mode == "landlock" and not landlock_abi():
        return Probed(problems=["landlock: this kernel offers no Landlock"])
    if mode == "uid" and not landlock_abi():
        return Probed(problems=["uid: without Landlock nothing bounds what the child writes "
                                "(/tmp and /dev/shm take files of every uid)"])
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


def _probe_with(mode: str, limits: Limits, targets: dict[str, Any]) -> Probed:
    spec, problems = MODES[mode], list[str]()
    for _attempt in range(2):  # once more only if the machine was too busy to answer
        folder = Path(tempfile.mkdtemp(prefix="mhakit-probe-"))
        try:
            with pool_uid_for(spec) as uid:
                config = child_plan(mode, limits, child_environment(), folder, pool_uid=uid)
                mode_said = {"name": mode, "namespaces": spec.namespaces,
                             "pool_uid": spec.pool_uid}
                secrets = dict(targets, mode=mode_said, layers=config.layers)
                command = launcher_command(config, code_for(spec), extra=[json.dumps(secrets)])
                done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            answer = _last_json(done.stdout)
            if done.returncode == 0 and answer.get("sum") == 2.0:
                landlock = config.layers.get("landlock") or {}
                seen = list(answer.get("seen") or []) + _listed_too_much(
                    answer.get("listed"), skip=landlock.get("listable", ()),
                    packages=limits.packages)
                if not seen:
                    return Probed(ok=True, facts=answer.get("facts") or {})
                return Probed(problems=problems + [could_line(mode, seen)])
            problem = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            return Probed(problems=problems + [f"{mode}: {problem[:200]}{_apparmor_note(mode)}"])
        except subprocess.TimeoutExpired:
            problems.append(f"{mode}: the probe child did not answer within 60 s")
        except (OSError, subprocess.SubprocessError, RuntimeError) as error:
            return Probed(problems=problems + [f"{mode}: {type(error).__name__}: {error}"])
        finally:
            remove_tree(folder)
    return Probed(problems=problems)


def could_line(mode: str, seen: list[str]) -> str:
    """One line for what a probe child could do: the first two in full, then the name of
    each other call (or "read", "list"...) it got through."""
    shown = {entry.split(" ", 1)[0] for entry in seen[:2]}
    more = [name for name in dict.fromkeys(entry.split(" ", 1)[0] for entry in seen[2:])
            if name not in shown]
    return (f"{mode}: a probe child could {', '.join(seen[:2])}"
            + (f" (and {', '.join(more)})" if more else ""))



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



def _last_json(text):
    try:
        answer = json.loads(text.strip().splitlines()[-1])
        return answer if isinstance(answer, dict) else {}
    except (IndexError, ValueError):
        return {}
