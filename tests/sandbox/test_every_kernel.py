"""Every kernel the kit claims, attacked through the grader's real entry point.

One notebook tries every harm at once (tests/attacks/on_confinement.py: everything) and is
graded in a process of its own, through both doors (grade_notebook, which `mhakit grade`
calls, and nbgrader's AutogradeApp with the course's config), in each mode: root's jail, the user
namespace, a uid of the pool, and Landlock alone at each ABI from 1 to 7, with and without
cgroups. A lower ABI is played as the tests play a machine without namespaces: the plan's
ruleset is built with that ABI's rights only (child/layers/landlock.py: handled), so the seccomp
layer must cover what the ruleset lacks. Each run checks the grade, the course files'
modes, owners, times, contents and attributes, what is left in the temporary folder (and
mounted there), and that no process of the submission outlives its grading.
"""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mhakit.sandbox import Limits, plan, probe
from mhakit.sandbox.child.layers import no_sockets, others_untouched
from tests.attacks.on_confinement import FILL_PREFIX
from tests.sandbox.test_confinement_modes import instructor  # noqa: F401 - a fixture

REPO = Path(__file__).resolve().parents[2]
BOUND = Limits().scratch_bytes
KEPT = ("mhakit-site-", "mhakit-uids")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the modes played are Linux's")

# In a process of its own: a subreaper, so that whatever the submission leaves running is
# reparented here and can be counted once grading and its warm parents have ended.
GRADE = """\
import ctypes, json, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
from tests.attacks.corpus import Attack
from tests.attacks.on_confinement import cheat, everything
from mhakit.sandbox import plan, process, scratch
args = json.loads(sys.argv[1])
if args["abi"]:
    real = plan.landlock_abi
    plan.landlock_abi = lambda: min(args["abi"], real())
if not args["mount"]:  # a grader that may not mount: an ordinary user, a container
    scratch.mount_tmpfs = lambda *_: False
from mhakit.grader.grading import grade_notebook
attack = Attack("x", edits={"answer_dot_product": cheat("dot_product", everything(
    args["course"], os.getpid(), args["bystander"], args["tcp"], args["udp"], args["unix"],
    args["bound"]))})
path = args["notebook"]
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "wb") as handle:
    handle.write(attack.make())
if args["door"] == "nbgrader":  # nbgrader's own autograde, in this process, in its course
    from nbgrader.apps import AutogradeApp
    from nbgrader.api import Gradebook
    import mhakit.integrations.nbgrader_plugin as plugin
    seen, grade_cells = [], plugin.grade_cells
    plugin.grade_cells = lambda *a, **k: seen.append(grade_cells(*a, **k)) or seen[-1]  # observed
    os.chdir(args["nbgrader_course"])
    app = AutogradeApp.instance()
    app.initialize(["mha", "--force", "--IsolatedAutograde.seed=7"])
    app.start()
    extra = seen[-1].as_json()["extra_data"]
    with Gradebook("sqlite:///gradebook.db") as gradebook:
        extra["gradebook_score"] = gradebook.find_submission("mha", "x").score
else:
    extra = grade_notebook(path, seed=7).as_json()["extra_data"]
process.close_spare()
for zygote in process.Zygote._shared.values():
    zygote.socket.close()
    zygote.process.wait(timeout=30)
while True:  # orphans reparented here and killed since: reaped, so that only the living count
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            break
    except ChildProcessError:
        break
left = []
for name in os.listdir("/proc"):
    try:
        with open(f"/proc/{name}/stat") as handle:
            if int(handle.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                left.append(int(name))
    except (OSError, ValueError, IndexError):
        pass
print(json.dumps({"extra": extra, "left": left}))
"""


def facts_of(path):
    info = os.stat(path)
    return (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, info.st_mtime_ns,
            path.read_bytes(), sorted(os.listxattr(path)))


@pytest.fixture(scope="module", autouse=True)
def one_worker():
    """Shared by every test here, so that a parallel run gives them all to one worker
    (tests/worker_groups.py), one after another: unconfined, an attack signals every
    process and writes in /tmp, which another test here would take for a hole in its
    own mode. No test elsewhere listens for either."""


