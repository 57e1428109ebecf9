"""What the tampering check finds, what it leaves alone, and which code is graded."""

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

from mhakit.grader.grading import grade_notebook
from tests.mha_exercise import EXERCISE, POINTS
from tests.mha_exercise import fill, sample_answers
from mhakit.grader.tampering import expected_layout, find_tampering, layout_of

from tests.attacks.corpus import RELEASE, REPO, _duplicate_with, _rename
from tests.attacks.on_metadata import (METADATA_ATTACKS, REDEFINING_SOFTMAX, _added_cell,
                                       _as_code, _as_markdown, _outputs, _run_top_to_bottom,
                                       _set_meta, _swap_ids)
from tests.conftest import NBGRADER


SOFTMAX_POINTS = float(sum(POINTS["softmax"]))


def filled(student="alice_correct", release=RELEASE):
    release = nbformat.read(str(release), as_version=4)
    return json.loads(nbformat.writes(fill(release, sample_answers()[student])))


def cells_with(notebook, grade_id):
    return [c for c in notebook["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]


@pytest.fixture(scope="module")
def honest_runs():
    """Three students' notebooks, each run from top to bottom in a real Jupyter kernel:
    one passes everything, one fails some checks (notes on stderr in test cells), one
    implemented nothing (each check returns 0.0); and the second in the English release."""
    runs = {student: _run_top_to_bottom(filled(student))
            for student in ("alice_correct", "bob_partly_correct", "carol_unimplemented")}
    english = REPO / "assignments" / "mha_en" / "mha.ipynb"
    runs["bob_in_english"] = _run_top_to_bottom(filled("bob_partly_correct", english),
                                                english.parent)
    return runs


@pytest.mark.parametrize("release", ["mha", "mha_en"])
def test_the_untouched_releases_have_no_finding(release):
    notebook = json.loads((REPO / "assignments" / release / "mha.ipynb").read_text("utf-8"))
    assert find_tampering(notebook, EXERCISE) == []


def test_the_layout_is_the_committed_releases():
    """What the check compares with is what the release holds: the same nbgrader cells
    in the same order, types, flags and points, and the same locked sources."""
    for release in ("mha", "mha_en"):
        notebook = json.loads((REPO / "assignments" / release / "mha.ipynb").read_text("utf-8"))
        cells, locked = expected_layout(EXERCISE)
        layout = layout_of(notebook)
        assert layout["cells"] == list(cells.values())
        assert layout["locked"] == locked


def test_notebooks_run_top_to_bottom_have_no_finding(honest_runs):
    for student, notebook in honest_runs.items():
        test_cells = [c for c in notebook["cells"]
                      if c["metadata"].get("nbgrader", {}).get("grade")
                      and c["cell_type"] == "code"]
        assert all(c["outputs"] for c in test_cells), student  # the run left outputs there
        assert find_tampering(notebook, EXERCISE) == [], student
    kinds = {o["output_type"] for nb in honest_runs.values() for c in nb["cells"]
             if c["cell_type"] == "code" for o in c["outputs"]}
    assert {"stream", "execute_result"} <= kinds  # the honest runs cover these


def test_outputs_copied_into_a_cell_that_never_ran_are_planted(honest_runs):
    notebook = copy.deepcopy(honest_runs["alice_correct"])
    [cell] = cells_with(notebook, "test_softmax")
    cell["execution_count"] = None
    assert find_tampering(notebook, EXERCISE) == [
        "test cell test_softmax holds outputs that running it cannot produce"]


def test_a_result_other_than_the_checks_own_is_planted(honest_runs):
    notebook = copy.deepcopy(honest_runs["carol_unimplemented"])
    [cell] = cells_with(notebook, "test_attention")
    # check() returns nothing: it tells Validate "not implemented" on stderr.
    assert not [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
    assert any(o["output_type"] == "stream" and o["name"] == "stderr" for o in cell["outputs"])
    cell["outputs"].append({"output_type": "execute_result", "metadata": {},
                            "execution_count": cell["execution_count"],
                            "data": {"text/plain": ["16"]}})  # nbgrader reads it as 16 points
    assert find_tampering(notebook, EXERCISE) == [
        "test cell test_attention holds outputs that running it cannot produce"]


def test_another_parts_table_in_a_test_cell_is_planted(honest_runs):
    notebook = copy.deepcopy(honest_runs["bob_partly_correct"])
    [softmax] = cells_with(notebook, "test_softmax")
    [dot] = cells_with(notebook, "test_dot_product")
    softmax["outputs"] = copy.deepcopy(dot["outputs"])  # a passing row, of dot_product
    assert find_tampering(notebook, EXERCISE) == [
        "test cell test_softmax holds outputs that running it cannot produce"]


KINDS = [
    (_set_meta("test_softmax", points=100),
     "test cell test_softmax had its points changed from 12 to 100"),
    (_set_meta("written_3", points=1), "answer cell written_3 had its points changed from 0 to 1"),
    (_rename("answer_attention", "answer_attention_2"), "answer cell answer_attention is missing"),
    (_rename("answer_attention", "answer_attention_2"),
     "unexpected answer cell answer_attention_2 (renamed or added?)"),
    (_swap_ids("answer_dot_product", "answer_quiz_6"),
     "cells not in the release's order (ids swapped or cells moved): answer_quiz_6, "
     "answer_dot_product"),
    (_as_markdown("test_quiz"), "test cell test_quiz was turned from code into markdown"),
    (_as_code("written_4", "x = 1\n"),
     "answer cell written_4 was turned from markdown into code"),
    (_set_meta("answer_softmax", grade=True),
     "answer cell answer_softmax had 'grade' changed to True"),
    (_set_meta("test_softmax", locked=False),
     "test cell test_softmax had 'locked' changed to False"),
    (_set_meta("demo_cost", solution=True),
     "locked cell demo_cost had 'solution' changed to True"),
    (_set_meta("test_quiz", cell_type="markdown"),
     "test cell test_quiz claims to be a markdown cell"),
    (_added_cell("print(1)\n", grade=True, grade_id="bonus", points=5),
     "unexpected graded cell bonus (renamed or added?)"),
    (_duplicate_with("test_concat_heads",
                     '# 自查 / self-check: concat_heads\ncheck("concat_heads")'),
     "test cell test_concat_heads appears 2 times"),
    (_duplicate_with("answer_split_heads", "pass\n"),
     "answer cell answer_split_heads appears 2 times"),
    (_outputs("test_split_heads", [{"output_type": "display_data", "metadata": {},
                                    "data": {"text/plain": "passed"}}], 4),
     "test cell test_split_heads holds outputs that running it cannot produce"),
]


@pytest.mark.parametrize("edit, finding", KINDS, ids=[finding for _, finding in KINDS])
def test_each_kind_of_tampering_is_named(edit, finding):
    notebook = filled()
    assert find_tampering(notebook, EXERCISE) == []
    assert finding in find_tampering(edit(notebook), EXERCISE)


def test_the_kernelspec_and_answer_outputs_are_never_findings():
    honest = [a for a in METADATA_ATTACKS if a.name in ("another-kernelspec",
                                                        "outputs-in-answer-cells")]
    assert len(honest) == 2
    for attack in honest:
        assert find_tampering(json.loads(attack.make()), EXERCISE) == [], attack.name


@pytest.mark.slow
def test_both_paths_give_the_same_score_when_a_later_cell_redefines_softmax(course, tmp_path):
    from nbgrader.api import Gradebook

    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
        source = course / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    attacks = REDEFINING_SOFTMAX + [a for a in METADATA_ATTACKS
                                    if a.name in ("answer-cell-marked-graded",
                                                  "answer-cell-marked-locked")]
    mine = {}
    for attack in attacks:
        path = root / "submitted" / attack.name / "mha" / "mha.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(attack.make())
        mine[attack.name] = grade_notebook(path, seed=3).score
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ["PATH"]]))
    for command in (["autograde", "mha", "--force", "--IsolatedAutograde.seed=3"],
                    ["export", "--to", "scores.csv"]):
        done = subprocess.run([*NBGRADER, *command], cwd=root, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    with open(root / "scores.csv", newline="", encoding="utf-8") as handle:
        theirs = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha" and row["student_id"] in mine}
    assert theirs == mine
    for attack in attacks:
        expected = 100 - (SOFTMAX_POINTS if "softmax" in attack.zero else 0)
        assert mine[attack.name] == expected, attack.name
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for attack in attacks:
            [notebook] = gradebook.find_submission("mha", attack.name).notebooks
            softmax = next(g for g in notebook.grades if g.name == "test_softmax")
            assert softmax.auto_score == (0 if "softmax" in attack.zero else SOFTMAX_POINTS)


# ------------------------------------------------ a copy of the instructor's solutions

SOLUTION_CELLS = [grade_id for grade_id, entry in expected_layout(EXERCISE)[0].items()
                  if entry["solution"]]
COPIED = "cells that hold the instructor's solutions"


def source_notebook(assignment):
    return json.loads((REPO / "source" / assignment / "mha.ipynb").read_text("utf-8"))


def copied_cells(notebook):
    """The cells the solution finding names, or None when there is no such finding."""
    found = [f for f in find_tampering(notebook, EXERCISE) if f.startswith(COPIED)]
    assert len(found) <= 1, found
    return found[0].split("?): ", 1)[1].split(", ") if found else None


@pytest.mark.parametrize("assignment", ["mha", "mha_en"])
def test_the_course_source_notebook_is_flagged_cell_by_cell(assignment):
    assert copied_cells(source_notebook(assignment)) == SOLUTION_CELLS


def test_one_pasted_solution_is_flagged_and_the_rest_of_the_notebook_is_not():
    notebook = filled()
    source = {c["metadata"]["nbgrader"]["grade_id"]: c for c in source_notebook("mha")["cells"]
              if c["metadata"].get("nbgrader", {}).get("solution")}
    [answer] = cells_with(notebook, "answer_softmax")
    answer["source"] = source["answer_softmax"]["source"]  # with its markers
    [quiz] = cells_with(notebook, "answer_quiz_2")
    quiz["source"] = "quiz_2 = 'C'\n  ### END SOLUTION  \n"  # one marker line is enough
    # The model answer of the other language's source, word for word (blank lines and
    # trailing spaces aside): no marker, and still the instructor's text.
    [written] = cells_with(notebook, "written_2")
    model = [c for c in source_notebook("mha_en")["cells"]
             if c["metadata"].get("nbgrader", {}).get("grade_id") == "written_2"][0]
    written["source"] = "\n" + "".join(model["source"]).replace("\n", "   \n\n") + "\n\n"
    assert copied_cells(notebook) == ["answer_softmax", "answer_quiz_2", "written_2"]


def test_answers_of_the_students_own_are_not_solutions():
    """The sample class's correct student holds the reference's code without the markers,
    as a student who wrote the same code would: not a copy of the source. Nor is a model
    answer reworded by one word, or markers named inside a line of one's own."""
    for student in ("alice_correct", "bob_partly_correct", "carol_unimplemented"):
        assert copied_cells(filled(student)) is None, student
    notebook = filled()
    model = [c for c in source_notebook("mha_en")["cells"]
             if c["metadata"].get("nbgrader", {}).get("grade_id") == "written_4"][0]
    [written] = cells_with(notebook, "written_4")
    written["source"] = "".join(model["source"]).replace("512", "five hundred and twelve", 1)
    [answer] = cells_with(notebook, "answer_quiz_1")
    answer["source"] += "\n# nbgrader wraps answers in ### BEGIN SOLUTION / ### END SOLUTION"
    assert "512" in "".join(model["source"])
    assert copied_cells(notebook) is None


@pytest.mark.slow
def test_the_source_notebook_is_flagged_on_both_doors(course, tmp_path):
    """`nbgrader autograde` flags the copy's grades for review in the gradebook, with the
    finding as comment; `mhakit grade` puts it in the result and the grade table. The
    honest student beside it is flagged by neither."""
    from nbgrader.api import Gradebook

    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
        source = course / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    for student, notebook in (("copier", source_notebook("mha")), ("honest", filled())):
        path = root / "submitted" / student / "mha" / "mha.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook), encoding="utf-8")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ["PATH"]]))
    done = subprocess.run([*NBGRADER, "autograde", "mha", "--force",
                           "--IsolatedAutograde.seed=3"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        review = {}
        for student in ("copier", "honest"):
            [notebook] = gradebook.find_submission("mha", student).notebooks
            review[student] = ([g.name for g in notebook.grades if g.needs_manual_grade
                                and g.name.startswith("test_")],
                               "".join(c.auto_comment or "" for c in notebook.comments))
    assert review["copier"][0] and COPIED in review["copier"][1]
    assert review["honest"] == ([], "")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "grade",
                           str(root / "submitted"), "--out", str(out), "--seed", "3",
                           "--quiet", "--json"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    assert any(COPIED in f for f in results["copier"]["extra_data"]["tampering"])
    assert results["honest"]["extra_data"]["tampering"] == []
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        status = {row["student"]: row["status"] for row in csv.DictReader(handle)}
    assert status == {"copier": "graded (tampering)", "honest": "graded"}
