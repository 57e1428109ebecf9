"""mhakit/integrations/nbgrader_plugin.py, nbgrader's door: the real nbgrader commands,
in a real course folder, give the kit's grades; DetectTampering hands nbgrader the graded
cells and the release's flags; the confinement gate refuses or flags an unconfined grade."""

import copy
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mhakit.grader.tampering import expected_layout, find_tampering
from mhakit.integrations.nbgrader_plugin import CELLS_STASH, STASH, DetectTampering
from mhakit.selfcheck.notebook import graded_cells_of
from tests.attacks.corpus import ATTACKS
from tests.attacks.on_metadata import REDEFINING_SOFTMAX, _set_meta
from tests.grader.test_tampering import cells_with, filled
from tests.mha_exercise import EXERCISE, POINTS
from tests.conftest import NBGRADER


def nbgrader(course, *args):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run([*NBGRADER, *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def course(course, tmp_path_factory):
    """A copy of the session's course: this module's nbgrader commands write into it
    (autograded/, feedback/, the gradebook, English submissions beside the Chinese ones),
    and the other modules read the session's course in whatever order a parallel run
    gives them. The feedback test read English feedback after this module had run."""
    copy = tmp_path_factory.mktemp("plugin") / "course"
    shutil.copytree(course, copy)
    return copy


@pytest.fixture(scope="module")
def autograded(course):
    nbgrader(course, "autograde", "mha", "--force", "--IsolatedAutograde.seed=11")
    nbgrader(course, "export", "--to", "nbgrader_grades.csv")
    with open(course / "nbgrader_grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha"}


@pytest.mark.slow
def test_nbgrader_autograde_gives_the_reference_100_and_the_stubs_0(autograded):
    assert autograded["alice_correct"] == 100
    assert autograded["carol_unimplemented"] == 0
    # dave's faked softmax earns nothing, and costs nothing elsewhere; bob loses the points
    # of his two named mistakes and of one quiz question (his feedback says 85 / 100 too).
    assert autograded["dave_tries_to_cheat"] == 100 - sum(POINTS["softmax"])
    assert autograded["bob_partly_correct"] == 85
    assert set(autograded) == {"alice_correct", "bob_partly_correct", "carol_unimplemented",
                               "dave_tries_to_cheat"}


@pytest.mark.slow
def test_nbgrader_autograde_and_mhakit_grade_agree(course, autograded, tmp_path):
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(course / "submitted"), "--out", str(tmp_path), "--seed", "11",
                           "--quiet", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    mine = {student: r["score"] for student, r in json.loads(done.stdout).items()}
    assert mine == autograded


@pytest.mark.slow
def test_autograde_starts_no_kernel_and_explains_each_part(course, autograded):
    import nbformat

    path = course / "autograded" / "bob_partly_correct" / "mha" / "mha.ipynb"
    notebook = nbformat.read(str(path), as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in notebook.cells}
    # Answer cells keep no outputs: they were never executed.
    assert all(not cells[f"answer_{n}"].outputs for n in ("softmax", "split_heads"))
    split = cells["test_split_heads"].outputs
    assert split[0].output_type == "error" and "split_heads:" in "\n".join(split[0].traceback)
    softmax = cells["test_softmax"].outputs
    assert [o.output_type for o in softmax] == ["stream", "execute_result"]  # partial credit


@pytest.mark.slow
def test_feedback_is_generated(course, autograded):
    nbgrader(course, "generate_feedback", "mha", "--force")
    html = (course / "feedback" / "bob_partly_correct" / "mha" / "mha.html").read_text("utf-8")
    assert "split_heads: 随机输入上与参考答案一致" in html  # the Chinese release


@pytest.mark.slow
def test_nbgrader_validate_passes_a_finished_notebook_and_fails_an_untouched_one(course, tmp_path):
    import nbformat

    from tests.mha_exercise import fill, sample_answers

    import shutil

    student = tmp_path / "mha"
    shutil.copytree(course / "assignments" / "mha", student)
    release = student / "mha.ipynb"
    finished = student / "finished.ipynb"
    nbformat.write(fill(nbformat.read(str(release), as_version=4),
                        sample_answers()["alice_correct"]), str(finished))
    assert "Success! Your notebook passes all the tests." in nbgrader(
        student, "validate", str(finished)).stdout
    untouched = nbgrader(student, "validate", str(release)).stdout
    assert "VALIDATION FAILED" in untouched and "Traceback" not in untouched


@pytest.mark.slow
def test_the_english_release_grades_to_the_same_scores(course, autograded, tmp_path):
    import nbformat

    from tests.mha_exercise import fill, sample_answers

    english = nbformat.read(str(course / "assignments" / "mha_en" / "mha.ipynb"), as_version=4)
    for student, answers in sample_answers().items():
        path = course / "submitted" / student / "mha_en" / "mha.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(english, answers), str(path))
    nbgrader(course, "autograde", "mha_en", "--force", "--IsolatedAutograde.seed=11")
    nbgrader(course, "export", "--to", "english.csv", "--assignment=[mha_en]")
    with open(course / "english.csv", newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["submitted"] == "mha_en"}
    assert scores == autograded


# ------------------------------------------------ DetectTampering, before nbgrader grades

def test_nbgrader_grades_the_cells_read_before_it_restores_anything():
    notebook = nbformat.from_dict(json.loads(REDEFINING_SOFTMAX[0].make()))
    before = graded_cells_of(json.loads(nbformat.writes(notebook)), EXERCISE.kit_sources)
    notebook.metadata[CELLS_STASH] = [["planted", "def softmax(x, axis=-1):\n    return x\n"]]
    notebook.metadata[STASH] = []
    notebook, _ = DetectTampering().preprocess(notebook, {"nbgrader": {"student": "s"}})
    assert [tuple(cell) for cell in notebook.metadata[CELLS_STASH]] == before
    assert notebook.metadata[STASH] == find_tampering(json.loads(REDEFINING_SOFTMAX[0].make()), EXERCISE)
    assert notebook.metadata[STASH]


def test_nbgrader_gets_the_release_flags_back():
    notebook = nbformat.from_dict(_set_meta("answer_softmax", grade=True, points=12)(
        _set_meta("test_softmax", grade=False, points=99)(filled())))
    notebook, _ = DetectTampering().preprocess(notebook, {"nbgrader": {"student": "s"}})
    release, _ = expected_layout(EXERCISE)
    for grade_id in ("answer_softmax", "test_softmax"):
        [cell] = cells_with(notebook, grade_id)
        meta = cell["metadata"]["nbgrader"]
        assert {k: meta.get(k) for k in ("grade", "solution", "locked", "points")} == {
            k: release[grade_id].get(k) for k in ("grade", "solution", "locked", "points")}


def test_a_deleted_test_cell_comes_back_and_an_intact_notebook_is_left_as_it_is(monkeypatch):
    from mhakit.authoring import build
    from mhakit.integrations import nbgrader_plugin

    intact = nbformat.from_dict(filled())
    deleted = nbformat.from_dict(filled())
    [test_cell] = cells_with(deleted, "test_softmax")
    deleted.cells.remove(test_cell)
    nbgrader_plugin.DetectTampering.restore_deleted_locked_cells(deleted, EXERCISE)
    [restored] = cells_with(deleted, "test_softmax")
    [built] = cells_with(build.build_notebook(EXERCISE), "test_softmax")
    assert restored == built and deleted.cells[-1] is restored

    def not_needed(*_):
        raise AssertionError("the source notebook was built for a notebook that lacks nothing")

    monkeypatch.setattr(nbgrader_plugin, "build_notebook", not_needed)
    before = json.loads(nbformat.writes(intact))
    nbgrader_plugin.DetectTampering.restore_deleted_locked_cells(intact, EXERCISE)
    assert json.loads(nbformat.writes(intact)) == before


METADATA_EDITS = {  # what a cell's nbgrader metadata may hold, valid or not
    "as released": {},
    "points as text": {"points": "12"},
    "a number for an id": {"grade_id": 7},
    "a key nbgrader does not know": {"colour": "red"},
    "no lock": {"locked": None},
    "an old schema": {"schema_version": 1},
    "graded without points": {"grade": True, "points": None},
}


def _outcome(check, notebook):
    try:
        check(copy.deepcopy(notebook))
    except Exception as error:  # noqa: BLE001 - what each way raises is compared
        return type(error), str(error)
    return "valid"


@pytest.mark.parametrize("edit", METADATA_EDITS)
@pytest.mark.parametrize("grade_id", ["answer_softmax", "test_softmax"])
def test_the_kits_metadata_check_finds_what_nbgraders_finds(edit, grade_id):
    """nbgrader's CheckCellMetadata, with each schema checked once: the same verdict and
    the same error, cell by cell; and nbgrader's own jsonschema back afterwards."""
    import jsonschema
    import nbgrader.nbgraderformat.common as nbgrader_format
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.preprocessors import CheckCellMetadata

    from mhakit.integrations.nbgrader_plugin import CheckCellMetadataOnce, _schema_checked_once

    notebook = nbformat.from_dict(filled())
    [cell] = cells_with(notebook, grade_id)
    meta = cell.metadata.nbgrader
    for key, value in METADATA_EDITS[edit].items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    plain = _outcome(lambda nb: MetadataValidator().validate_nb(nb), notebook)
    assert (plain == "valid") == (edit == "as released"), plain
    with _schema_checked_once():
        assert _outcome(lambda nb: MetadataValidator().validate_nb(nb), notebook) == plain
    assert nbgrader_format.jsonschema is jsonschema
    steps = [_outcome(lambda nb: step.preprocess(nb, {}), notebook)
             for step in (CheckCellMetadata(), CheckCellMetadataOnce())]
    assert steps[0] == steps[1]
    assert nbgrader_format.jsonschema is jsonschema


# ------------------------------------------------ the confinement gate

HONEST = next(attack for attack in ATTACKS if attack.name == "look-around-then-answer-honestly")
UNCONFINED_REFUSED = "c.BoundedNotebookReader.allow_unconfined = False"
UNCONFINED_ACCEPTED = "c.BoundedNotebookReader.allow_unconfined = True"


def unconfined_course(course, tmp_path):
    """A copy of the course that grades unconfined, by its nbgrader_config.py's setting."""
    root = tmp_path / "course"
    for name in ("source", "assignments"):
        shutil.copytree(course / name, root / name)
    shutil.copy(course / "gradebook.db", root / "gradebook.db")
    config = (course / "nbgrader_config.py").read_text(encoding="utf-8")
    assert UNCONFINED_REFUSED in config
    (root / "nbgrader_config.py").write_text(
        config.replace(UNCONFINED_REFUSED, UNCONFINED_ACCEPTED), encoding="utf-8")
    target = root / "submitted" / "honest" / "mha" / "mha.ipynb"
    target.parent.mkdir(parents=True)
    target.write_bytes(HONEST.make())
    return root


def flags(gradebook_db, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{gradebook_db}") as gradebook:
        notebook = gradebook.find_submission("mha", student).notebooks[0]
        flagged = [g.name for g in notebook.grades if g.needs_manual_grade
                   and g.name.startswith("test_")]
        comments = " ".join(c.auto_comment or "" for c in notebook.comments)
    return flagged, comments


@pytest.mark.slow
def test_an_unconfined_grade_is_flagged_in_nbgraders_gradebook(course, tmp_path):
    root = unconfined_course(course, tmp_path)
    env = dict(os.environ, MHAKIT_SANDBOX="plain",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    env.pop("MHAKIT_ALLOW_UNCONFINED", None)  # the course's own setting must accept the risk
    nbgrader = list(NBGRADER)
    for command in (["db", "student", "add", "honest"], ["autograde", "mha", "--force"]):
        done = subprocess.run(nbgrader + command, cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    flagged, comments = flags(root / "gradebook.db", "honest")
    assert flagged and "graded unconfined" in comments
    # The same course, refused: the gate's setting is what let it through.
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text().replace(UNCONFINED_ACCEPTED, UNCONFINED_REFUSED))
    done = subprocess.run(nbgrader + ["autograde", "mha", "--force"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and done.stderr.count("refusing to grade") == 1, done.stderr


@pytest.mark.slow
def test_autograde_without_the_assignment_in_the_gradebook_says_to_build_first(course, tmp_path):
    """A fresh clone has the release but no gradebook.db: nbgrader once printed a
    30-line traceback per student."""
    root = tmp_path / "course"
    for name in ("source", "assignments"):
        shutil.copytree(course / name, root / name)
    shutil.copytree(course / "submitted", root / "submitted",
                    ignore=shutil.ignore_patterns("mha_en"))  # other tests add some
    shutil.copy(course / "nbgrader_config.py", root / "nbgrader_config.py")
    done = subprocess.run([*NBGRADER, "autograde", "mha"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Traceback" not in output and output.count("run `mhakit build`") == 1, output
    assert "mha-kit: there is no gradebook (" in output
    shutil.copy(course / "gradebook.db", root / "gradebook.db")  # a gradebook without mha_en
    removed = subprocess.run([*NBGRADER, "db", "assignment", "remove",
                              "mha_en", "--force"], cwd=root, capture_output=True, text=True,
                             timeout=600)
    assert removed.returncode == 0, removed.stderr
    alice = root / "submitted" / "alice_correct"
    (alice / "mha").rename(alice / "mha_en")
    done = subprocess.run([*NBGRADER, "autograde", "mha_en"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output
    assert "mha-kit: the gradebook has no assignment mha_en: run `mhakit build`" in output
