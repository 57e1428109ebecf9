"""source/ and assignments/ are derived: they must match a fresh build, and the
release must hold no answer and no hidden check."""

import filecmp
import json
import re
from pathlib import Path

import nbformat

import solutions
from autograder.build import ASSIGNMENT, solution_cell_source, source_files
from autograder.hidden_checks import POINTS, QUIZ_KEY, QUIZ_POINTS

REPO = Path(__file__).resolve().parent.parent
RELEASE = REPO / "assignments" / ASSIGNMENT


def test_committed_source_matches_a_fresh_build():
    expected = source_files()
    folder = REPO / "source" / ASSIGNMENT
    committed = {str(p.relative_to(folder)): p.read_text(encoding="utf-8")
                 for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    stale = sorted(set(expected) ^ set(committed)) + sorted(
        name for name in expected if name in committed and expected[name] != committed[name])
    assert not stale, f"source/ is stale, run `mhakit build`: {stale}"


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def test_committed_release_matches_nbgrader_generate_assignment(course):
    fresh = course / "assignments" / ASSIGNMENT
    assert _tree(fresh) == _tree(RELEASE)
    different = [name for name in _tree(fresh)
                 if not filecmp.cmp(fresh / name, RELEASE / name, shallow=False)]
    assert not different, f"assignments/ is stale, run `mhakit build`: {different}"


def _solution_lines():
    """Every code line between the solution markers, as it appears in the source."""
    lines = set()
    for name in solutions.FUNCTIONS:
        text = solution_cell_source(name)
        body = text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
        # Short lines such as `else:` say nothing about the answer.
        lines |= {line.strip() for line in body.splitlines()
                  if len(line.strip()) >= 12 and not line.strip().startswith("#")}
    return lines


def test_release_holds_no_solution_code_and_no_hidden_check():
    answer_lines = _solution_lines()
    assert len(answer_lines) > 30  # the scan has something to look for
    forbidden = ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden_checks", "QUIZ_KEY",
                 "solutions", "IsolatedStudent"]
    for path in RELEASE.rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            cells = json.loads(text)["cells"]
            text = "\n".join("".join(c["source"]) for c in cells)
        found = [line for line in answer_lines if line in text]
        assert not found, f"{path.name} contains solution code: {found[:3]}"
        hits = [word for word in forbidden if word in text]
        assert not hits, f"{path.name} mentions {hits}"
        key = QUIZ_KEY["quiz_1"]
        assert not re.search(rf"quiz_1\s*=\s*['\"]{key}['\"]", text), f"{path.name} holds the quiz key"


def test_points_in_the_notebook_are_the_graders_points():
    notebook = nbformat.read(str(RELEASE / "mha.ipynb"), as_version=4)
    points = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")}
    expected = {f"test_{name}": sum(p) for name, p in POINTS.items()}
    expected["test_quiz"] = sum(QUIZ_POINTS.values())
    assert points == expected
    assert sum(points.values()) == 100


def test_every_contract_function_has_an_answer_cell_with_a_stub():
    notebook = nbformat.read(str(RELEASE / "mha.ipynb"), as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for name in solutions.FUNCTIONS:
        assert f"def {name}(" in answers[f"answer_{name}"]
        assert "raise NotImplementedError()" in answers[f"answer_{name}"]
