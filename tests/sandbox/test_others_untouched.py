"""Where the child keeps the grader's uid, it changes no file it has not opened for writing
and reaches no process but its own (child/layers/others_untouched.py); every mode's probe tries each such
call, and the child's folder goes whatever it did to the modes in it."""

import errno
import json
import logging
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mhakit.sandbox import Limits, plan, probe, scratch
from mhakit.sandbox.child import seccomp
from mhakit.sandbox.child.layers import others_untouched

REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not plan.SECCOMP_WORKS,
                                reason="seccomp filters of the kit's are for Linux on x86_64 "
                                       "and aarch64")

UNDER_THE_FILTER = """\
import errno, fcntl, json, os, resource, socket, sys
sys.path.insert(0, sys.argv[1])
import seccomp
sys.path.insert(0, os.path.join(sys.argv[1], "layers"))
import others_untouched
path, parent = sys.argv[2], os.getppid()
seccomp.install(others_untouched.refusals(os.getpid()))
def outcome(call):
    try:
        call()
        return "done"
    except OSError as error:
        return errno.errorcode[error.errno]
print(json.dumps({
    "chmod": outcome(lambda: os.chmod(path, 0o777)),
    "chown": outcome(lambda: os.chown(path, 65534, 65534)),
    "utime": outcome(lambda: os.utime(path, (0, 0))),
    "setxattr": outcome(lambda: os.setxattr(path, "user.mhakit-test", b"1")),
    "truncate": outcome(lambda: os.truncate(path, 0)),
    "open for reading, truncated":
        outcome(lambda: os.close(os.open(path, os.O_RDONLY | os.O_TRUNC))),
    "kill the parent": outcome(lambda: os.kill(parent, 0)),
    "kill its group": outcome(lambda: os.kill(0, 0)),
    "kill every process": outcome(lambda: os.kill(-1, 0)),
    "limits of the parent": outcome(lambda: resource.prlimit(parent, resource.RLIMIT_CORE)),
    "SIGIO to the parent": outcome(lambda: fcntl.fcntl(socket.socket(), fcntl.F_SETOWN, parent)),
    "open for reading": outcome(lambda: os.close(os.open(path, os.O_RDONLY))),
    "kill itself": outcome(lambda: os.kill(os.getpid(), 0)),
    "its own limits": outcome(lambda: resource.prlimit(0, resource.RLIMIT_CORE)),
    "its own priority": outcome(lambda: os.setpriority(
        os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0))),
}))
"""
ITS_OWN = {"open for reading", "kill itself", "its own limits", "its own priority"}


