"""Issue 23: the student's kernel is the oracle.

What runs correctly in the student's notebook, in a Jupyter kernel, earns its points when
graded, through both doors. Every honest notebook of the corpus (honest_notebooks.py) is

1. run for real in an IPython kernel, as nbgrader's own ``Execute`` runs it (nbclient and
   ipykernel, 30 s per cell), in a copy of the released folder; then, in that same
   kernel, the kit's own checks, public and hidden, run against the kernel's functions
   (kernel_oracle.py) and give the points of each function: the oracle;
2. graded by ``mhakit grade`` (one run over the whole class) and by ``nbgrader autograde``
   with the kit's config (one run per language), with the oracle's seed;
3. self-checked as the student would, ``python selfcheck.py mha.ipynb`` in the released
   folder, and by ``check()`` in the kernel.

Both doors must give every notebook the oracle's points, function by function, and the
self-check must be green exactly when the code earns full marks. The notebooks edited and
re-run out of order are also run in the order the student ran them, which must leave the
same points.

The grader's wall-clock limit is shortened here (MHAKIT_CALL_SECONDS) so that three
scratch cells that pause 1.5 s each take longer than it together, though each takes far
less than it, and far less than nbgrader's 30 s per cell.
"""

import concurrent.futures
import copy
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from tests.exercises.mha.honest_notebooks import (ASSIGNMENT, CASES, NOTEBOOKS,
                                                  SLEEP_SECONDS, notebook_of, session_sources)
from tests.mha_exercise import EXERCISE
from tests.conftest import NBGRADER

SEED = 23
CALL_SECONDS = 4.0      # the grader's limit in this test: under three slow cells together
KERNEL_SECONDS = 30     # nbgrader's Execute.timeout, per cell
KERNELS = 2             # kernels at a time (the machine has two cores)
ORACLE = Path(__file__).with_name("kernel_oracle.py")
MARKER = "MHAKIT-KERNEL-ORACLE "
PARTS = EXERCISE.parts
FUNCTIONS = EXERCISE.function_names
FULL = {part: EXERCISE.part_points(part) for part in PARTS}
CODE_POINTS = sum(FULL[name] for name in FUNCTIONS)
NAMES = sorted(NOTEBOOKS)
SESSIONS = sorted(name for name in NAMES if NOTEBOOKS[name].session)


# ------------------------------------------------------------------ the kernel

def oracle_cell():
    return nbformat.v4.new_code_cell(
        f"__import__('runpy').run_path({str(ORACLE)!r})['report'](get_ipython().user_ns, "
        f"{SEED})")


def run_in_kernel(notebook, folder):
    """(the notebook as the kernel left it, the oracle's findings): every code cell run
    by nbgrader's own Execute (a fresh kernel, errors allowed, 30 s per cell, interrupted
    on timeout), then the oracle in the same kernel."""
    from nbgrader.preprocessors import Execute

    executed = copy.deepcopy(notebook)
    executed.cells.append(oracle_cell())
    Execute(timeout=KERNEL_SECONDS).preprocess(executed, {"metadata": {"path": str(folder)}})
    probe = executed.cells.pop()
    text = "".join(output.get("text", "") for output in probe.outputs
                   if output.get("output_type") == "stream")
    lines = [line for line in text.splitlines() if line.startswith(MARKER)]
    if not lines:
        errors = [output.get("traceback") for output in probe.outputs]
        raise AssertionError(f"the oracle printed nothing in {folder}: {text[-2000:]} {errors}")
    return executed, json.loads(lines[-1][len(MARKER):])


def session_notebook(honest, notebook):
    """The cells as the student ran them, out of order and with drafts, as one notebook."""
    session = nbformat.v4.new_notebook(metadata=copy.deepcopy(notebook.metadata))
    session.cells = [nbformat.v4.new_code_cell(source)
                     for source in session_sources(honest, notebook)]
    return session


# ------------------------------------------------------------------ the two doors

def course_copy(course, target):
    target.mkdir()
    for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
        source = course / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target / name)
    return target


def grader_environment():
    env = dict(os.environ, MHAKIT_CALL_SECONDS=str(CALL_SECONDS))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def mhakit_grade(course, out):
    """{student: results.json} of one `mhakit grade` run over the whole class."""
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(course / "submitted"), "--out", str(out), "--seed", str(SEED),
                           "--quiet", "--json"], capture_output=True, text=True, timeout=900,
                          env=grader_environment())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout)


