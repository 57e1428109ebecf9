"""The README's hub section, its administrator's install line alone: the students' shared
environment holds what they work with, and not the kit, whose package holds the answers.

It runs beside the other tests, not alone like the hub course (test_hub_course.py), which
touches the machine's /etc/jupyter: the install is most of that test's setup on a fresh
machine, and the course finds the environment made by this very line and keeps it.
"""

import os
import shutil
import subprocess

import pytest

from tests.hub.test_hub_course import (HUB_ENV, INSTALL, SYSTEM_PATH, installed_marker,
                                       readme_blocks, run, unavailable)

pytestmark = pytest.mark.slow


def install_line():
    lines = [line for line in readme_blocks()[0].splitlines() if line.startswith(INSTALL)]
    assert len(lines) == 1, "the administrator's block has one line that makes the environment"
    return lines[0]


def test_the_shared_environment_holds_what_students_use_and_not_the_kit():
    if os.geteuid() != 0:
        unavailable("the shared environment goes where root installs it, /opt")
    if subprocess.run(["/usr/bin/python3", "-c", "import venv, ensurepip"]).returncode:
        unavailable("Debian's python3-venv is missing (`apt-get install -y python3-venv`)")
    line = install_line()
    if not installed_marker(line).exists():
        shutil.rmtree(HUB_ENV, ignore_errors=True)
        run(["bash", "-euo", "pipefail", "-c", f"{line} && touch {installed_marker(line)}"],
            timeout=1200, env={"PATH": SYSTEM_PATH, "HOME": "/root", "LANG": "C.UTF-8",
                               "HUB_ENV": str(HUB_ENV)})
    python = str(HUB_ENV / "bin" / "python")
    run([python, "-c", "import jupyterhub, jupyterlab, nbgrader, numpy, matplotlib"])
    for package in ("mhakit", "autograder"):
        done = subprocess.run([python, "-I", "-c", f"import {package}"], capture_output=True,
                              text=True, cwd="/")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, package
