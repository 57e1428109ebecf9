"""check("<part>") in the released notebook, with nbgrader's real Validate and a real Run
All: a failing part writes one line on stderr instead of raising, so Validate still scores
its cell 0 (a passing one full), and Run All runs to the end of the notebook."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.mha_exercise import EXERCISE, fill, reference_body
from tests.conftest import NBGRADER

pytestmark = pytest.mark.slow
WRONG_DOT = "def dot_product(u, v):\n    return np.sum(u * v, axis=0)\n"


def nbgrader(folder, *args):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run([*NBGRADER, *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


def one_right_one_wrong(course, tmp_path, release):
    """The release with softmax right, dot_product wrong and the rest untouched."""
    folder = tmp_path / release
    shutil.copytree(course / "assignments" / release, folder)
    path = folder / "mha.ipynb"
    notebook = fill(nbformat.read(str(path), as_version=4),
                    {"answer_softmax": reference_body("softmax"), "answer_dot_product": WRONG_DOT})
    nbformat.write(notebook, str(path))
    return folder, path


def failed_parts(validate_stdout):
    """The parts whose test cells nbgrader's validate lists, as their check("<part>")."""
    return [line.split('"')[1] for line in validate_stdout.splitlines()
            if line.strip().startswith('check("')]


@pytest.mark.parametrize("release", ["mha_en", "mha"])
def test_validate_fails_the_failing_part_and_passes_the_passing_one(course, tmp_path, release):
    folder, path = one_right_one_wrong(course, tmp_path, release)
    done = nbgrader(folder, "validate", str(path))
    unfinished = [p for p in EXERCISE.parts if p not in ("softmax", "dot_product")]
    assert "VALIDATION FAILED" in done.stdout, done.stdout + done.stderr
    assert sorted(failed_parts(done.stdout)) == sorted(["dot_product", *unfinished])
    assert "Traceback" not in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.endswith("...")]  # not cut
    # What Validate shows for the failing cell is the one line, which names the button.
    button = "Validate 按钮" if release == "mha" else "The Validate button"
    assert done.stdout.count(button) == len(unfinished) + 1
    passing = nbgrader(folder, "validate", "--invert", str(path))
    assert failed_parts(passing.stdout) == ["softmax"], passing.stdout


def test_run_all_reaches_the_end_past_a_failing_check(course, tmp_path):
    """Run All stops at a cell that raises; check("<part>") does not raise."""
    from nbclient import NotebookClient

    folder, path = one_right_one_wrong(course, tmp_path, "mha_en")
    notebook = nbformat.read(str(path), as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(folder)}}).execute()
    cells = {c.metadata.get("nbgrader", {}).get("grade_id", c.get("id")): c
             for c in notebook.cells if c.cell_type == "code"}
    assert not [c for c in notebook.cells if any(o.output_type == "error"
                                                 for o in c.get("outputs", []))]
    dot = cells["test_dot_product"].outputs
    assert [o.name for o in dot if o.output_type == "stream"] == ["stdout", "stderr"]
    assert "failed" in dot[0].text and dot[1].text.splitlines() == [
        "dot_product failed (this cell's table says why).",
        "The Validate button scores this cell 0."]
    final = "".join(o.get("text", "") for o in cells["selfcheck_all"].outputs)
    assert "1 of 9 parts pass." in final
