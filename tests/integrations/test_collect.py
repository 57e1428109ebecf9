"""mhakit/integrations/collect.py: real `nbgrader collect` runs, from a real exchange.

Submissions are made with `nbgrader submit`; on the shared exchange, each is then given to
the account it names (CI's Python lives in root's home, where no other account can run
it), and the attacks are made by another real account (useradd, runuser) with nothing but
the shell's tools, as a student on a JupyterHub server would.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mhakit.grader.tampering import collect_findings
from mhakit.integrations.collect import RECORD
from tests.conftest import NBGRADER

pytestmark = pytest.mark.slow
ALICE, BOB, MALLORY = "mhkc-alice", "mhkc-bob", "mhkc-mallory"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
SOLUTION_MARK = b"### BEGIN SOLUTION"


def accounts():
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, which these tests need (useradd, runuser)")
        pytest.skip("played by root (useradd, runuser)")
    for user in (ALICE, BOB, MALLORY):
        try:
            pwd.getpwnam(user)
        except KeyError:
            done = subprocess.run(["useradd", "--no-create-home", user], capture_output=True,
                                  text=True)
            assert done.returncode == 0, done.stderr


class Course:
    """A copy of the built course, and an exchange beside it in a folder every account
    can reach (pytest's own folders are root's only)."""

    def __init__(self, course):
        self.top = Path(tempfile.mkdtemp(prefix="mhakit-collect-"))
        self.top.chmod(0o755)
        self.root = self.top / "course"
        self.root.mkdir()
        for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
            source = course / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, self.root / name)
        self.exchange = self.top / "exchange"
        self.exchange.mkdir()
        self.exchange.chmod(0o1777)
        self.env = dict(os.environ, JUPYTER_DATA_DIR=str(self.top / "jupyter-data"),
                        PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                              os.environ["PATH"]]))
        self.nbgrader("release_assignment", "mha", "--force")
        self.inbound = self.exchange / "mha-kit" / "inbound"

    def nbgrader(self, *args, cwd=None, ok=True):
        done = subprocess.run([*NBGRADER, *args,
                               f"--Exchange.root={self.exchange}"], cwd=cwd or self.root,
                              env=self.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 or not ok, done.stdout + done.stderr
        return done

    def submit(self, student, edit=None, account=None):
        """`nbgrader submit` of the fetched release (``edit``ed), as ``student``; the
        folder it made is then ``account``'s, as if that account had run it."""
        home = self.top / "home" / student
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        self.nbgrader("fetch_assignment", "mha", "--course=mha-kit", cwd=home)
        if edit:
            edit(home / "mha" / "mha.ipynb")
        before = set(os.listdir(self.inbound))
        self.nbgrader("submit", "mha", "--course=mha-kit", f"--student={student}", cwd=home)
        [made] = set(os.listdir(self.inbound)) - before
        if account:
            subprocess.run(["chown", "-R", f"{account}:{account}", str(self.inbound / made)],
                           check=True)
        return made

    def collect(self, *args):
        done = self.nbgrader("collect", "mha", *args)
        return done.stdout + done.stderr

    def submitted(self, student):
        return self.root / "submitted" / student / "mha"

    def remove(self):
        shutil.rmtree(self.top)


@pytest.fixture
def exchange(course):
    made = Course(course)
    yield made
    made.remove()