def nbgrader_autograde(course):
    """{student: ({part: points}, the gradebook's comments)} after one `nbgrader autograde`
    run per language."""
    from nbgrader.api import Gradebook

    for assignment in ASSIGNMENT.values():
        done = subprocess.run([*NBGRADER, "autograde", assignment,
                               "--force", f"--IsolatedAutograde.seed={SEED}"], cwd=course,
                              capture_output=True, text=True, timeout=900,
                              env=grader_environment())
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    points = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for assignment in ASSIGNMENT.values():
            for submission in gradebook.assignment_submissions(assignment):
                grades = {grade.name.removeprefix("test_"): grade.auto_score
                          for grade in submission.notebooks[0].grades
                          if grade.name.startswith("test_")}
                comments = sorted({comment.auto_comment for comment
                                   in submission.notebooks[0].comments if comment.auto_comment})
                points[submission.student_id] = ({part: float(grades.get(part) or 0.0)
                                                  for part in PARTS}, comments)
    return points


def self_check(folder):
    """(exit code, output) of `python selfcheck.py mha.ipynb`, run as the student would."""
    done = subprocess.run([sys.executable, "selfcheck.py", "mha.ipynb"], cwd=folder,
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


# ------------------------------------------------------------------ the whole class, once

@dataclass
class Graded:
    kernel: dict = field(default_factory=dict)      # name -> the oracle's findings
    session: dict = field(default_factory=dict)     # name -> the oracle, in session order
    mhakit: dict = field(default_factory=dict)      # name -> results.json
    nbgrader: dict = field(default_factory=dict)    # name -> ({part: points}, comments)
    selfcheck: dict = field(default_factory=dict)   # name -> (exit code, output)
    seconds: dict = field(default_factory=dict)     # stage -> seconds


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    root = tmp_path_factory.mktemp("kernel-oracle")
    target = course_copy(course, root / "course")
    releases = {assignment: nbformat.read(str(course / "assignments" / assignment / "mha.ipynb"),
                                          as_version=4) for assignment in ASSIGNMENT.values()}
    result, works, notebooks = Graded(), {}, {}
    for name in NAMES:
        honest = NOTEBOOKS[name]
        works[name] = root / "students" / name
        shutil.copytree(course / "assignments" / honest.assignment, works[name])
        notebooks[name] = notebook_of(honest, releases[honest.assignment])

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(KERNELS) as pool:
        runs = {name: pool.submit(run_in_kernel, notebooks[name], works[name]) for name in NAMES}
        sessions = {name: pool.submit(run_in_kernel, session_notebook(NOTEBOOKS[name],
                                                                      notebooks[name]),
                                      works[name]) for name in SESSIONS}
        for name, run in runs.items():
            executed, result.kernel[name] = run.result()
            # What the student saves and submits: the notebook as their kernel left it.
            nbformat.write(executed, str(works[name] / "mha.ipynb"))
            submitted = target / "submitted" / name / NOTEBOOKS[name].assignment
            submitted.mkdir(parents=True)
            shutil.copy(works[name] / "mha.ipynb", submitted / "mha.ipynb")
        result.session = {name: run.result()[1] for name, run in sessions.items()}
    result.seconds["kernels"] = time.monotonic() - started

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(KERNELS) as pool:
        checked = {name: pool.submit(self_check, works[name]) for name in NAMES}
        result.selfcheck = {name: future.result() for name, future in checked.items()}
    result.seconds["selfcheck.py"] = time.monotonic() - started

    started = time.monotonic()
    result.mhakit = mhakit_grade(target, root / "results")
    result.seconds["mhakit grade"] = time.monotonic() - started
    started = time.monotonic()
    result.nbgrader = nbgrader_autograde(target)
    result.seconds["nbgrader autograde"] = time.monotonic() - started
    print("kernel oracle timings:", {stage: round(s, 1) for stage, s in result.seconds.items()},
          file=sys.stderr)
    return result


def code_points(parts):
    return sum(parts[name] for name in FUNCTIONS)


def differences(door, kernel, name=None):
    """{part: (the door's points, the kernel's)} where they differ, but for the points
    the kernel gives beyond what the reference answers (Honest.beyond_the_reference),
    which the door must give less of."""
    beyond = NOTEBOOKS[name].beyond_the_reference if name else {}

    def differs(part):
        if door.get(part) is None:
            return True
        if part in beyond:
            return door[part] >= kernel[part] - 1e-9
        return abs(door[part] - kernel[part]) > 1e-9

    return {part: (door.get(part), kernel[part]) for part in PARTS if differs(part)}


def why(graded, name, parts, door_comments=()):
    """The parts that differ, (the door's points, the kernel's), and what the kernel and
    mhakit grade said about them."""
    result = graded.mhakit.get(name, {})
    lost = [f"{t['name']} [{t['score']:g}/{t['max_score']:g}]: {t['output'][:200]}"
            for t in result.get("tests", [])
            if t["score"] < t["max_score"] and t["name"].split(":")[0] in parts]
    extra = result.get("extra_data", {})
    return f"{name}: (door, kernel) {parts}\n" + json.dumps(
        {"kernel lost": {part: graded.kernel[name]["lost"].get(part) for part in parts},
         "mhakit grade lost": lost[:12], "load errors": extra.get("load_errors"),
         "status": extra.get("status"), "nbgrader's comments": list(door_comments)},
        ensure_ascii=False, indent=1)


# ------------------------------------------------------------------ the corpus itself

def test_the_corpus_is_what_the_issue_asks_for():
    assert len(NOTEBOOKS) >= 30
    assert {honest.language for honest in NOTEBOOKS.values()} == set(ASSIGNMENT)
    covered = {case for honest in NOTEBOOKS.values() for case in honest.covers}
    assert covered == set(CASES), set(CASES) - covered
    assert all(set(honest.wrong) <= set(FUNCTIONS) for honest in NOTEBOOKS.values())
    assert sum(not honest.wrong for honest in NOTEBOOKS.values()) > 2 * sum(
        bool(honest.wrong) for honest in NOTEBOOKS.values())  # most are fully correct
    assert all(honest.session for honest in NOTEBOOKS.values() if "out-of-order" in honest.covers)


def test_the_slow_cells_outlast_the_grader_limit_together_but_not_alone():
    slow = NOTEBOOKS["olga_slow_scratch"]
    assert len(slow.scratch) * SLEEP_SECONDS > CALL_SECONDS > 2 * SLEEP_SECONDS
    assert SLEEP_SECONDS < KERNEL_SECONDS / 10


# ------------------------------------------------------------------ the kernel, as the oracle

@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_in_the_kernel_only_the_wrong_functions_lose_points(graded, name):
    """The corpus is honest about itself: in the kernel, every function the student got
    right earns all its points (a composite too, whatever its pieces), and each one they
    got wrong loses some."""
    parts, wrong = graded.kernel[name]["parts"], NOTEBOOKS[name].wrong
    assert {f: parts[f] for f in FUNCTIONS if (parts[f] == FULL[f]) == (f in wrong)} == {}, (
        json.dumps(graded.kernel[name]["lost"], ensure_ascii=False, indent=1))


@pytest.mark.slow
@pytest.mark.parametrize("name", SESSIONS)
def test_run_out_of_order_the_notebook_leaves_the_same_points(graded, name):
    assert graded.session[name]["parts"] == graded.kernel[name]["parts"]


# ------------------------------------------------------------------ the doors against it

@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_mhakit_grade_gives_what_the_kernel_earns(graded, name):
    door = graded.mhakit[name]["extra_data"]["parts"]
    diff = differences(door, graded.kernel[name]["parts"], name)
    assert diff == {}, why(graded, name, diff)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_nbgrader_autograde_gives_what_the_kernel_earns(graded, name):
    door, comments = graded.nbgrader[name]
    diff = differences(door, graded.kernel[name]["parts"], name)
    assert diff == {}, why(graded, name, diff, comments)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_self_check_is_green_exactly_when_the_code_earns_full_marks(graded, name):
    full = code_points(graded.kernel[name]["parts"]) == CODE_POINTS
    assert graded.kernel[name]["green"] == full, graded.kernel[name]["rows"]
    exit_code, output = graded.selfcheck[name]
    assert (exit_code == 0) == full, output[-3000:]
