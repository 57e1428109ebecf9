"""mhakit/selfcheck/runner.py, the student's self-check: numpy alone, an empty folder,
honest exit codes, and check() in the kernel."""

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.mha_exercise import SECTIONS, reference_body

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "assignments" / "mha"
SOURCE = REPO / "source" / "mha"


def run_selfcheck(python, folder):
    return subprocess.run([str(python), "selfcheck.py", "mha.ipynb"], cwd=folder,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_untouched_release_reports_every_part_not_implemented(numpy_only_python, tmp_path):
    folder = tmp_path / "student"
    shutil.copytree(RELEASE, folder)
    done = run_selfcheck(numpy_only_python, folder)
    assert done.returncode != 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if "not yet implemented" in line]
    assert len(rows) == 9, done.stdout
    assert "0 of 9 parts pass" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_numpy_only_python_really_lacks_the_kit(numpy_only_python):
    done = subprocess.run([str(numpy_only_python), "-c", "import nbformat"], capture_output=True)
    assert done.returncode != 0
    done = subprocess.run([str(numpy_only_python), "-c", "import mhakit"], capture_output=True,
                          cwd="/")
    assert done.returncode != 0


@pytest.mark.slow
def test_the_reference_passes_and_exits_zero(numpy_only_python, tmp_path):
    folder = tmp_path / "instructor"
    shutil.copytree(SOURCE, folder)
    done = run_selfcheck(numpy_only_python, folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 of 9 parts pass" in done.stdout
    # The quiz's key is not shipped: its row says it is answered, never that it passed.
    quiz_row = next(line for line in done.stdout.splitlines() if line.startswith("quiz"))
    assert "已作答 answered" in quiz_row and "评分时" in quiz_row and "passed" not in quiz_row


def release_with_softmax(folder, source):
    """A copy of the release whose saved notebook has ``source`` in softmax's answer cell."""
    shutil.copytree(RELEASE, folder)
    notebook = nbformat.read(str(folder / "mha.ipynb"), as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer_softmax":
            cell.source = source
    nbformat.write(notebook, str(folder / "mha.ipynb"))
    return folder


def test_one_finished_function_passes_while_the_rest_fail(tmp_path):
    folder = release_with_softmax(tmp_path / "s", reference_body("softmax"))
    done = run_selfcheck(sys.executable, folder)
    assert done.returncode == 1
    softmax_row = next(line for line in done.stdout.splitlines() if line.startswith("softmax"))
    assert "passed" in softmax_row
    assert "1 of 9 parts pass" in done.stdout


def test_a_wrong_function_names_the_failing_check(tmp_path):
    wrong = "def softmax(x, axis=-1):\n    return np.exp(x) / np.exp(x).sum()\n"
    done = run_selfcheck(sys.executable, release_with_softmax(tmp_path / "s", wrong))
    softmax_row = next(line for line in done.stdout.splitlines() if line.startswith("softmax"))
    assert "failed" in softmax_row and "检查「" in softmax_row  # the check that failed
    # The table keeps the notebook's order: a failure does not move its row up.
    body = [line.split()[0] for line in done.stdout.splitlines()[2:] if line.strip()]
    assert body[:9] == list(SECTIONS)


def test_bad_arguments_and_unreadable_files_exit_2(tmp_path):
    shutil.copytree(RELEASE, tmp_path / "s")
    (tmp_path / "s" / "broken.ipynb").write_text("{not json", encoding="utf-8")
    for args in ([], ["missing.ipynb"], ["broken.ipynb"]):
        done = subprocess.run([sys.executable, "selfcheck.py", *args], cwd=tmp_path / "s",
                              capture_output=True, text=True)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_in_the_kernel_an_unsaved_edit_counts(tmp_path):
    """Run the release in a real kernel with one answer typed in but never saved."""
    from nbclient import NotebookClient

    shutil.copytree(RELEASE, tmp_path / "s")
    notebook = nbformat.read(str(tmp_path / "s" / "mha.ipynb"), as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer_dot_product":
            cell.source = reference_body("dot_product")
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path / "s")}})
    client.execute()
    outputs = {c.metadata.get("nbgrader", {}).get("grade_id", c.get("id")): c.outputs
               for c in notebook.cells if c.cell_type == "code"}

    def text(cell_id):
        return "".join(o.get("text", "") + o.get("evalue", "") for o in outputs[cell_id])

    assert "passed" in text("test_dot_product")
    assert not any(o.output_type == "error" for o in outputs["test_dot_product"])
    # Not implemented yet: a score of 0 for nbgrader's Validate (a line on stderr), but no
    # traceback and no stray Out[] value.
    assert not any(o.output_type in ("error", "execute_result") for o in outputs["test_softmax"])
    assert any(o.output_type == "stream" and o.name == "stderr" and "softmax" in o.text
               for o in outputs["test_softmax"])
    from nbgrader.utils import determine_grade

    softmax_test = next(c for c in notebook.cells
                        if c.metadata.get("nbgrader", {}).get("grade_id") == "test_softmax")
    assert determine_grade(softmax_test)[0] == 0
    assert "not yet implemented" in text("test_softmax")
    final = text("selfcheck_all")
    assert "1 of 9 parts pass" in final


def test_a_failing_row_names_the_check_as_a_check_and_the_function_once(tmp_path):
    """The check's name once stood before "—" like a finding, and check() repeated the
    function's name: "dot_product: dot_product: ..."."""
    shutil.copytree(RELEASE, tmp_path / "s")
    script = ("import numpy as np\n"
              "from mhakit_student.runner import check\n"
              "def dot_product(u, v):\n"
              "    return np.sum(u * v, axis=0)\n"
              "check('dot_product')\n"
              "print('NOT RAISED')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path / "s",
                          capture_output=True, text=True, timeout=120)
    row = next(line for line in done.stdout.splitlines() if line.startswith("dot_product"))
    # A dash comes only before the likely mistake, never after the check's name.
    assert "检查「" in row and "」没有通过：" in row and "」 — " not in row
    assert row.count(" — ") == row.count(" — 可能的错误：")
    # The failure is said once, in the table; check() does not raise it again, and its
    # one line for the Validate button (on stderr) points to the table.
    assert "NOT RAISED" in done.stdout and done.stdout.count("」没有通过：") == 1, done.stdout
    assert done.stderr.strip().splitlines() == [
        "dot_product 没有通过（原因见这一格输出的表）。", "Validate 按钮把这一格记为 0 分。"]