@pytest.fixture
def course(tmp_path):
    """A course of root's (as the grader's own): the reference, the gradebook, the
    source notebook and another student's submission."""
    folder = tmp_path / "course"
    files = [folder / "exercise" / "reference.py", folder / "gradebook.db",
             folder / "source" / "mha" / "mha.ipynb", folder / "submitted" / "bo" / "mha.ipynb"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"### BEGIN SOLUTION the course's own\n")
        path.chmod(0o600)
    return folder, files


@pytest.fixture
def listeners(tmp_path):
    """What a submission must not reach: a TCP and a UDP socket on loopback, a Unix
    socket anyone may connect to, and a bystander process of the grader's uid."""
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix_path = tmp_path / "bus"
    unix.bind(str(unix_path))
    unix_path.chmod(0o777)
    unix.listen()
    for each in (tcp, udp, unix):
        each.setblocking(False)
    heard = tmp_path / "bystander-heard-a-signal"
    bystander = subprocess.Popen([sys.executable, "-c", BYSTANDER, str(heard)])
    while not (tmp_path / "bystander-ready").exists():  # its handler is in place
        time.sleep(0.01)
    yield {"tcp": tcp, "udp": udp, "unix": unix, "unix_path": unix_path, "bystander": bystander,
           "heard": heard}
    bystander.kill()
    bystander.wait()
    for each in (tcp, udp, unix):
        each.close()


def appears(path, seconds):
    """Whether ``path`` exists within ``seconds`` (looked for every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


BYSTANDER = """\
import os, signal, sys, time
signal.signal(signal.SIGWINCH, lambda *_: open(sys.argv[1], "w").close())
open(os.path.join(os.path.dirname(sys.argv[1]), "bystander-ready"), "w").close()
while True:
    time.sleep(600)
