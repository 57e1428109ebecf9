"""A real JupyterLab server and Debian's Chromium, shared by the browser tests.

The server runs from this virtual environment on 127.0.0.1 with a random token. Its root
is a temporary nbgrader course folder (the repository's config and source), so that
formgrader finds the course, and the students' copies of the releases live inside it.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO
from ..jupyter_server import free_port, stop, wait_until_up

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# Without the background-networking flags Chromium floods the closed network with
# connections; the sandbox cannot start as root.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
# Page states can take long on a shared 2-core machine: wait generously, never sleep.
TIMEOUT_MS = 120_000


def chromium_version():
    path = shutil.which("chromium")
    if path is None:
        return None
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or done.stderr.strip()


USED = {}  # what the browser tests ran with, for the report


def pytest_terminal_summary(terminalreporter):
    # Debian's Chromium follows security updates and cannot be pinned: record which ran.
    # (A report header would not show from here: pytest reads headers before it
    # collects this folder's conftest.)
    if "chromium" in USED:
        terminalreporter.write_line(f"browser tests used: {USED['chromium']}")


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="session")
def course_root(tmp_path_factory):
    """The server's root: an nbgrader course folder with the repository's source."""
    root = tmp_path_factory.mktemp("lab") / "course"
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(REPO / "source", root / "source")
    return root


@pytest.fixture(scope="session")
def exchange(tmp_path_factory):
    # nbgrader's Assignment List (and the exchange commands) need Exchange.root to exist.
    return tmp_path_factory.mktemp("exchange")


def _jupyter_config(folder, exchange):
    """A private JUPYTER_CONFIG_DIR: no news pop-up, and the exchange folder for nbgrader."""
    settings = folder / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # --LabApp.news_url=None alone leaves the "official Jupyter news" question up.
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}), encoding="utf-8")
    # Every cell stays in the page (no virtual scrolling), so that the tests can read any
    # cell's output, as a student scrolling through would.
    notebook = folder / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}), encoding="utf-8")
    (folder / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n",
        encoding="utf-8")
    return folder


class Lab:
    def __init__(self, base, token, root):
        self.base, self.token, self.root = base, token, root

    def url(self, path):
        """A lab URL with the token and ?reset, so that no saved workspace reopens tabs."""
        return f"{self.base}{path}?reset&token={self.token}"


@pytest.fixture(scope="session")
def lab(chromium_path, course_root, exchange, tmp_path_factory):
    home = tmp_path_factory.mktemp("jupyter")
    port, token = free_port(), secrets.token_hex(24)
    env = dict(os.environ)
    env.update(JUPYTER_CONFIG_DIR=str(_jupyter_config(home / "config", exchange)),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    env.pop("JUPYTERLAB_SETTINGS_DIR", None)  # the settings above, under JUPYTER_CONFIG_DIR
    log = home / "server.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course_root}",
               # window.jupyterapp lets the tests run lab commands such as Run All.
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
               "--allow-root"]  # CI runs as root; harmless otherwise
    with open(log, "w", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=course_root, env=env, stdout=output,
                                   stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(process, f"{base}/api/status?token={token}", log)
        yield Lab(base, token, course_root)
    finally:
        stop(process)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log, ARTIFACTS / "jupyter-server.log")


def screenshot(page, name):
    """Save a PNG of the page's current state under tests/browser/artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
