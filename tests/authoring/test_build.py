"""mhakit/authoring/build.py: source/ and assignments/ are derived: they must match a
fresh build, and the release must hold no answer and no hidden check."""

import ast
import filecmp
import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from mhakit.authoring.build import (exercise_files, solution_cell_source, source_files,
                                    vendored)
from tests.mha_exercise import (ASSIGNMENTS, EXERCISE, POINTS, QUIZ_EXPLANATIONS, QUIZ_KEY,
                                QUIZ_POINTS)

mistakes = EXERCISE.content("mistakes")
WRITTEN_POINTS = 0  # each optional written answer: paid by hand as extra credit

REPO = Path(__file__).resolve().parents[2]
RELEASES = [REPO / "assignments" / assignment for assignment in ASSIGNMENTS]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_source_matches_a_fresh_build(assignment):
    expected = source_files(EXERCISE, assignment)
    folder = REPO / "source" / assignment
    committed = {str(p.relative_to(folder)): p.read_text(encoding="utf-8")
                 for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    stale = sorted(set(expected) ^ set(committed)) + sorted(
        name for name in expected if name in committed and expected[name] != committed[name])
    assert not stale, f"source/{assignment} is stale, run `mhakit build`: {stale}"


def test_the_exercise_files_match_a_fresh_build():
    # The tampering check reads the release's layout, and the self-check the fingerprints,
    # from these generated files, committed with the exercise.
    for path, text in exercise_files(EXERCISE).items():
        committed = path.read_text(encoding="utf-8")
        same = (same_answers(json.loads(committed), json.loads(text))
                if path.name == "known_answers.json" else committed == text)
        assert same, f"{path.relative_to(REPO)} is stale, run `mhakit build --exercise-files`"


# The reference's answers differ in their last bits from one CPU to another (OpenBLAS
# and numpy pick their kernels by the CPU's instructions), by far less than the public
# checks' tolerance; a stale file differs in its inputs' keys, shapes or values.
LAST_BITS = {"<f8": 1e-12, "<f4": 1e-5}


def same_answers(committed, fresh):
    """The known answers, equal but for the last bits of their floats."""
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if "dtype" in committed and committed.get("dtype") == fresh.get("dtype"):
            tolerance = LAST_BITS.get(committed["dtype"], 0)
            return (committed["shape"] == fresh["shape"]
                    and len(committed["data"]) == len(fresh["data"])
                    and all(math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
                            for a, b in zip(committed["data"], fresh["data"])))
        return committed.keys() == fresh.keys() and all(
            same_answers(committed[key], fresh[key]) for key in committed)
    if isinstance(committed, list) and isinstance(fresh, list):
        return len(committed) == len(fresh) and all(map(same_answers, committed, fresh))
    return committed == fresh


def test_known_answers_that_differ_in_more_than_the_last_bits_are_stale():
    [text] = [t for p, t in exercise_files(EXERCISE).items() if p.name == "known_answers.json"]
    answers = json.loads(text)
    key = next(iter(answers))
    changed = json.loads(text)
    changed[key]["items"][0]["data"][0] += 1e-6
    assert same_answers(answers, json.loads(text)) and not same_answers(answers, changed)
    changed = json.loads(text)
    changed[key + "0"] = changed.pop(key)
    assert not same_answers(answers, changed)


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_release_matches_nbgrader_generate_assignment(course, assignment):
    fresh, committed = course / "assignments" / assignment, REPO / "assignments" / assignment
    assert _tree(fresh) == _tree(committed)
    different = [name for name in _tree(fresh)
                 if not filecmp.cmp(fresh / name, committed / name, shallow=False)]
    assert not different, f"assignments/{assignment} is stale, run `mhakit build`: {different}"


def _solution_lines():
    """Every code line between the solution markers, as it appears in the source."""
    lines = set()
    for name in EXERCISE.function_names:
        text = solution_cell_source(EXERCISE, name)
        body = text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
        # Short lines such as `else:` say nothing about the answer.
        lines |= {line.strip() for line in body.splitlines()
                  if len(line.strip()) >= 12 and not line.strip().startswith("#")}
    return lines


def _names_defined_in(module):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    return [node.name for node in tree.body  # the helpers that build the wrong variants
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_")]


def _quiz_key_patterns():
    return [re.compile(rf"{name}\s*=\s*{re.escape(repr(key))}") for name, key in QUIZ_KEY.items()]


def test_release_holds_no_solution_code_and_no_hidden_check():
    answer_lines = _solution_lines()
    assert len(answer_lines) > 30  # the scan has something to look for
    forbidden = ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden_checks", "QUIZ_KEY",
                 "solutions", "exercises.mha.reference", "mhakit.", "IsolatedStudent", "2359296", "2_359_296", "11.31"]
    forbidden += [text[lang][:30] for text in QUIZ_EXPLANATIONS.values() for lang in text]
    # The catalogue of wrong variants: each is one edit away from an answer. Its
    # identifiers and hints may ship (the self-check names mistakes); its code may not.
    # (The self-check's own structure.diagnose compares with the right result only.)
    forbidden += ["CATALOGUE", "variant_outputs", "name_by_variants"] + _names_defined_in(
        mistakes)
    files = [p for release in RELEASES for p in release.rglob("*")]
    assert len(files) > 10
    for path in files:
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
        keys = [p.pattern for p in _quiz_key_patterns() if p.search(text)]
        assert not keys, f"{path.name} holds quiz keys: {keys}"


def test_a_shipped_module_imports_the_selfcheck_by_its_kit_name_and_ships_relative():
    """In the kit a shipped module imports the self-check as mhakit.selfcheck, so that
    tools follow it; in the release, inside mhakit_student/exercise/, as its parent."""
    kit = ("from mhakit.selfcheck.framework import (Checks,\n    CheckFailed)\n"
           "from mhakit.selfcheck.wording import Words\nfrom . import lending\n")
    assert vendored(kit, "checks.py") == ("from ..framework import (Checks,\n    CheckFailed)\n"
                                         "from ..wording import Words\nfrom . import lending\n")
    shipped = (EXERCISE.shipped_folder / "checks.py").read_text(encoding="utf-8")
    assert "from mhakit.selfcheck.framework import" in shipped
    assert "from ..framework import" in vendored(shipped, "checks.py")
    assert vendored('{"mhakit": 1}', "known_answers.json") == '{"mhakit": 1}'  # data as it is


@pytest.mark.parametrize("line", ["import mhakit.selfcheck.framework\n",
                                  "from mhakit.grader import hidden_checks\n",
                                  "from mhakit import selfcheck\n"])
def test_a_shipped_module_that_uses_the_kit_otherwise_cannot_ship(line):
    with pytest.raises(ValueError, match="cannot ship"):
        vendored(line, "checks.py")


def test_the_key_scan_would_find_a_key():
    assert all(p.search(f"{name} = {key!r}") for p, (name, key) in
               zip(_quiz_key_patterns(), QUIZ_KEY.items()))


@pytest.mark.parametrize("release", RELEASES, ids=list(ASSIGNMENTS))
def test_points_in_the_notebook_are_the_graders_points(release):
    notebook = nbformat.read(str(release / "mha.ipynb"), as_version=4)
    graded = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")]
    auto = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
            for c in graded if c.cell_type == "code"}
    expected = {f"test_{name}": sum(p) for name, p in POINTS.items()}
    expected["test_quiz"] = sum(QUIZ_POINTS.values())
    assert auto == expected
    assert sum(auto.values()) == 100
    written = [c.metadata.nbgrader["points"] for c in graded if c.cell_type == "markdown"]
    assert written == [WRITTEN_POINTS] * 4  # extra credit, by hand, on top of the 100


