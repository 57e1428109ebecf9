"""mhakit/integrations/doctor.py: each problem it exists to find, on a course made to
have it, and a course set up as the README says, on which it finds nothing.

The course is a copy of the session's built course; the instructor's config and the
shared one (what students read) are folders given to jupyter_core through its
environment variables, and the exchange is a folder of its own under /tmp. The kit's own
answer files, which this checkout leaves readable, are left out of the privacy check
here: tests/integrations/test_privacy.py covers them."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mhakit.integrations import doctor, privacy
from tests.mha_exercise import EXERCISE

OTHERS = ["a_student"]  # the accounts other than the instructor's that people log in with


@pytest.fixture
def setup(course, tmp_path, monkeypatch):
    """A private course, a shared exchange 0777 with the course released to it, and the
    same c.Exchange.root in the instructor's config and in the shared one."""
    # Under a folder that every account can enter, so that the course's own mode decides.
    reachable = Path(tempfile.mkdtemp(dir="/tmp", prefix="mhakit-doctor-course-"))
    os.chmod(reachable, 0o755)
    root = reachable / "course"
    for name in ("source", "assignments"):
        shutil.copytree(course / name, root / name)
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy2(course / name, root / name)
    os.chmod(root, 0o700)
    exchange = Path(tempfile.mkdtemp(dir="/tmp", prefix="mhakit-doctor-"))
    os.chmod(exchange, 0o777)
    outbound, inbound = exchange / "mha-kit" / "outbound", exchange / "mha-kit" / "inbound"
    outbound.mkdir(parents=True)
    inbound.mkdir()
    os.chmod(exchange / "mha-kit", 0o755)
    os.chmod(inbound, 0o2733)
    for assignment in EXERCISE.assignments:
        shutil.copytree(root / "assignments" / assignment, outbound / assignment)
    home, shared = tmp_path / "home", tmp_path / "shared-config"
    for folder in (home / ".jupyter", shared):
        folder.mkdir(parents=True)
        write_exchange_root(folder, exchange)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(home / ".jupyter"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(shared))
    monkeypatch.setattr(privacy, "answer_roots", lambda: [])
    monkeypatch.setattr(privacy, "other_humans", lambda: OTHERS)
    yield {"course": root, "exchange": exchange, "home": home, "shared": shared}
    shutil.rmtree(exchange, ignore_errors=True)
    shutil.rmtree(reachable)


def write_exchange_root(folder, exchange):
    (folder / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n", encoding="utf-8")


def broken(setup):
    """The findings that would break the course's run."""
    return [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
            if finding.breaks]


def only_broken(setup, topic):
    [finding] = broken(setup)
    assert finding.topic == topic and not finding.ok, finding
    return finding.line


def test_a_course_set_up_as_the_readme_says_has_nothing_to_fix(setup):
    lines = []
    assert doctor.run(setup["course"], EXERCISE, out=lines.append) == 0, lines
    assert lines[-1] == "nothing here would break a grading run"
    assert not [line for line in lines if line.startswith("FIX")], lines
    topics = {line.split(":")[0].split()[-1] for line in lines[:-1]}
    assert topics == {"config", "exchange", "students", "privacy", "confinement", "gradebook",
                      "release", "formgrader"}


def test_an_exchange_that_other_accounts_cannot_enter(setup):
    os.chmod(setup["exchange"], 0o700)
    line = only_broken(setup, "exchange")
    assert "cannot reach" in line and f"chmod o+x {setup['exchange']}" in line


def test_an_exchange_where_students_cannot_write(setup):
    os.chmod(setup["exchange"], 0o755)
    line = only_broken(setup, "exchange")
    assert "cannot fetch and submit" in line and f"chmod 777 {setup['exchange']}" in line


def test_an_inbound_folder_students_cannot_submit_to(setup):
    inbound = setup["exchange"] / "mha-kit" / "inbound"
    os.chmod(inbound, 0o700)
    assert f"chmod o+wx {inbound}" in only_broken(setup, "exchange")


def test_an_exchange_that_does_not_exist(setup):
    shutil.rmtree(setup["exchange"])
    line = only_broken(setup, "exchange")
    assert "does not exist" in line and f"mkdir -p {setup['exchange']}" in line


def test_students_whose_nbgrader_looks_elsewhere(setup):
    (setup["shared"] / "nbgrader_config.py").unlink()
    line = only_broken(setup, "students")
    assert doctor.DEFAULT_EXCHANGE in line
    assert f"c.Exchange.root = '{setup['exchange']}'" in line
    assert "/etc/jupyter/nbgrader_config.py" in line


def test_alone_on_a_laptop_the_students_exchange_is_only_a_note(setup):
    (setup["shared"] / "nbgrader_config.py").unlink()
    [students] = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=[])
                  if finding.topic == "students"]
    assert students.ok and students.note and not students.breaks
    assert "no other account here yet" in students.line


