"""The students' shared environment on the hub, made once per run for both hub tests."""

import os
import shutil
import subprocess

import pytest

from tests.hub.test_hub_course import (HUB_ENV, SYSTEM_PATH, install_line, installed_marker,
                                       run, unavailable)


@pytest.fixture(scope="session")
def hub_environment():
    """HUB_ENV, as the README's administrator's install line makes it (kept between runs,
    under a key made of that line). Session-wide and one of tests/worker_groups.py's
    ONCE_PER_RUN, so that the tests that use it run on one worker and never make it at
    the same time."""
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
    return HUB_ENV
