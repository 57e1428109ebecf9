"""Every confinement mode, as an instructor meets it: the attack corpus graded in each.

CI runs as root. The other modes are played here the way a grader meets them:
- an instructor's own account: an ordinary user (made with useradd) with a venv of its
  own, made from the system's Python (it cannot enter root's home, where CI's Python is),
  and its own clone of the kit as the course: user namespaces plus Landlock;
- a container: root under a seccomp filter that refuses namespaces
  (tests/sandbox/without_namespaces.py): an unprivileged uid plus Landlock;
- an account without user namespaces: the ordinary user under that filter: Landlock alone;
- nothing at all: that user, and no Landlock either: grading refuses, and with the
  override it grades and flags every result.
Each mode grades the whole corpus in one batch through `mhakit grade`; the ordinary user
also through `nbgrader autograde`, as formgrader runs it on JupyterHub. A test that needs
what this machine cannot offer fails in CI and skips elsewhere.
"""

import csv
import hashlib
import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from mhakit.authoring import nbgrader_command
from tests.attacks.corpus import ATTACKS, REPO
from tests.grader.test_attacks import LIMITS, expected_parts

USER = "mhakit-instructor"
HOME = Path("/home") / USER
OPT = Path("/opt/mhakit-instructor")  # the user's venv: readable by the pool's uids too
WRAPPER = ["tests/sandbox/without_namespaces.py", "--"]
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"  # util-linux, on every Debian
pytestmark = pytest.mark.slow


def unavailable(why):
    if os.environ.get("CI"):
        pytest.fail(f"CI must offer this mode, but {why}")
    pytest.skip(why)


def run(command, user=None, timeout=1800, **kwargs):
    prefix = [RUNUSER, "-u", user, "--"] if user else []
    return subprocess.run(prefix + command, capture_output=True, text=True, timeout=timeout,
                          **kwargs)


