"""The README's hub section, its administrator's install line alone: the students' shared
environment holds what they work with, and not the kit, whose package holds the answers.
The environment is conftest.py's, which the hub course (test_hub_course.py) uses too.
"""

import subprocess

import pytest

from tests.hub.test_hub_course import run

pytestmark = pytest.mark.slow


def test_the_shared_environment_holds_what_students_use_and_not_the_kit(hub_environment):
    python = str(hub_environment / "bin" / "python")
    run([python, "-c", "import jupyterhub, jupyterlab, nbgrader, numpy, matplotlib"])
    for package in ("mhakit", "autograder"):
        done = subprocess.run([python, "-I", "-c", f"import {package}"], capture_output=True,
                              text=True, cwd="/")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, package
