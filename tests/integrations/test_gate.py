"""mhakit/integrations/gate.py on every door: `nbgrader autograde` on the command
line, formgrader's Autograde button in a real Jupyter server (pressed through formgrader's
own API), and `mhakit grade --gradebook`. A refusal is said once, fails the command (or
the button's reply), and leaves every earlier grade and autograded folder exactly as it
was, `--force` or not. Refused here: grading where nothing confines (MHAKIT_SANDBOX=plain
without allow_unconfined)."""

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..jupyter_server import free_port, post_json, stop, wait_until_up
from .test_nbgrader_plugin import nbgrader
from tests.conftest import NBGRADER

STUDENTS = ("alice_correct", "carol_unimplemented")
PLAIN = {"MHAKIT_SANDBOX": "plain"}  # nothing confines: the gate must refuse


def environment(**extra):
    env = dict(os.environ, **extra)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("MHAKIT_ALLOW_UNCONFINED", None)
    return env


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """A course whose two students were autograded once, confined, by nbgrader."""
    root = tmp_path_factory.mktemp("gate") / "course"
    for name in ("source", "assignments"):
        shutil.copytree(course / name, root / name)
    for student in STUDENTS:
        shutil.copytree(course / "submitted" / student / "mha",
                        root / "submitted" / student / "mha")
    for name in ("gradebook.db", "nbgrader_config.py"):
        shutil.copy(course / name, root / name)
    nbgrader(root, "autograde", "mha", "--IsolatedAutograde.seed=3")
    return root