"""


def nothing_reached(listeners):
    for name in ("tcp", "unix"):
        with pytest.raises(BlockingIOError):
            listeners[name].accept()
    with pytest.raises(BlockingIOError):
        listeners["udp"].recv(16)
    with open(f"/proc/{listeners['bystander'].pid}/stat") as handle:
        state = handle.read().rsplit(")", 1)[1].split()[0]
    assert state != "T", "the bystander was stopped"
    # A signal that got through and waits to be handled counts as much as one handled.
    assert not pending_signals(listeners["bystander"].pid), "a signal waits for the bystander"
    assert not listeners["heard"].exists(), "a signal to every process reached the bystander"


def pending_signals(pid):
    """The signals sent to process ``pid`` that it has not taken yet (blocked, or not
    handled so far), from the masks of /proc/PID/status."""
    with open(f"/proc/{pid}/status") as handle:
        masks = dict(line.split(":", 1) for line in handle if ":" in line)
    pending = int(masks["SigPnd"], 16) | int(masks["ShdPnd"], 16)
    return [number for number in range(1, 65) if pending >> (number - 1) & 1]


def test_a_signal_that_waits_to_be_handled_counts_as_reaching_the_bystander(listeners):
    bystander = listeners["bystander"].pid
    nothing_reached(listeners)
    # A bystander that blocks SIGWINCH holds it pending: its handler never runs.
    blocker = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH}); "
                                "print(flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
    try:
        blocker.stdout.readline()
        os.kill(blocker.pid, signal.SIGWINCH)
        with pytest.raises(AssertionError, match="waits for the bystander"):
            nothing_reached(dict(listeners, bystander=blocker))
    finally:
        blocker.kill()
        blocker.wait()
    assert listeners["bystander"].pid == bystander and not pending_signals(bystander)


def graded(request, tmp_path, course, listeners, mode, abi=0, cgroup=True, mount=True,
           python=sys.executable, cwd=REPO, nbgrader_course=None):
    # In the shared temporary folder, not pytest's (private to root): a uid of the pool
    # must reach the folders the grader makes for it; 1777, as /tmp is.
    temporary = Path(tempfile.mkdtemp(prefix="mhakit-test-tmp-"))
    temporary.chmod(0o1777)
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    env = dict(os.environ, MHAKIT_SANDBOX=mode, MHAKIT_HIDE=str(course[0]),
               MHAKIT_CALL_SECONDS="20", TMPDIR=str(temporary),
               MHAKIT_CGROUP="1" if cgroup else "0")
    args = {"abi": abi, "mount": mount, "course": [str(p) for p in course[1]],
            "bystander": listeners["bystander"].pid, "tcp": listeners["tcp"].getsockname()[1],
            "udp": listeners["udp"].getsockname()[1], "unix": str(listeners["unix_path"]),
            "bound": BOUND, "notebook": str(tmp_path / "mha.ipynb"), "door": "grade_notebook"}
    if nbgrader_course is not None:
        args.update(door="nbgrader", nbgrader_course=str(nbgrader_course),
                    notebook=str(nbgrader_course / "submitted" / "x" / "mha" / "mha.ipynb"))
    grader = subprocess.Popen([python, "-c", GRADE, json.dumps(args)], cwd=cwd,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        out, err = grader.communicate(timeout=300)
    except subprocess.TimeoutExpired:  # stopped by the submission: never leave it stopped
        os.killpg(grader.pid, signal.SIGCONT)
        os.killpg(grader.pid, signal.SIGKILL)
        grader.communicate()
        pytest.fail("the grader did not finish: the submission stopped it")
    assert grader.returncode == 0, err[-3000:]
    answer = json.loads(out.strip().splitlines()[-1])
    return answer, temporary


def assert_denied(answer, temporary, course, listeners, mode, before):
    from tests.grader.test_attacks import FULL

    extra = answer["extra"]
    assert extra["confinement"] == mode, extra
    assert extra["parts"] == dict(FULL, dot_product=0.0), (extra["parts"], extra["isolation"])
    assert {path: facts_of(path) for path in course[1]} == before
    nothing_reached(listeners)
    # The shared site of what students may import and the uid pool's locks stay, by design.
    left = [p.name for p in temporary.iterdir() if not p.name.startswith(KEPT)]
    assert not left, left
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not list(Path(folder).glob(FILL_PREFIX + "*")), folder
    with open("/proc/self/mountinfo") as handle:
        assert str(temporary) not in handle.read()
    assert answer["left"] == [], "a process of the submission outlived its grading"
    assert any(layer.startswith("scratch: at most ") for layer in extra["isolation"])


# Landlock alone at each ABI, then the modes that have more than Landlock, with and
# without a cgroup for those that take one (the pool's uid). The uid mode needs a Python
# that its uid can read: see test_confinement_modes.py, which plays it under a venv of /opt.
PLAYED = ([("landlock", abi, True) for abi in range(1, 8)]
          + [("landlock", 2, True, False), ("jail", 0, True), ("jail", 0, False),
             ("userns", 0, True)])


@pytest.fixture(scope="module")
def built_course(tmp_path_factory):
    """An nbgrader course with the release in its gradebook, for nbgrader's door."""
    from mhakit.authoring.build import generate_release, write_source
    from tests.mha_exercise import EXERCISE

    root = tmp_path_factory.mktemp("every-kernel") / "course"
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    write_source(EXERCISE, root)
    generate_release(root, "mha")
    return root


@pytest.fixture
def nbgrader_course(request, built_course, tmp_path):
    if request.param != "nbgrader":
        return None
    shutil.copytree(built_course, tmp_path / "nbgrader-course")
    return tmp_path / "nbgrader-course"


@pytest.mark.parametrize("nbgrader_course", ["grade_notebook", "nbgrader"], indirect=True)
@pytest.mark.parametrize("played", PLAYED, ids=lambda p: "-".join(map(str, p)))
def test_every_attack_is_denied_in_each_mode_and_at_each_abi(request, tmp_path, course,
                                                             listeners, played,
                                                             nbgrader_course):
    """Through both doors: grade_notebook, which `mhakit grade` calls, and nbgrader's own
    autograde with the kit's config, its score read back from the gradebook."""
    mode, abi, cgroup, *mount = played
    if abi and abi > plan.landlock_abi():
        pytest.fail(f"this kernel offers Landlock ABI {plan.landlock_abi()}, "
                    f"below the {abi} played")
    before = {path: facts_of(path) for path in course[1]}
    answer, temporary = graded(request, tmp_path, course, listeners, mode, abi, cgroup,
                               mount=mount[0] if mount else True,
                               nbgrader_course=nbgrader_course)
    assert_denied(answer, temporary, course, listeners, mode, before)
    if nbgrader_course is not None:
        from tests.grader.test_attacks import FULL

        assert answer["extra"]["gradebook_score"] == sum(FULL.values()) - FULL["dot_product"]
    layers = answer["extra"]["isolation"]
    if abi:
        assert any(layer.startswith(f"Landlock (ABI {abi})") for layer in layers), layers
        assert no_sockets.SAID in layers and others_untouched.SAID in layers
    said = "scratch: at most 0 MB" if mount == [False] else f"scratch: at most {BOUND >> 20} MB"
    assert any(layer.startswith(said) for layer in layers), layers


