"""The house rules that a tool can check: the linter and the type checker, as
pyproject.toml configures them ([tool.ruff], [tool.mypy]), and one place for the version."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing_and_every_noqa_stops_something():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", str(REPO)],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "All checks passed" in done.stdout


def test_mypy_finds_nothing_in_the_grader_the_sandbox_and_the_doors():
    # Incremental, with mypy's own cache (.mypy_cache): a clean clone checks everything
    # (about 14 s of CPU), a run after that only what changed (under a second).
    done = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_the_version_is_written_once():
    """pyproject.toml reads it from mhakit/__init__.py; the installed kit reports it."""
    import importlib.metadata
    import tomllib

    import mhakit

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert importlib.metadata.version("mha-kit") == mhakit.__version__


def test_the_suite_runs_nbgrader_as_the_kits_builds_do():
    """A test runs nbgrader with conftest's NBGRADER (no costly format checks, no alembic process:
    about 15% of a full run's CPU), except the one that compares both ways. The README's
    test runs the README's own commands, and the hub's course runs formgrader."""
    import re

    plain = re.compile(r"""["']-m["'],\s*["']nbgrader["']""")
    allowed = {Path("tests/authoring/test_nbgrader_command.py")}
    found = [path.relative_to(REPO) for path in sorted((REPO / "tests").rglob("*.py"))
             if plain.search(path.read_text(encoding="utf-8"))]
    assert set(found) == allowed, found
