"""mhakit/integrations/pytest_checks.py: every check as a pytest test of the notebook
MHAKIT_SUBMISSION names, run as its users run it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mhakit.grader.grading import ordered_checks

REPO = Path(__file__).resolve().parents[2]
CHECKS_FILE = REPO / "mhakit" / "integrations" / "pytest_checks.py"


def pytest_on(submission, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MHAKIT_SUBMISSION"}
    if submission is not None:
        env["MHAKIT_SUBMISSION"] = str(submission)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           str(CHECKS_FILE)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("submission, says", [
    ("no/such/mha.ipynb", "cannot be checked: No such file or directory"),
    ("notes.txt", "cannot be checked: the file is not valid JSON"),
    (None, "set MHAKIT_SUBMISSION to the notebook to check")])
def test_a_bad_submission_is_one_error_that_says_why(submission, says, tmp_path):
    (tmp_path / "notes.txt").write_text("not a notebook", encoding="utf-8")
    done = pytest_on(submission, tmp_path)
    assert done.returncode != 0
    lines = done.stdout.splitlines()
    # One error, not one per check (the summary line repeats its reason where CI is set).
    assert says in done.stdout and sum(line.startswith("ERROR") for line in lines) == 1, \
        done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "1 error" in lines[-1]


def test_a_good_submission_passes_every_check(course, tmp_path):
    notebook = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    done = pytest_on(notebook, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{len(ordered_checks())} passed" in done.stdout.splitlines()[-1]