@pytest.mark.parametrize("release", RELEASES, ids=list(ASSIGNMENTS))
def test_every_contract_function_has_an_answer_cell_with_a_stub(release):
    notebook = nbformat.read(str(release / "mha.ipynb"), as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for name in EXERCISE.function_names:
        assert f"def {name}(" in answers[f"answer_{name}"]
        assert "raise NotImplementedError()" in answers[f"answer_{name}"]
    for question in QUIZ_KEY:
        assert answers[f"answer_{question}"].startswith(f"{question} = None")
        assert "raise" not in answers[f"answer_{question}"]


def _code_cells(notebook):
    return [(c.get("id"), c.source, c.metadata.get("nbgrader")) for c in notebook.cells
            if c.cell_type == "code"]


def test_both_languages_share_every_code_cell_and_grade():
    zh, en = (nbformat.read(str(release / "mha.ipynb"), as_version=4) for release in RELEASES)
    assert _code_cells(zh) == _code_cells(en)
    graded = [[(c.metadata.nbgrader["grade_id"], c.metadata.nbgrader.get("points"))
               for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")] for nb in (zh, en)]
    assert graded[0] == graded[1]
    assert zh.metadata["mhakit"]["language"] == "zh" and en.metadata["mhakit"]["language"] == "en"


def test_a_build_that_fails_leaves_the_source_it_would_have_replaced(tmp_path, monkeypatch):
    from mhakit.authoring import build

    build.write_source(EXERCISE, tmp_path, ["mha"])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    def broken(exercise, assignment):
        raise ValueError("shipped/checks.py cannot ship")

    monkeypatch.setattr(build, "source_files", broken)
    with pytest.raises(ValueError, match="cannot ship"):
        build.write_source(EXERCISE, tmp_path, ["mha"])
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
