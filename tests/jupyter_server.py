"""A real Jupyter server for the tests that need one: the browser tests drive JupyterLab
in it, and the gate's tests press formgrader's buttons through its API."""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request

SERVER_START_SECONDS = 120


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url, seconds):
    try:
        with urllib.request.urlopen(url, timeout=seconds) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def wait_until_up(process, url, log):
    """Poll the API until the server answers; stop early if it died."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter exited with {process.returncode}:\n{log.read_text()}")
        if answers(url, seconds=5):
            return
        try:  # a pause between polls that ends at once if the server dies
            process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    raise RuntimeError(f"jupyter did not answer {url}:\n{log.read_text()}")


def stop(process, seconds=30):
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def post_json(url, token, seconds=600):
    """POST to a server API as a logged-in user (the token) and read the JSON reply."""
    request = urllib.request.Request(url, data=b"", method="POST",
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=seconds) as response:
        return json.loads(response.read())