def system_python():
    """A Python 3.11+ outside root's home, with venv: Debian's, in CI."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        done = subprocess.run([candidate, "-c", "import sys, venv, ensurepip; "
                               "assert sys.version_info >= (3, 11)"], capture_output=True)
        if done.returncode == 0:
            return candidate
    unavailable("no system Python 3.11+ with venv outside root's home (python3-venv)")


@pytest.fixture(scope="session")
def instructor():
    """An ordinary user with a clone of the kit as its course and a venv of its own."""
    if os.geteuid() != 0:
        unavailable("these modes are played by root (useradd, runuser)")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        done = run(["useradd", "--create-home", "--shell", "/bin/bash", USER])
        assert done.returncode == 0, done.stderr
    course = HOME / "course"
    shutil.rmtree(course, ignore_errors=True)
    tracked = run(["git", "ls-files", "-z"], cwd=REPO).stdout.split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (course / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, course / name)
    run(["chown", "-R", f"{USER}:{USER}", str(course)])
    # Private, as the README's setup makes a course: the grading doors refuse a course that
    # other people's accounts can read, and this machine has such accounts.
    done = run(["chmod", "-R", "go-rwx", str(course)], user=USER)
    assert done.returncode == 0, done.stderr
    venv = OPT / "venv"
    key = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    if not (OPT / f"installed-{key}").exists():
        shutil.rmtree(OPT, ignore_errors=True)
        OPT.mkdir(parents=True)
        for command in ([system_python(), "-m", "venv", str(venv)],
                        [str(venv / "bin" / "pip"), "install", "--quiet", str(course)]):
            done = run(command)
            assert done.returncode == 0, done.stderr[-3000:]
        (OPT / f"installed-{key}").touch()
    # The venv holds the kit next to numpy, as `pip install` leaves it; the grader runs
    # from the course (python -m puts the working folder first on sys.path).
    return {"course": course, "python": str(venv / "bin" / "python")}


def corpus_folder(root):
    """The whole corpus as one class, a student per attack."""
    for attack in ATTACKS:
        path = root / attack.name / "mha.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(attack.make())
    return root


def grade_corpus(who, python, course, wrapper=(), extra=(), env=None):
    """`mhakit grade` over the corpus as ``who``; (completed process, results by name)."""
    out = course / "results"
    shutil.rmtree(out, ignore_errors=True)
    folder = course / "corpus-class"
    if not folder.exists():
        corpus_folder(folder)
    if who:
        run(["chown", "-R", f"{who}:{who}", str(folder)])
    command = [*([python, *wrapper] if wrapper else []), python, "-m", "mhakit.integrations.cli",
               "grade", str(folder), "--out", str(out), "--quiet", "--seed", "7", "--fresh",
               "--jobs", "2", *extra]
    environment = dict(env or {}, **LIMITS, LANG="C.UTF-8",
                       PATH="/usr/bin:/bin", HOME=str(HOME))
    done = run(command, user=who, cwd=course, env=environment)
    results = {}
    for path in out.glob("*/results.json"):
        results[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return done, results


def assert_corpus(results, mode):
    """Every attack scores as the corpus says, each result confined by ``mode``."""
    wrong = {}
    for attack in ATTACKS:
        result = results.get(attack.name)
        assert result is not None, f"no result for {attack.name}"
        extra = result["extra_data"]
        if attack.unreadable:
            assert extra["status"] == "unreadable" and result["score"] == 0, attack.name
            continue
        if extra["parts"] != expected_parts(attack):
            wrong[attack.name] = extra["parts"]
        if extra.get("confinement") is not None:  # no child starts for some notebooks
            assert extra["confinement"] == mode, (attack.name, extra["isolation"])
            assert any("Landlock (ABI" in layer for layer in extra["isolation"])
    assert not wrong, wrong


# (who grades, under which wrapper, the mode expected, a layer that says so or None)
PLAYED = {
    "an instructor's own account": (USER, (), "userns",
                                    "user namespace: the grader's own uid, no capabilities"),
    "root in a container without namespaces": (
        None, WRAPPER, "uid", "unprivileged uid and gid of its own, no supplementary groups"),
    "an account without user namespaces": (USER, WRAPPER, "landlock", None),
}


@pytest.mark.parametrize("where", PLAYED)
def test_each_mode_scores_the_whole_corpus_as_described(instructor, where):
    who, wrapper, mode, layer = PLAYED[where]
    # Root grades the instructor's course here, which that account can read: in a real
    # container the course is root's own. The privacy check is tested in test_privacy.py.
    extra = ["--allow-shared"] if who is None else []
    done, results = grade_corpus(who, instructor["python"], instructor["course"],
                                 wrapper=wrapper, extra=extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_corpus(results, mode)
    layers = results["look-around-then-answer-honestly"]["extra_data"]["isolation"]
    if layer is not None:
        assert layer in layers
    else:
        assert not any("namespace" in line for line in layers), layers


def test_with_no_layer_at_all_grading_refuses_and_the_override_flags_every_result(instructor):
    wrapper = ["tests/sandbox/without_namespaces.py", "--no-landlock", "--"]
    done, results = grade_corpus(USER, instructor["python"], instructor["course"],
                                 wrapper=wrapper)
    assert done.returncode == 2 and not results
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--allow-unconfined" in lines[0], done.stderr
    assert "userns: " in lines[0] and "landlock: " in lines[0]  # what is missing, named
    done, results = grade_corpus(USER, instructor["python"], instructor["course"],
                                 wrapper=wrapper, extra=["--allow-unconfined"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("WARNING") == 1
    readable = [r for r in results.values() if r["extra_data"]["status"] != "unreadable"]
    assert readable and all("unconfined" in r["extra_data"]["status"] for r in readable)
    # Unconfined, the cheats do read the course: this is what the refusal prevents.
    assert results["find-course-via-known-paths"]["extra_data"]["parts"]["attention"] > 0


def nbgrader_env(instructor):
    return {"PATH": f"{Path(instructor['python']).parent}:/usr/bin:/bin", "HOME": str(HOME),
            "LANG": "C.UTF-8", **LIMITS}


@pytest.fixture(scope="module")
def nbgrader_course(instructor):
    """The instructor's course with the corpus submitted and in the gradebook."""
    course, env = instructor["course"], nbgrader_env(instructor)
    nbgrader = [instructor["python"], "-m", nbgrader_command.__name__]  # as conftest.NBGRADER
    for attack in ATTACKS:
        path = course / "submitted" / attack.name / "mha" / "mha.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(attack.make())
    # One import for the whole class: `nbgrader db student add` takes about 2 s a student on
    # an idle machine, and this fixture took over four minutes in the parallel run.
    (course / "students.csv").write_text("id\n" + "".join(f"{attack.name}\n" for attack in ATTACKS),
                                         encoding="utf-8")
    run(["chown", "-R", f"{USER}:{USER}", str(course)])
    for command in (["db", "assignment", "add", "mha"], ["generate_assignment", "mha", "--force"],
                    ["db", "student", "import", "students.csv"]):
        done = run(nbgrader + command, user=USER, cwd=course, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    return {"course": course, "env": env, "nbgrader": nbgrader}


def test_nbgrader_autograde_on_an_instructors_account_is_confined(nbgrader_course):
    course, env, nbgrader = (nbgrader_course[key] for key in ("course", "env", "nbgrader"))
    done = run(nbgrader + ["autograde", "mha", "--force", "--IsolatedAutograde.seed=7"],
               user=USER, cwd=course, env=env)
    exported = run(nbgrader + ["export", "--to", "grades.csv"], user=USER, cwd=course, env=env)
    assert exported.returncode == 0, exported.stderr[-3000:]
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha"}
    expected = {a.name: sum(expected_parts(a).values()) for a in ATTACKS}
    assert scores == expected, done.stderr[-3000:]
    assert "user namespace" in done.stderr  # the log names the layers in force


def test_nbgrader_autograde_refuses_in_one_line_where_nothing_confines(nbgrader_course, instructor):
    python = instructor["python"]
    command = [python, WRAPPER[0], "--no-landlock", "--", python, "-m", nbgrader_command.__name__,
               "autograde", "mha", "--force"]
    done = run(command, user=USER, cwd=nbgrader_course["course"], env=nbgrader_course["env"])
    assert done.returncode != 0
    assert done.stderr.count("refusing to grade") == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