def as_account(user, script):
    """A shell script run by another account, with nothing but the shell's tools."""
    done = subprocess.run([RUNUSER, "-u", user, "--", "sh", "-ec", script], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def answered(text):
    def edit(path):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        notebook["metadata"]["mark"] = text  # what tells the copies apart
        path.write_text(json.dumps(notebook), encoding="utf-8")
    return edit


def mark_of(folder):
    return json.loads((folder / "mha.ipynb").read_text(encoding="utf-8"))["metadata"].get("mark")


def record_of(folder):
    return json.loads((folder / RECORD).read_text(encoding="utf-8"))


def test_a_laptop_course_collects_as_before(exchange):
    """One account submits for every student and collects: nothing refused or flagged,
    whoever owns the folders, and a second collect changes nothing without --update."""
    accounts()
    for student in ("alice", "bob"):
        exchange.submit(student, answered(student))
    log = exchange.collect()
    assert "refused" not in log and "Collecting submission: alice mha" in log, log
    for student in ("alice", "bob"):
        folder = exchange.submitted(student)
        assert mark_of(folder) == student
        assert sorted(os.listdir(folder)) == sorted(
            [RECORD, "mha.ipynb", "mhakit_student", "selfcheck.py", "timestamp.txt",
             "submission_secret.txt"])
        assert collect_findings(folder) == []
        assert (folder / "timestamp.txt").read_text() == next(
            (exchange.inbound / name / "timestamp.txt").read_text()
            for name in os.listdir(exchange.inbound) if name.startswith(student + "+"))
    assert "Submission already exists, use --update" in exchange.collect()


def test_honest_submissions_of_two_accounts_are_collected(exchange):
    accounts()
    for student in (ALICE, BOB):
        exchange.submit(student, answered(student), account=student)
    log = exchange.collect()
    assert "refused" not in log, log
    for student in (ALICE, BOB):
        assert mark_of(exchange.submitted(student)) == student
        assert collect_findings(exchange.submitted(student)) == []


def test_the_truly_latest_submission_wins(exchange):
    """A resubmission replaces the first with --update (formgrader's button always sets
    it). A folder a student names with a later time, and an older folder whose mtime they
    set to that time, lose to their next real submission: the exchange saw it last. (A
    folder the student changes is seen when they change it, like a resubmission; its
    lying name is flagged.)"""
    accounts()
    first = exchange.submit(ALICE, answered("first"), account=ALICE)
    exchange.collect()
    assert mark_of(exchange.submitted(ALICE)) == "first"
    time.sleep(1.1)
    exchange.submit(ALICE, answered("second"), account=ALICE)
    assert "Updating submission" in exchange.collect("--update")
    assert mark_of(exchange.submitted(ALICE)) == "second"
    assert "No newer submission" in exchange.collect("--update")
    later = f"{ALICE}+mha+2999-01-01 00:00:00.000000 UTC+z"
    as_account(ALICE, f"cd '{exchange.inbound}' && cp -r '{first}' '{later}' && "
                      f"touch -d 2999-01-01 '{first}'")
    exchange.collect("--update")
    assert mark_of(exchange.submitted(ALICE)) == "first"
    assert any("its name claims 2999-01-01" in f
               for f in collect_findings(exchange.submitted(ALICE)))
    time.sleep(1.1)
    exchange.submit(ALICE, answered("third"), account=ALICE)
    assert "Updating submission" in exchange.collect("--update")
    assert mark_of(exchange.submitted(ALICE)) == "third"


def test_a_folder_planted_under_another_students_name_is_refused(exchange):
    """Mallory makes alice+mha+<a later time>+x in inbound holding the blank release: it
    is refused and named, alice's own submission is collected, and her record says so."""
    accounts()
    exchange.submit(ALICE, answered("alice's own"), account=ALICE)
    exchange.submit(MALLORY, account=MALLORY)  # the shared exchange has several accounts
    planted = f"{ALICE}+mha+2999-01-01 00:00:00.000000 UTC+x"
    release = exchange.exchange / "mha-kit" / "outbound" / "mha"
    as_account(MALLORY, f"mkdir '{exchange.inbound / planted}' && "
                        f"cp -r '{release}'/. '{exchange.inbound / planted}'/")
    log = exchange.collect()
    assert f"refused {planted}: it is owned by {MALLORY}, not {ALICE}" in log, log
    folder = exchange.submitted(ALICE)
    assert mark_of(folder) == "alice's own"
    [finding] = collect_findings(folder)
    assert planted in finding and MALLORY in finding
    # With nbgrader's switch off (an exchange whose folders are not their students'), the
    # name is taken as it is, and its claim of the year 2999 is what gets flagged.
    shutil.rmtree(folder)
    log = exchange.collect("--ExchangeCollect.check_owner=False")
    assert "refused" not in log, log
    assert mark_of(exchange.submitted(ALICE)) is None  # the blank release, planted last
    assert any("its name claims 2999-01-01" in f
               for f in collect_findings(exchange.submitted(ALICE)))


@pytest.mark.parametrize("shared", [False, True], ids=["laptop", "shared"])
def test_a_notebook_linked_to_the_course_source_is_refused(exchange, shared):
    """The submitted mha.ipynb is a link to the instructor's source notebook: it is not
    copied, it is named, and nothing of the solutions reaches submitted/."""
    accounts()
    student = ALICE if shared else "alice"
    made = exchange.submit(student, account=ALICE if shared else None)
    if shared:
        exchange.submit(BOB, account=BOB)
    source = exchange.root / "source" / "mha" / "mha.ipynb"
    script = (f"cd '{exchange.inbound / made}' && rm mha.ipynb && ln -s '{source}' mha.ipynb"
              f" && mkdir -p deep/er && ln -s '{source.parent}' deep/er/course")
    if shared:
        as_account(ALICE, script)
    else:
        subprocess.run(["sh", "-ec", script], check=True)
    log = exchange.collect()
    assert "refused" in log and "mha.ipynb: a symbolic link" in log, log
    folder = exchange.submitted(student)
    assert not (folder / "mha.ipynb").exists()
    assert not (folder / "deep" / "er" / "course").exists()
    for path in folder.rglob("*"):
        assert path.is_symlink() is False and (
            not path.is_file() or SOLUTION_MARK not in path.read_bytes()), path
    findings = collect_findings(folder)
    assert "collect refused mha.ipynb: a symbolic link" in findings
    assert "collect refused deep/er/course: a symbolic link" in findings


def test_special_files_and_a_linked_submission_folder_are_refused(exchange):
    accounts()
    made = exchange.submit("alice")
    os.mkfifo(exchange.inbound / made / "pipe")
    target = exchange.root / "source" / "mha"
    os.symlink(target, exchange.inbound / "bob+mha+2024-01-01 00:00:00.000000 UTC+y")
    log = exchange.collect()
    assert "refused bob+mha+2024-01-01 00:00:00.000000 UTC+y: it is a symbolic link" in log
    assert not exchange.submitted("bob").exists()
    assert "collect refused pipe: neither a file nor a folder (a fifo, socket or device)" in \
        collect_findings(exchange.submitted("alice"))