# The same search with no confinement at all: each harm it counts gets through, so a run
# above that counts none was denied, not missed. The grader it may stop is a stand-in.
UNCONFINED = """\
import ctypes, json, os, signal, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: its sleeper comes back here
import numpy as np
from tests.attacks.on_confinement import HELPERS, everything
args = json.loads(sys.argv[1])
os.chdir(args["scratch"])
space = {"np": np}
exec(HELPERS + everything(args["course"], args["bystander"], args["bystander"], args["tcp"],
                          args["udp"], args["unix"], args["bound"]), space)
for name in os.listdir("/proc"):  # the sleeper it forked, by its parent: this process
    try:
        with open(f"/proc/{name}/stat") as handle:
            if int(handle.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                os.kill(int(name), signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass
print(json.dumps(space["ROUTE"]))
"""


def test_unconfined_the_same_attacks_get_through(tmp_path, course, listeners):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = {"course": [str(p) for p in course[1]], "bystander": listeners["bystander"].pid,
            "tcp": listeners["tcp"].getsockname()[1], "udp": listeners["udp"].getsockname()[1],
            "unix": str(listeners["unix_path"]), "bound": BOUND, "scratch": str(scratch)}
    env = dict(os.environ, TMPDIR=str(scratch), HOME=str(tmp_path))
    try:
        done = subprocess.run([sys.executable, "-c", UNCONFINED, json.dumps(args)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
    finally:
        os.kill(listeners["bystander"].pid, signal.SIGCONT)
        shutil.rmtree(scratch)  # 72 MB that pytest would otherwise keep
        for folder in ("/tmp", "/var/tmp", "/dev/shm"):
            for path in Path(folder).glob(FILL_PREFIX + "*"):
                path.unlink()
    assert done.returncode == 0, done.stderr
    routes = json.loads(done.stdout.strip().splitlines()[-1])
    name = str(course[1][0])
    for route in ("chmod", "chown", "utime", "truncate", "O_TRUNC", "read"):
        assert f"{route} {name}" in routes, routes
    # The signal to every process: the attack had stopped the bystander first, so it
    # handles the signal only once SIGCONT (above) lets it run, which a busy machine may
    # put off for a while.
    assert appears(listeners["heard"], seconds=30)
    for route in ("stop a bystander", "connect TCP", "bind TCP",
                  "send UDP", "connect to a Unix socket", "wrote in /tmp"):
        assert route in routes, routes
    assert any(route.startswith("wrote ") and "bytes" in route for route in routes), routes


@pytest.mark.slow
@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "no-cgroup"])
def test_every_attack_is_denied_in_the_uid_mode(request, tmp_path, course, listeners,
                                                 instructor, cgroup):
    """The uid mode runs the child as a uid of the pool, which must read the grader's
    Python: the venv of /opt that test_confinement_modes.py builds, and its course."""
    before = {path: facts_of(path) for path in course[1]}
    answer, temporary = graded(request, tmp_path, course, listeners, "uid", cgroup=cgroup,
                               python=instructor["python"], cwd=instructor["course"])
    assert_denied(answer, temporary, course, listeners, "uid", before)
    assert f"scratch: at most {BOUND >> 20} MB (a size-limited tmpfs)" in answer["extra"]["isolation"]


def test_a_kernel_without_landlock_leaves_the_uid_mode_unbounded_and_it_is_refused(monkeypatch):
    monkeypatch.setattr(plan, "landlock_abi", lambda: 0)
    probed = probe.probe("uid", Limits())
    assert not probed.ok
    (line,) = probed.problems
    assert line.startswith("uid: without Landlock nothing bounds what the child writes"), line
