"""One confined child process: started from the zygote (or afresh), read under deadlines, killed.

The grader speaks to it through one Unix socket. Everything the child sends is data, and
the grader trusts none of it (see student.py for what the data means).
"""

import atexit
import json
import logging
import multiprocessing.util
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..selfcheck import inert_ipython
from ..selfcheck.wording import say
from ..settings import settings
from . import cgroups, confinement, plan, scratch, uids
from .student_site import PYTHON_BINARY, student_site
from .child.runtime import pack, unpack_arrays
from .shared_inputs import memory_file

RUNTIME_SOURCE = (Path(__file__).parent / "child" / "runtime.py").read_text(encoding="utf-8")
INERT_IPYTHON_FILE = inert_ipython.__file__  # what every child is sent as IPython
MAX_REPLY = 16 << 20   # array bytes of one reply, unless the grader expects more
MAX_HEADER = 256 << 10  # the JSON of one message


class ChildGone(Exception):
    """The child died, hung or broke the protocol. ``silent``: the answer awaited never
    came (the child hung or ended), as against one that came and was refused."""

    def __init__(self, message, silent=False):
        super().__init__(message)
        self.silent = silent


class ChildProcess:
    """One child: start it confined, send requests, read replies under a deadline, kill."""

    def __init__(self, limits, warm=()):
        self.limits = limits
        self.folders, self.uid_lease = [], None
        self.buffer = bytearray()
        # A Unix socket rather than pipes: the grader hands the child its inputs as
        # memory files (see shared_inputs.py), and only a socket carries file descriptors.
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.to_child = self.from_child = self.channel.fileno()
        fds = (theirs.fileno(), theirs.fileno())
        self.mode = confinement.chosen_mode(limits)  # raises Unconfined: refused here
        spec = plan.MODES[self.mode]
        self.pidfd, self.uid = None, None  # B, the process that runs student code; its uid
        self.cgroup = cgroups.create(limits.memory_bytes, limits.processes)
        if spec.pool_uid:
            self.uid_lease = uids.UIDS.lend()
            self.uid = self.uid_lease[0]
        folder = self._folder(tempfile.mkdtemp(prefix="mhakit-child-"))
        config = plan.child_plan(self.mode, limits, plan.child_environment(), folder,
                                 pool_uid=self.uid, cgroup=self.cgroup)
        chosen = confinement.choice(limits)
        self.layers = plan.describe(config, chosen.probed.get(self.mode))
        self.layers += [f"not built here: {problem}" for problem in dict.fromkeys(chosen.problems)]
        zygote = Zygote.shared(limits.packages, warm)
        self.zygote, self.preloaded = zygote, frozenset()
        try:
            if zygote is not None:
                # And the batches it holds already, decoded by the zygote before the fork.
                self.process, self.preloaded = zygote.spawn(config, fds)
                self.layers.append("forked from a warm parent that has imported only "
                                   + ", ".join(("numpy",) + tuple(warm)))
                child = self.process.child
            else:
                self.process = subprocess.Popen(
                    plan.launcher_command(config, RUNTIME_SOURCE, fds), pass_fds=fds,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
                # Without namespaces the launcher execs the child itself; with them it waits.
                child = self.process.pid if not spec.namespaces else None
            if child is not None:
                try:
                    self.pidfd = os.pidfd_open(child)
                except ProcessLookupError:
                    pass  # it has ended already
        except BaseException:
            theirs.close()
            self.process = getattr(self, "process", None)
            self.close()
            raise
        theirs.close()
        self.channel.setblocking(False)  # see send_bytes

    def preload_for_later(self, key, data):
        """Have the zygote decode the batch message ``data`` once, for every child it
        forks from now on (they are then sent ``key`` instead, see child/runtime.py)."""
        zygote = self.zygote
        if zygote is not None and key not in zygote.preloaded and key not in zygote.refused:
            zygote.preload(key, data)

    def _folder(self, path):
        self.folders.append(Path(path))
        return path

    def send(self, header, arrays=(), deadline=None, fds=()):
        self.send_bytes(pack(header, arrays), deadline, fds)

    def send_bytes(self, data, deadline=None, fds=()):
        """Write ``data``; its first byte carries ``fds``. Never blocks for
        good: a child that stops reading (one that sent itself SIGSTOP, say) would
        otherwise hold the grader up with a full socket."""
        deadline = deadline or time.monotonic() + self.limits.call_seconds
        try:
            view = memoryview(data)
            if fds:  # they ride on the first byte sent
                self._wait_writable(deadline)
                view = view[socket.send_fds(self.channel, [view], list(fds)):]
            while view:
                self._wait_writable(deadline)
                try:
                    view = view[os.write(self.to_child, view):]
                except BlockingIOError:
                    continue
        except OSError as error:
            raise ChildGone(self.describe_exit(), silent=True) from error

    def _wait_writable(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([], [self.to_child], [], left)[1]:
            raise ChildGone(say("gone-not-reading"), silent=True)

    def _read(self, size, deadline, too_slow):
        # Buffered: the child streams many replies, and one read may bring several. The
        # buffer never holds more than one frame and one chunk.
        while len(self.buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                raise ChildGone(too_slow, silent=True)
            try:
                chunk = os.read(self.from_child, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChildGone(self.describe_exit(), silent=True)
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _frame(self, deadline, limit, too_slow):
        (size,) = struct.unpack(">Q", self._read(8, deadline, too_slow))
        if size > limit:  # refused before a byte of it is read
            raise ChildGone(say("gone-too-large"))
        return self._read(size, deadline, too_slow)

    def receive(self, deadline, limit=MAX_REPLY, too_slow=None):
        """One message: (header, arrays). ``limit`` (a number, or a function of the
        header) bounds its array bytes, which the grader knows from what it asked; the
        header is bounded on its own."""
        too_slow = too_slow or say("gone-too-slow", seconds=f"{self.limits.call_seconds:g}")
        try:
            header = json.loads(self._frame(deadline, MAX_HEADER, too_slow).decode("utf-8"))
            if not isinstance(header, dict):
                raise ValueError("not an object")
            if header.get("op") == "exited":  # written by the zygote's waiter
                raise ChildGone(describe_code(header.get("code")), silent=True)
            layout = header.get("arrays") or []
            bound = limit(header) if callable(limit) else limit
            data = self._frame(deadline, bound, too_slow) if layout else b""
            arrays = unpack_arrays(layout, data)
        except ChildGone:
            raise
        except Exception as error:  # garbage from the child: it is no longer trusted
            raise ChildGone(say("gone-protocol") + f" ({type(error).__name__})") from error
        return header, arrays

    def _until_socket_closes(self, deadline):
        """Wait, without polling, until every process holding the child's end has ended."""
        try:
            while (left := deadline - time.monotonic()) > 0:
                if select.select([self.from_child], [], [], left)[0]:
                    if not os.read(self.from_child, 1 << 16):
                        return
        except OSError:
            return

    def describe_exit(self):
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return say("gone-silent")
        return describe_code(code)

    def close(self):
        """End every process of the submission, whatever it did to its signals, session
        or process group; then give back its uid, but only once none of them is left."""
        # Everything it started, wherever it moved. Once the cgroup is empty, B has ended or
        # has not yet run student code (B joins it first), and is still in A's group.
        emptied = self.cgroup is not None and self.cgroup.kill()
        if self.pidfd is not None:  # B itself: in plain mode it may have killed A
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass
            os.close(self.pidfd)
            self.pidfd = None
        if self.process is not None and self.process.poll() is None:
            # A, the waiter, kills B on SIGTERM; in the jail B is PID 1 of its namespace,
            # so all B started dies with it.
            try:
                if not emptied:
                    os.kill(self.process.pid, signal.SIGTERM)
                    self.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                os.killpg(self.process.pid, 9)
            except OSError:
                self.process.kill()
            self._until_socket_closes(time.monotonic() + 2)
            self.process.wait()
        self.channel.close()
        for folder in self.folders:  # whatever modes the child left in it; said if it fails
            scratch.remove_tree(folder)
        # With a cgroup its emptiness is the kernel's word; without one, look for the uid.
        # (UIDS.lend also never lends a uid that has a process.)
        gone = uids.none_left(self.cgroup, self.uid if self.cgroup is None else None)
        if self.cgroup is not None:
            if gone and self.cgroup.remove():
                self.cgroup = None
            else:
                uids.LEFT_BEHIND.append(self.cgroup)  # it holds a process still
        if self.uid_lease is not None:
            if gone:
                uids.UIDS.give_back(self.uid_lease)
            else:  # never lent again by this grader: the lock on it stays held
                uids.LEFT_BEHIND.append(self.uid_lease)
            self.uid_lease = None
        self.cgroup = None


def describe_code(code):
    if not isinstance(code, int):
        return say("gone-exited")
    if code == 70:  # child/zygote.py: CONFINEMENT_FAILED
        return say("gone-no-jail")
    signal_number = -code if code < 0 else code - 128 if code > 128 else 0
    if signal_number:
        return say("gone-killed", signal=signal_number)
    return say("gone-exit-code", code=code)


class ZygoteChild:
    """A child forked by the zygote: not ours to wait for, but ours to kill. ``pid`` is the
    waiter (A), ``child`` the process that runs student code (B), as A reported it."""

    def __init__(self, pid, child=None):
        self.pid, self.child = pid, child

    def poll(self):
        try:
            os.kill(self.pid, 0)
            return None
        except ProcessLookupError:
            return 0

    def kill(self):
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass

    def wait(self, timeout=2):
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.001)
        return None  # the exit code arrives on the socket instead


class Zygote:
    """One warm child/zygote.py per grading process, started on first use.

    MHAKIT_ZYGOTE=0 turns it off: every child then starts Python afresh. A submission
    whose cells import a package that takes long to import (matplotlib.pyplot: 0.7 s, five
    times the grading of a whole notebook) is forked from a zygote that has imported it
    too, one per such set of modules.
    """

    _shared: dict = {}
    _lock = threading.Lock()

    def __init__(self, packages, warm=()):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        here = Path(__file__).parent / "child"
        site = str(student_site(packages))
        self.process = subprocess.Popen(
            [str(PYTHON_BINARY), "-I", "-S", str(here / "zygote.py"),
             str(theirs.fileno()), site, str(here / "runtime.py"),
             str(here / "launcher.py"), ",".join(warm), INERT_IPYTHON_FILE],
            pass_fds=[theirs.fileno()], env=plan.child_environment(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        self.socket, self.lock = ours, threading.Lock()
        self.preloaded, self.refused = set(), set()

    @classmethod
    def shared(cls, packages=("numpy",), warm=()):
        if not settings().zygote or not hasattr(socket, "send_fds"):
            return None
        kind = (tuple(packages), tuple(warm))
        with cls._lock:
            zygote = cls._shared.get(kind)
            if zygote is None or zygote.process.poll() is not None:
                zygote = cls._shared[kind] = cls(*kind)
            return zygote

    def preload(self, key, data):
        """Send the zygote a batch to decode once; every child it forks later holds it.
        A zygote that could not is simply not asked to fork with it."""
        fd = memory_file(data, sealed=True)
        try:
            with self.lock:
                socket.send_fds(self.socket, [json.dumps({"op": "preload", "key": key}).encode()],
                                [fd])
                reply = self.socket.recv(4096)
        except OSError:  # the zygote is gone: the next spawn says so, and starts another
            reply = b""
        finally:
            os.close(fd)
        held = json.loads(reply).get("held") if reply else None
        if isinstance(held, list):  # what it holds now, as it may have let the oldest go
            self.preloaded = set(held)
        else:
            self.refused.add(key)  # not asked again: its children are sent the batch

    def spawn(self, config, fds):
        """(the child, the keys of the batches it holds: what the zygote held at the fork)."""
        with self.lock:
            socket.send_fds(self.socket, [config.as_json().encode()], list(fds))
            reply = self.socket.recv(4096)
            held = frozenset(self.preloaded)
        if not reply:
            raise OSError("the zygote is gone")
        answer = json.loads(reply)
        child = answer.get("child")
        return ZygoteChild(int(answer["pid"]), int(child) if child is not None else None), held


# ------------------------------------------------------------ a spare child, ready

# One spare per set of warm modules (see Zygote): a class where some submissions plot and
# others do not keeps a spare of each kind. Each is filed with the key it was made for.
_SPARES: dict = {}
_SPARE_LOCK = threading.Lock()


def _knobs():
    """The settings that change how a child is made: a spare made under others is not used."""
    given = settings()
    return (given.sandbox, given.cgroups, given.zygote, given.hide, given.landlock,
            os.environ.get("PATH"))


def take_child(limits, warm=()):
    """A confined child for a submission. A child spends its first milliseconds building
    its jail and joining its cgroup (the kernel makes that wait for other CPUs), so
    the grader keeps a spare, started while the last submission was graded, and
    starts the next spare as it hands this one out. No student code has run in a spare;
    it serves the submission that takes it and no other."""
    # The process is part of the key: a forked copy of this grader must not share it.
    warm, key = tuple(warm), _spare_key(limits)
    with _SPARE_LOCK:
        made_for, spare = _SPARES.pop(warm, (None, None))
    if spare is not None and made_for[0] != os.getpid():
        spare = None  # the parent's, inherited by a fork: not ours to use or to close
    elif spare is not None and not (made_for == key and spare.process.poll() is None):
        spare.close()
        spare = None
    child = spare or ChildProcess(limits, warm)
    try:
        fresh = ChildProcess(limits, warm)
    except Exception:  # noqa: BLE001 - the next submission starts its own, as without spares
        fresh = None
    _file_spare(warm, key, fresh)
    return child


def make_spare(limits, warm=()):
    """Start the spare that the next ``take_child`` with these limits hands out, unless
    one is waiting: a class run's worker makes it while the run is still being readied,
    so that its first submission does not wait for a child either."""
    warm = tuple(warm)
    with _SPARE_LOCK:
        if warm in _SPARES:
            return
    _file_spare(warm, _spare_key(limits), ChildProcess(limits, warm))


def start_zygote(limits, warm=()):
    """Start the zygote that children under ``limits`` are forked from, if none runs: it
    imports numpy in a process of its own (about 0.2 s) while the caller goes on, such as
    a class run's worker planning its checks. Best effort: the first child says why not."""
    try:
        Zygote.shared(limits.packages, tuple(warm))
    except Exception:  # noqa: BLE001
        pass


def _spare_key(limits):
    return (os.getpid(), repr(limits), _knobs())


def _file_spare(warm, key, fresh):
    with _SPARE_LOCK:
        made_for, replaced = _SPARES.pop(warm, (None, None))
        _SPARES[warm] = (key, fresh)
    if replaced is not None and made_for[0] == os.getpid():
        replaced.close()  # another thread's spare of the same kind: one is enough


def close_spare():
    with _SPARE_LOCK:
        spares = [(made_for, spare) for made_for, spare in _SPARES.values()]
        _SPARES.clear()
    for made_for, spare in spares:
        if spare is not None and made_for[0] == os.getpid():
            spare.close()


atexit.register(close_spare)


class Teardown:
    """Where a graded submission's child is ended. By default here and now, so that
    grading a notebook returns with every process of the submission gone. A class run's
    grading worker ends them in a thread of its own instead (``in_background``), while it
    reads and starts the next submission: waiting for each end took 3 to 5% of a class's
    wall time. Such a worker still ends the last of them before it exits."""

    def __init__(self):
        self._ender = None

    def in_background(self):
        if self._ender is None:
            # Python joins an executor's threads as the process exits, a pool's worker too.
            self._ender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mhakit-end")

    def end(self, child):
        if self._ender is None:
            child.close()
        else:
            self._ender.submit(child.close).add_done_callback(_said_if_failed)

    def wait(self):
        """Return once every child handed to ``end`` has ended; end the next ones here."""
        ender, self._ender = self._ender, None
        if ender is not None:
            ender.shutdown(wait=True)


def _said_if_failed(ended):
    if ended.exception() is not None:  # its grading is over: the run goes on, and says so
        logging.getLogger("mhakit").warning("ending a grading child failed: %r",
                                            ended.exception())


ENDINGS = Teardown()


def start_class_worker(choice):
    """A class run's grading worker, as it starts: the confinement that the run's main
    process probed (confinement.adopt), and children ended in the background."""
    confinement.adopt(choice)
    ENDINGS.in_background()
    # A pool's worker ends without atexit, and it starts with the finalisers that its
    # forkserver registered cleared: closing its spare is registered here, as it starts.
    # (Registered at import, it never ran, and each worker left its spare's folder.)
    multiprocessing.util.Finalize(None, close_spare, exitpriority=10)
