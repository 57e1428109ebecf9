"""mhakit/authoring/nbgrader_command.py: nbgrader's command line, minus two costs."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mhakit.authoring.build import tool_environment
from mhakit.authoring.nbgrader_command import alembic_head, command

# Each test runs nbgrader as instructors do, or alembic's own command: what the quick
# subset leaves out (29 s of its test time).
pytestmark = pytest.mark.slow


def test_the_head_read_here_is_what_alembic_heads_prints():
    """nbgrader stores `alembic heads`'s first word in a new gradebook."""
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        printed = subprocess.run(["alembic", "-c", ini, "heads"], capture_output=True,
                                 text=True, timeout=300, env=tool_environment(), check=True)
    assert printed.stdout.split()[0] == alembic_head()


def test_a_new_gradebook_gets_that_head_without_a_process_of_alembic(tmp_path):
    """An `alembic` that only fails comes first on the PATH: plain nbgrader fails to make
    the gradebook, this one makes it, with the head revision nbgrader would have written."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake = bin_folder / "alembic"
    fake.write_text("#!/bin/sh\necho 'not this alembic' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = dict(tool_environment())
    env["PATH"] = os.pathsep.join([str(bin_folder), env["PATH"]])
    results = {}
    for name, prefix in (("plain", [sys.executable, "-m", "nbgrader"]), ("kit", command())):
        folder = tmp_path / name
        folder.mkdir()
        results[name] = subprocess.run([*prefix, "db", "student", "add", "ann"], cwd=folder,
                                       env=env, capture_output=True, text=True, timeout=300)
    assert results["plain"].returncode != 0 and "not this alembic" in results["plain"].stderr
    assert results["kit"].returncode == 0, results["kit"].stderr
    with sqlite3.connect(tmp_path / "kit" / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (alembic_head(),)]
        assert db.execute("SELECT id FROM student").fetchall() == [("ann",)]


def test_it_runs_nbgrader_with_the_arguments_given():
    plain = subprocess.run([sys.executable, "-m", "nbgrader", "--version"], capture_output=True,
                           text=True, timeout=300, env=tool_environment())
    kit = subprocess.run(command("--version"), capture_output=True, text=True, timeout=300,
                         env=tool_environment(), cwd=Path(__file__).parent)
    assert kit.returncode == plain.returncode == 0
    assert kit.stdout == plain.stdout and kit.stdout.strip()
