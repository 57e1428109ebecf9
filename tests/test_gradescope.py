"""The Gradescope bundle, run in a folder laid out like Gradescope's /autograder."""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundle")
    done = subprocess.run([sys.executable, "-m", "autograder.cli", "gradescope", "--out",
                           str(folder / "autograder.zip")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder / "autograder.zip"


def test_the_zip_holds_what_gradescope_runs(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml", "solutions/mha.py",
            "autograder/grading.py", "autograder/public/checks.py"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    for script in ("setup.sh", "run_autograder"):
        with zipfile.ZipFile(bundle) as archive:
            text = archive.read(script).decode()
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


def run_autograder(bundle, tmp_path, notebook):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    if notebook is not None:
        shutil.copy(notebook, root / "submission" / "mha.ipynb")
    env = dict(os.environ, MHAKIT_AUTOGRADER_ROOT=str(root), MHAKIT_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("student,score", [("alice_correct", 100), ("carol_unimplemented", 0)])
def test_run_autograder_writes_valid_results(bundle, course, tmp_path, student, score):
    result = run_autograder(bundle, tmp_path, course / "submitted" / student / "mha" / "mha.ipynb")
    assert result["score"] == score
    assert result["tests"] and all(
        set(test) <= {"name", "score", "max_score", "output", "visibility", "tags"}
        and test["visibility"] in VISIBILITIES for test in result["tests"])
    hidden = [t for t in result["tests"] if t["visibility"] != "visible"]
    assert sum(t["max_score"] for t in hidden) == 100  # the points are on the hidden checks
    # Gradescope shows the names to the student: the sample class is the Chinese release.
    assert "softmax: 随机输入上与参考答案一致" in {t["name"] for t in result["tests"]}


def test_no_notebook_gives_zero_and_says_why(bundle, tmp_path):
    result = run_autograder(bundle, tmp_path, None)
    assert result["score"] == 0 and "mha.ipynb" in result["output"]