def test_a_world_readable_course(setup):
    os.chmod(setup["course"], 0o755)
    line = only_broken(setup, "privacy")
    assert str(setup["course"]) in line and f"chmod -R go-rwx {setup['course']}" in line


def test_a_missing_gradebook(setup):
    (setup["course"] / "gradebook.db").unlink()
    line = only_broken(setup, "gradebook")
    assert "there is no gradebook" in line and "mhakit build" in line
    assert not (setup["course"] / "gradebook.db").exists()  # the doctor only reads


def test_a_source_that_differs_from_the_exercise(setup):
    notebook = setup["course"] / "source" / "mha_en" / EXERCISE.notebook
    notebook.write_text(notebook.read_text(encoding="utf-8") + " ", encoding="utf-8")
    line = only_broken(setup, "release")
    assert line.startswith("mha_en: source/mha_en differs") and "`mhakit build`" in line


def test_a_release_older_than_its_source(setup):
    release = setup["course"] / "assignments" / "mha" / EXERCISE.notebook
    os.utime(release, (1, 1))
    line = only_broken(setup, "release")
    assert line == "mha: assignments/mha is older than its source: `mhakit build`"


def test_an_exchange_that_holds_an_older_release(setup):
    released = setup["exchange"] / "mha-kit" / "outbound" / "mha" / EXERCISE.notebook
    released.write_bytes(released.read_bytes().replace(b"{", b"{ ", 1))
    assert "nbgrader release_assignment mha --force" in only_broken(setup, "release")


def test_a_course_config_that_lost_the_kits_grader(setup):
    config = setup["course"] / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace('"mhakit.integrations.nbgrader_plugin.IsolatedAutograde",',
                                   '"nbgrader.preprocessors.Execute",'), encoding="utf-8")
    assert "student code in a kernel" in only_broken(setup, "config")


def test_a_config_written_before_the_rename_works_and_is_told_to_rename(setup):
    config = setup["course"] / "nbgrader_config.py"
    config.write_text(config.read_text(encoding="utf-8").replace('"mhakit.', '"autograder.'),
                      encoding="utf-8")
    [finding] = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
                 if finding.topic == "config"]
    assert not finding.ok and not finding.breaks, finding
    assert "the kit's doors are in force" in finding.line
    assert "c.Autograde.autograde_preprocessors, c.Autograde.exporter_class" in finding.line
    assert "write mhakit. where they say autograder." in finding.line


def test_a_config_that_does_not_load_is_one_line(setup):
    (setup["home"] / ".jupyter" / "nbgrader_config.py").write_text("c = get_config(\n")
    [finding] = doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
    assert finding.topic == "config" and finding.breaks and "does not load" in finding.line
    assert str(setup["home"] / ".jupyter" / "nbgrader_config.py") in finding.line


def test_formgrader_totals_are_said_where_the_course_has_both_languages(setup):
    [both] = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
              if finding.topic == "formgrader"]
    assert both.note and "out of 200" in both.line and "--language" in both.line
    shutil.rmtree(setup["course"] / "source" / "mha_en")
    [one] = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
             if finding.topic == "formgrader"]
    assert not one.note and "out of 100" in one.line


def test_nothing_to_confine_with_fails_the_command(setup):
    # A process of its own: the confinement mode is chosen once per process.
    env = dict(os.environ, MHAKIT_SANDBOX="plain")
    env.pop("MHAKIT_ALLOW_UNCONFINED", None)
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "doctor",
                           "--course", str(setup["course"])], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if " confinement: " in line]
    assert line.startswith("FIX") and "refusing to grade" in line
    assert "confinement" in done.stdout.splitlines()[-1]


def test_a_course_folder_that_does_not_exist_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "doctor",
                           "--course", str(tmp_path / "nowhere")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().endswith("is not a folder")


def test_an_exchange_in_the_instructors_home_is_a_fix_only_where_others_log_in(setup):
    exchange = setup["home"] / "nbgrader-exchange"  # the README's step 1, on a laptop
    exchange.mkdir()
    for folder in (setup["home"] / ".jupyter", setup["shared"]):
        write_exchange_root(folder, exchange)
    shared = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=OTHERS)
              if finding.topic == "students"]
    alone = [finding for finding in doctor.findings(setup["course"], EXERCISE, humans=[])
             if finding.topic == "students"]
    assert shared[0].breaks and "inside your own folders" in shared[0].line
    assert alone[0].note and not alone[0].breaks