@pytest.fixture
def graded_copy(graded, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(graded, root, symlinks=True)
    return root


def state(root):
    """What a refusal must leave alone: every autograded file (bytes and mode), the
    gradebook's bytes, and the scores it holds."""
    from nbgrader.api import Gradebook

    files = {str(path.relative_to(root)): (hashlib.sha256(path.read_bytes()).hexdigest(),
                                           path.stat().st_mode)
             for path in sorted((root / "autograded").rglob("*")) if path.is_file()}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        scores = {student: gradebook.find_submission("mha", student).score
                  for student in STUDENTS}
    database = hashlib.sha256((root / "gradebook.db").read_bytes()).hexdigest()
    return files, scores, database


def test_the_graded_course_has_grades_to_lose(graded):
    files, scores, _ = state(graded)
    assert scores == {"alice_correct": 100, "carol_unimplemented": 0}
    assert sum(name.endswith("mha.ipynb") for name in files) == 2


@pytest.mark.slow
@pytest.mark.parametrize("force", [["--force"], []])
def test_a_refusal_on_the_command_line_exits_non_zero_and_keeps_every_grade(graded_copy,
                                                                          force):
    before = state(graded_copy)
    if not force:  # without --force, nbgrader regrades what was submitted after it
        for notebook in (graded_copy / "submitted").rglob("*.ipynb"):
            notebook.touch()
    done = subprocess.run([*NBGRADER, "autograde", "mha", *force],
                          cwd=graded_copy, env=environment(**PLAIN), capture_output=True,
                          text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert output.count("refusing to grade") == 1 and "Traceback" not in output, output
    assert state(graded_copy) == before


@pytest.mark.slow
def test_mhakit_grade_into_the_gradebook_refuses_before_touching_it(graded_copy, tmp_path):
    before = state(graded_copy)
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(graded_copy / "submitted"), "--gradebook", str(graded_copy),
                           "--out", str(tmp_path / "out"), "--quiet", "--fresh"],
                          env=environment(**PLAIN), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2 and done.stderr.count("refusing to grade") == 1, done.stderr
    assert state(graded_copy) == before


class Server:
    """`jupyter server` in the course folder, as an instructor starts formgrader."""

    def __init__(self, root, home, env):
        self.root, self.token, port = root, secrets.token_hex(24), free_port()
        self.base = f"http://127.0.0.1:{port}"
        home.mkdir(parents=True, exist_ok=True)
        self.log = home / "server.log"
        env = dict(env, JUPYTER_CONFIG_DIR=str(home / "config"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"))
        command = [sys.executable, "-m", "jupyter", "server", "--no-browser",
                   "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                   "--allow-root"]  # CI runs as root; harmless otherwise
        with open(self.log, "w", encoding="utf-8") as output:
            self.process = subprocess.Popen(command, cwd=root, env=env, stdout=output,
                                            stderr=subprocess.STDOUT)
        try:
            wait_until_up(self.process, f"{self.base}/api/status?token={self.token}", self.log)
        except BaseException:
            stop(self.process)
            raise

    def press_autograde(self, assignment, student):
        """What formgrader's Autograde button sends (formgrader always sets --force)."""
        return post_json(f"{self.base}/formgrader/api/submission/{assignment}/{student}"
                         "/autograde", self.token)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        stop(self.process)


@pytest.mark.slow
def test_formgraders_autograde_button_passes_the_same_gate(graded_copy, tmp_path):
    alice = graded_copy / "submitted" / "alice_correct"
    shutil.copytree(alice / "mha", alice / "mha_fr")  # an assignment the gradebook lacks
    before = state(graded_copy)
    with Server(graded_copy, tmp_path / "refusing", environment(**PLAIN)) as server:
        unknown = server.press_autograde("mha_fr", "alice_correct")
        reply = server.press_autograde("mha", "alice_correct")
    assert unknown["success"] is False, unknown
    assert "mha-kit: the gradebook has no assignment mha_fr: run `mhakit build`" in (
        unknown.get("log", "")), unknown
    assert reply["success"] is False, reply
    said = reply.get("log", "") + reply.get("error", "")
    assert "mha-kit: no layer here can hide the course" in said, said
    assert "MultipleInstanceError" not in said and "Pre-convert hook failed" not in said
    assert state(graded_copy) == before, "a refused button press changed the grades"

    # Where the child is confined, the same button grades, and the gradebook says so.
    (graded_copy / "submitted" / "alice_correct" / "mha" / "mha.ipynb").write_bytes(
        (graded_copy / "submitted" / "carol_unimplemented" / "mha" / "mha.ipynb")
        .read_bytes())
    with Server(graded_copy, tmp_path / "grading", environment()) as server:
        reply = server.press_autograde("mha", "alice_correct")
    assert reply["success"] is True, reply
    assert "mha-kit graded alice_correct" in reply.get("log", ""), reply
    files, scores, _ = state(graded_copy)
    assert scores == {"alice_correct": 0, "carol_unimplemented": 0}


@pytest.mark.slow
def test_without_the_kits_reader_nothing_is_graded(graded_copy):
    """A config that keeps the grading step but not the reader that gates it: each
    submission fails, and no grade in the gradebook changes."""
    config = graded_copy / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8")
    reader = ('c.Autograde.exporter_class = '
              '"mhakit.integrations.nbgrader_plugin.BoundedNotebookReader"\n')
    assert reader in text
    config.write_text(text.replace(reader, ""), encoding="utf-8")
    _, scores, _ = state(graded_copy)
    done = subprocess.run([*NBGRADER, "autograde", "mha", "--force"],
                          cwd=graded_copy, env=environment(), capture_output=True, text=True,
                          timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "the kit's gate did not run" in output, output
    assert state(graded_copy)[1] == scores


# ------------------------------------------------ the course's privacy

PERSON = "mhakit-gate-person"


@pytest.fixture
def person():
    """Another person's account on this machine, for the length of one test."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, which this test needs (useradd)")
        pytest.skip("played by root (useradd)")
    subprocess.run(["userdel", PERSON], capture_output=True)
    done = subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", PERSON],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    try:
        yield PERSON
    finally:
        subprocess.run(["userdel", PERSON], capture_output=True)


@pytest.fixture
def open_course(graded):
    """The graded course where every account can read it, as `git clone` and the usual
    umask leave a course (pytest's own folders are root's only)."""
    top = Path(tempfile.mkdtemp(prefix="mhakit-gate-"))
    top.chmod(0o755)
    root = top / "course"
    shutil.copytree(graded, root, symlinks=True)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield root
    shutil.rmtree(top)


@pytest.mark.slow
def test_a_course_others_can_read_is_refused_until_the_named_chmod_is_run(open_course,
                                                                         person):
    before = state(open_course)
    command = [*NBGRADER, "autograde", "mha", "--force"]
    done = subprocess.run(command, cwd=open_course, env=environment(), capture_output=True,
                          text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    [line] = [line for line in output.splitlines() if "other accounts can read" in line]
    assert "refusing to grade" in line and person in line and "gradebook.db" in line, line
    assert state(open_course) == before
    fix = re.search(r"run `(chmod -R go-rwx [^`]+)`", line).group(1)
    subprocess.run(fix, shell=True, check=True)
    done = subprocess.run(command, cwd=open_course, env=environment(), capture_output=True,
                          text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "other accounts can read" not in output, output
    assert "mha-kit graded alice_correct" in output


@pytest.mark.slow
def test_allow_shared_grades_an_open_course_and_says_what_others_can_read(open_course,
                                                                        person, tmp_path):
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(open_course / "submitted"), "--gradebook", str(open_course),
                           "--out", str(tmp_path / "out"), "--quiet", "--fresh", "--seed",
                           "3"], env=environment(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2 and "refusing to grade" in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(open_course / "submitted"), "--gradebook", str(open_course),
                           "--out", str(tmp_path / "out"), "--quiet", "--fresh", "--seed",
                           "3", "--allow-shared"], env=environment(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if "other accounts can read" in line]
    assert warning.startswith("mha-kit: WARNING:") and "refusing" not in warning
    assert state(open_course)[1] == {"alice_correct": 100, "carol_unimplemented": 0}


# ------------------------------------------------ what the kit's collect recorded

@pytest.mark.slow
def test_what_collect_refused_flags_the_grade_through_both_doors(graded_copy, tmp_path):
    from mhakit.grader.tampering import COLLECT_RECORD

    from .test_nbgrader_plugin import flags

    folder = graded_copy / "submitted" / "alice_correct" / "mha"
    (folder / COLLECT_RECORD).write_text(json.dumps(
        {"refused": ["mha.ipynb: a symbolic link"], "flagged": []}), encoding="utf-8")
    nbgrader(graded_copy, "autograde", "mha", "--force", "--IsolatedAutograde.seed=3")
    flagged, comments = flags(graded_copy / "gradebook.db", "alice_correct")
    assert flagged and "collect refused mha.ipynb: a symbolic link" in comments, comments
    assert flags(graded_copy / "gradebook.db", "carol_unimplemented")[0] == []
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(graded_copy / "submitted"), "--out", str(tmp_path / "out"),
                           "--quiet", "--json", "--seed", "3"], env=environment(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert "collect refused mha.ipynb: a symbolic link" in (
        results["alice_correct"]["extra_data"]["tampering"])
    assert not results["carol_unimplemented"]["extra_data"]["tampering"]