@linux_only
def test_the_filter_refuses_each_change_to_another_file_or_process_and_allows_its_own(tmp_path):
    path = tmp_path / "course-file"
    path.write_text("the course's\n")
    path.chmod(0o640)
    before = os.stat(path)
    done = subprocess.run([sys.executable, "-I", "-c", UNDER_THE_FILTER,
                           str(REPO / "mhakit" / "sandbox" / "child"), str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(done.stdout)
    assert {name for name, said in outcomes.items() if said == "done"} == ITS_OWN, outcomes
    assert {said for name, said in outcomes.items() if name not in ITS_OWN} == {"EPERM"}
    after = os.stat(path)
    assert path.read_text() == "the course's\n"
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_mtime_ns) == (
        before.st_mode, before.st_uid, before.st_gid, before.st_mtime_ns)
    assert not os.listxattr(path)


def test_the_numbers_of_both_architectures_are_the_kernels():
    x86, arm = seccomp.ARCHES["x86_64"][1], seccomp.ARCHES["aarch64"][1]
    assert (x86["chmod"], x86["fchmodat"], x86["truncate"], x86["kill"], x86["ptrace"],
            x86["utimensat"], x86["setxattr"]) == (90, 268, 76, 62, 101, 280, 188)
    assert (arm["fchmodat"], arm["truncate"], arm["kill"], arm["ptrace"], arm["utimensat"],
            arm["setxattr"]) == (53, 45, 129, 117, 88, 5)
    assert "chmod" not in arm and "open" not in arm  # aarch64 has only the *at calls
    for name in others_untouched.FILE_CHANGES + others_untouched.PROCESS_CHANGES:
        assert name in x86, name
    if platform.machine() == "x86_64":  # this kernel's own headers, where they are here
        header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
        if header.exists():
            text = header.read_text()
            for name, number in x86.items():
                if f"#define __NR_{name} " in text:
                    assert f"#define __NR_{name} {number}\n" in text, name


def played_at(abi, monkeypatch, filtered=True):
    """The landlock mode as a kernel of Landlock ``abi`` would build it (ABI 2 has no
    truncate right, below 6 no signal scope), with the filter or without it."""
    if not plan.landlock_abi():
        pytest.skip("this kernel offers no Landlock")
    planned = plan.child_plan

    def played(*args, **kwargs):
        config = planned(*args, **kwargs)
        layers = config.layers
        layers["landlock"] = dict(layers["landlock"], abi=min(abi, plan.landlock_abi()))
        if not filtered:
            del layers["others_untouched"], layers["no_sockets"]
        return config

    monkeypatch.setattr(probe, "child_plan", played)


@linux_only
@pytest.mark.parametrize("abi", range(1, 8))
def test_a_mode_that_lets_one_such_call_through_is_refused_in_one_line_naming_it(
        abi, monkeypatch):
    played_at(abi, monkeypatch, filtered=False)
    probed = probe.probe("landlock", Limits())
    assert not probed.ok
    (line,) = probed.problems
    assert line.startswith("landlock: a probe child could chmod "), line
    assert "\n" not in line and "chown" in line and "utime" in line
    assert "socket" in line and "io_uring_setup" in line  # whatever Landlock's ABI
    if abi < 3:
        assert "truncate" in line
    if abi < 6:
        assert "kill" in line


@linux_only
@pytest.mark.parametrize("abi", range(1, 8))
def test_with_the_filter_landlock_at_each_abi_denies_them_all(abi, monkeypatch):
    played_at(abi, monkeypatch)
    probed = probe.probe("landlock", Limits())
    assert probed.ok, probed.problems
    assert "socket" in probed.facts["tried"]


@linux_only
def test_each_probe_lists_what_it_tried_and_the_result_says_so(monkeypatch):
    if not plan.landlock_abi():
        pytest.skip("this kernel offers no Landlock")
    probed = probe.probe("landlock", Limits())
    assert probed.ok, probed.problems
    tried = probed.facts["tried"]
    for name in ("chmod", "chown", "utime", "setxattr", "truncate", "kill", "tgkill",
                 "pidfd_send_signal", "ptrace", "process_vm_writev"):
        assert name in tried
    config = plan.plan("landlock", Limits(), {}, scratch="/tmp/nowhere")
    layers = plan.describe(config, probed.facts)
    assert others_untouched.SAID in layers
    assert any(layer.startswith("probed, and each refused") and "chmod" in layer
               for layer in layers)
    for mode in ("uid", "plain"):
        assert "others_untouched" not in plan.plan(mode, Limits(), {}, scratch="/tmp/nowhere").layers


GRADE_AN_ATTACK = """\
import json, os, sys
from pathlib import Path
from tests.attacks.corpus import Attack
from tests.attacks.on_confinement import cheat, touch
from mhakit.grader.grading import grade_notebook
files = json.loads(sys.argv[2])
attack = Attack("x", edits={"answer_dot_product": cheat(
    "dot_product", touch(files, grader=os.getpid(), harm=True))})
path = Path(sys.argv[1])
path.write_bytes(attack.make())
result = grade_notebook(path, seed=7)
print(json.dumps(result.as_json()["extra_data"]))
"""


def facts_of(path):
    info = os.stat(path)
    return (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, info.st_mtime_ns,
            path.read_bytes(), sorted(os.listxattr(path)))


@pytest.mark.skipif(sys.platform != "linux", reason="Landlock is Linux's")
def test_in_landlock_mode_a_submission_changes_no_course_file_and_stops_no_grader(tmp_path):
    """Landlock alone, root keeping uid 0 without capabilities or an ordinary user: both
    own the course and could chmod it, but for the filter."""
    from tests.grader.test_attacks import FULL

    if not plan.landlock_abi():
        pytest.skip("this kernel offers no Landlock")
    course = tmp_path / "course"
    (course / "exercise").mkdir(parents=True)
    files = [course / "exercise" / "reference.py", course / "gradebook.db"]
    for path in files:
        path.write_bytes(b"the course's own\n")
        path.chmod(0o600)
    before = {path: facts_of(path) for path in files}
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(os.environ, MHAKIT_SANDBOX="landlock", MHAKIT_HIDE=str(course),
               MHAKIT_CALL_SECONDS="3", TMPDIR=str(temporary))
    grader = subprocess.Popen([sys.executable, "-c", GRADE_AN_ATTACK, str(tmp_path / "mha.ipynb"),
                               json.dumps([str(p) for p in files])], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = grader.communicate(timeout=240)
    except subprocess.TimeoutExpired:  # stopped by the submission: never leave it stopped
        grader.send_signal(signal.SIGCONT)
        grader.kill()
        grader.communicate()
        pytest.fail("the grader did not finish: the submission stopped it")
    assert grader.returncode == 0, err[-3000:]
    extra = json.loads(out.strip().splitlines()[-1])
    assert extra["confinement"] == "landlock", extra
    assert extra["parts"] == dict(FULL, dot_product=0.0), extra["parts"]
    assert others_untouched.SAID in extra["isolation"]
    assert {path: facts_of(path) for path in files} == before
    assert not [p.name for p in temporary.iterdir()
                if p.name.startswith(("mhakit-child-", "mhakit-probe-"))]


AS_NOBODY = """\
import os, sys
sys.path.insert(0, sys.argv[1])
from mhakit.sandbox import scratch  # while the interpreter's own files are readable
if os.geteuid() == 0:  # root ignores modes: play the ordinary user the issue was about
    os.setgid(65534)
    os.setuid(65534)
folder = sys.argv[2]
for below in ("a/b/c", "d"):
    os.makedirs(os.path.join(folder, below))
    with open(os.path.join(folder, below, "f"), "wb") as handle:
        handle.write(b"x" * 4096)
os.symlink("/etc/passwd", os.path.join(folder, "a", "link"))
os.chmod(os.path.join(folder, "a", "b", "c"), 0o500)
os.chmod(os.path.join(folder, "a", "b"), 0o000)
os.chmod(os.path.join(folder, "d"), 0o100)
os.chmod(os.path.join(folder, "a"), 0o500)
print(scratch.remove_tree(folder), os.path.lexists(folder))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the modes tried here are Linux's")
def test_a_read_only_folder_in_scratch_is_still_removed():
    # In the shared temporary folder, not pytest's: another uid must reach it.
    parent = Path(tempfile.mkdtemp(prefix="mhakit-test-scratch-"))
    try:
        parent.chmod(0o1777)  # as /tmp is, where the grader makes its children's folders
        folder = parent / "folder"
        folder.mkdir()
        if os.geteuid() == 0:
            os.chown(folder, 65534, 65534)
        passwd = os.stat("/etc/passwd")
        done = subprocess.run([sys.executable, "-I", "-c", AS_NOBODY, str(REPO), str(folder)],
                              capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"], done.stderr
    assert os.stat("/etc/passwd").st_mode == passwd.st_mode  # a link is never followed


def test_a_cleanup_that_fails_is_said(tmp_path, monkeypatch, caplog):
    folder = tmp_path / "mhakit-child-x"
    (folder / "held").mkdir(parents=True)
    (folder / "held" / "f").write_bytes(b"x")
    unlink = os.unlink

    def refused(path, *args, **kwargs):
        if str(path).endswith("f"):
            raise PermissionError(errno.EPERM, "held", str(path))
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refused)
    with caplog.at_level(logging.WARNING, logger="mhakit.sandbox.scratch"):
        assert not scratch.remove_tree(folder)
    said = " ".join(record.getMessage() for record in caplog.records)
    assert str(folder) in said and "held" in said
