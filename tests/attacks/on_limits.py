"""Attacks on limits: see tests/attacks/corpus.py for how an Attack is graded.

A submission is held to one memory limit and one process limit as a whole, and nothing it
starts outlives its grading. tests/sandbox/test_limits.py measures these from outside;
here the same attacks are graded through both doors.
"""

from .corpus import REPO, Attack


def hogs(count, megabytes, name="mhakit-hog"):
    """softmax forks ``count`` processes that each hold ``megabytes`` for a second, named
    ``name`` (a process name, at most 15 bytes) so that the test can find them, and
    returns a wrong answer."""
    return (
        "import ctypes, os, time\n"
        "HOGGED = []\n"
        "def softmax(x, axis=-1):\n"
        "    x = np.asarray(x, dtype=float)\n"
        "    if not HOGGED:\n"
        "        HOGGED.append(True)\n"
        "        started = []\n"
        f"        for _ in range({count}):\n"
        "            try:\n"
        "                pid = os.fork()\n"
        "            except OSError:\n"
        "                break  # no new processes here\n"
        "            if pid == 0:\n"
        "                try:\n"
        f"                    ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"
        f"                    hog = np.ones({megabytes} << 17)\n"
        "                    time.sleep(1)\n"
        "                finally:\n"
        "                    os._exit(0)\n"
        "            started.append(pid)\n"
        "        for pid in started:\n"
        "            os.waitpid(pid, 0)\n"
        "    return np.ones_like(x) / x.shape[axis]\n")


def outlive(target, name="mhakit-ghost"):
    """split_heads leaves its session and its parent-death signal, double-forks a process
    that ignores SIGTERM and SIGHUP, then hangs past the call's deadline itself. Each of
    them (named ``name``, at most 15 bytes) waits until grading is over, then writes
    ``target``."""
    return (
        "import ctypes, os, signal, time\n"
        "LIBC = ctypes.CDLL(None)\n"
        f"TARGET = {str(target)!r}\n"
        "def after_grading(watch, ready=None):\n"
        "    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):\n"
        "        signal.signal(sig, signal.SIG_IGN)\n"
        f"    LIBC.prctl(15, {name.encode()!r}, 0, 0, 0)\n"
        "    if ready is not None:\n"
        "        os.write(ready, b'1')\n"
        "    end = time.monotonic() + 60\n"
        "    while time.monotonic() < end:\n"
        "        try:\n"
        "            os.kill(watch, 0)\n"
        "        except ProcessLookupError:\n"
        "            break\n"
        "        except OSError:\n"
        "            pass\n"
        "        time.sleep(0.05)\n"
        "    try:\n"
        "        with open(TARGET, 'w') as out:\n"
        "            out.write('written after grading')\n"
        "    except OSError:\n"
        "        pass\n"
        "def split_heads(X, num_heads):\n"
        "    LIBC.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG: none\n"
        "    try:\n"
        "        os.setsid()\n"
        "    except OSError:\n"
        "        pass\n"
        "    me, parent = os.getpid(), os.getppid()\n"
        "    ready_r, ready_w = os.pipe()\n"
        "    try:\n"
        "        middle = os.fork()\n"
        "    except OSError:\n"
        "        middle = None  # no new processes here: this one lingers alone\n"
        "    if middle == 0:\n"
        "        try:\n"
        "            if os.fork() == 0:\n"
        "                after_grading(me, ready_w)\n"
        "        finally:\n"
        "            os._exit(0)\n"
        "    if middle:\n"
        "        os.waitpid(middle, 0)\n"
        "        os.read(ready_r, 1)  # the ghost has its name\n"
        "    after_grading(parent if parent > 1 else me)\n"
        "    os._exit(0)\n")


LIMIT_ATTACKS = [
    # 8 x 640 MB asked for, under a 4 GB limit for the whole submission.
    Attack("eight-processes-one-memory-limit", zero=("softmax",),
           edits={"answer_softmax": hogs(8, 640)}),
    # Outside the jail (plain mode) the file would land in the course's release folder.
    Attack("leave-the-session-and-outlive-grading", zero=("split_heads",), edits={
        "answer_split_heads": outlive(REPO / "assignments" / "mha" / "written-after-grading.txt")}),
]
