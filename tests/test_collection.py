"""Collecting the test suite starts no process: no test module probes the confinement
(or makes a cgroup) while pytest imports it. A probe starts a child and takes a fifth of a
second, and each of the parallel run's processes collects every module."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

NO_PROBE = '''
from autograder.sandbox import cgroups, confinement

def refuse(*args, **kwargs):
    raise RuntimeError("probed while the suite was being collected")

def pytest_configure(config):
    confinement._first_that_confines = refuse
    cgroups.create = refuse
'''


def test_collecting_the_suite_probes_nothing(tmp_path):
    (tmp_path / "refuse_probes.py").write_text(NO_PROBE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "refuse_probes", str(REPO / "tests")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "probed while" not in done.stdout + done.stderr
    assert " tests collected" in done.stdout
