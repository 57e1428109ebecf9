"""The attack corpus, graded through both doors: every attack scores as described."""

import csv
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mhakit.sandbox.confinement import choice, chosen_mode, confined
from mhakit.grader.grading import grade_notebook
from mhakit.grader.result import Status
from tests.mha_exercise import POINTS, QUIZ_POINTS
from mhakit.sandbox import Limits

from tests.attacks.corpus import ATTACKS, REPO
from tests.conftest import NBGRADER

FULL = {name: float(sum(p)) for name, p in POINTS.items()}
FULL["quiz"] = float(sum(QUIZ_POINTS.values()))
# The corpus's limits: a call's short (generous for correct code, short for endless loops),
# a cell's the default (no attack loops at a cell's top level, and printing a gigabyte
# took over 3 s while the parallel test run kept both cores busy), and memory a quarter of
# the default 4 GB: the memory bomb fails as it does at 4 GB, with a MemoryError at the
# bound of its address space, but without first filling gigabytes of pages, call after
# call (32 s at 4 GB, 0.5 s at 1 GB).
LIMITS = {"MHAKIT_CALL_SECONDS": "3", "MHAKIT_CELL_SECONDS": "30", "MHAKIT_MEMORY_MB": "1024"}


def expected_parts(attack):
    if attack.unreadable or attack.zero == "all":
        return {part: 0.0 for part in FULL}
    expected = {part: 0.0 if part in attack.zero else full for part, full in FULL.items()}
    return dict(expected, **attack.scores)


def runnable(attack):
    if attack.needs_confinement and not confined(Limits()):
        pytest.skip("this attack is only meaningful where the child is confined, and no "
                    f"mode confines it here ({choice(Limits()).problems})")


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_mhakit_grade_scores_each_attack_as_described(attack, tmp_path, monkeypatch):
    runnable(attack)
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "mha.ipynb"
    path.write_bytes(attack.make())
    result = grade_notebook(path, seed=7)
    extra = result.extra
    if attack.unreadable:
        assert result.status is Status.UNREADABLE and result.score == 0
        assert extra["error"]
        return
    assert extra["parts"] == expected_parts(attack), extra
    assert not any("LEAK" in test.output for test in result.tests)  # text echoed back
    assert bool(extra["tampering"]) == attack.tampering, extra["tampering"]
    assert result.status is Status.GRADED
    assert extra["confinement"] == chosen_mode(Limits())


def tree_digest(*folders, skip=()):
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not (set(relative.parts) & set(skip)):
                digest.update(str(relative).encode() + path.read_bytes())
    return digest.hexdigest()


NBGRADER_OUTPUTS = ("autograded", "feedback", "gradebook.db", "mhakit-results", "__pycache__",
                    "grades.csv", "nbgrader_grades.csv")
REPO_PARTS = [REPO / name for name in ("source", "mhakit", "autograder", "assignments")]


@pytest.fixture(scope="module")
def corpus_course(course, tmp_path_factory):
    """A course whose students are the attacks, graded by nbgrader autograde."""
    root = tmp_path_factory.mktemp("attacks")
    for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
        source = course / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    attacks = [a for a in ATTACKS if not a.needs_confinement or confined(Limits())]
    for attack in attacks:
        path = root / "submitted" / attack.name / "mha" / "mha.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(attack.make())
    before = (tree_digest(root, skip=NBGRADER_OUTPUTS), tree_digest(*REPO_PARTS,
                                                                    skip=NBGRADER_OUTPUTS))
    env = dict(os.environ, **LIMITS,
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    autograde = subprocess.run([*NBGRADER, "autograde", "mha", "--force",
                                "--IsolatedAutograde.seed=7"], cwd=root, env=env,
                               capture_output=True, text=True, timeout=1800)
    exported = subprocess.run([*NBGRADER, "export", "--to",
                               "nbgrader_grades.csv"], cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
    assert exported.returncode == 0, exported.stderr
    with open(root / "nbgrader_grades.csv", newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                  if row["assignment"] == "mha"}
    after = (tree_digest(root, skip=NBGRADER_OUTPUTS), tree_digest(*REPO_PARTS,
                                                                   skip=NBGRADER_OUTPUTS))
    return {"root": root, "attacks": attacks, "autograde": autograde, "scores": scores,
            "before": before, "after": after, "env": env}


@pytest.mark.slow
def test_nbgrader_autograde_scores_each_attack_as_described(corpus_course):
    expected = {a.name: sum(expected_parts(a).values()) for a in corpus_course["attacks"]}
    assert corpus_course["scores"] == expected, corpus_course["autograde"].stderr[-3000:]


@pytest.mark.slow
def test_unreadable_submissions_are_flagged_with_the_reason_not_silently_zero(corpus_course):
    """nbgrader's door reads with the kit's bounded reader: a file that is no notebook is
    0, flagged for a person in formgrader with the reason, and named in the log."""
    from nbgrader.api import Gradebook

    log = corpus_course["autograde"].stdout + corpus_course["autograde"].stderr
    unreadable = [attack for attack in corpus_course["attacks"] if attack.unreadable]
    assert unreadable
    with Gradebook(f"sqlite:///{corpus_course['root'] / 'gradebook.db'}") as gradebook:
        for attack in unreadable:
            assert f"mha-kit could not grade {attack.name}: " in log
            submission = gradebook.find_submission("mha", attack.name)
            grades = [g for nb in submission.notebooks for g in nb.grades]
            assert grades and all(g.needs_manual_grade and not g.auto_score for g in grades)
            comments = [c.auto_comment or "" for nb in submission.notebooks for c in nb.comments]
            assert comments and all(c.startswith("mha-kit: unreadable: ") for c in comments)


@pytest.mark.slow
def test_tampering_is_flagged_in_the_gradebook(corpus_course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{corpus_course['root'] / 'gradebook.db'}") as gradebook:
        for attack in corpus_course["attacks"]:
            if attack.unreadable:
                continue
            submission = gradebook.find_submission("mha", attack.name)
            # Written answers always wait for a person; the autograded test cells are
            # flagged only when something was tampered with.
            flagged = any(grade.needs_manual_grade for nb in submission.notebooks
                          for grade in nb.grades if grade.name.startswith("test_"))
            comments = " ".join(c.auto_comment or "" for nb in submission.notebooks
                                for c in nb.comments)
            assert flagged == attack.tampering, attack.name
            assert ("mha-kit:" in comments) == attack.tampering, attack.name


@pytest.mark.slow
def test_student_code_changed_no_file_outside_its_scratch_folder(corpus_course):
    assert corpus_course["before"] == corpus_course["after"]


@pytest.mark.slow
def test_feedback_shows_no_hidden_test_and_no_input(corpus_course):
    done = subprocess.run([*NBGRADER, "generate_feedback", "mha",
                           "--force"], cwd=corpus_course["root"], env=corpus_course["env"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    pages = list((corpus_course["root"] / "feedback").rglob("*.html"))
    readable = {a.name for a in corpus_course["attacks"] if not a.unreadable}
    student_of = {page: page.relative_to(corpus_course["root"] / "feedback").parts[0]
                  for page in pages}
    # Everyone gets feedback; an unreadable notebook's says why it could not be graded.
    assert set(student_of.values()) == {a.name for a in corpus_course["attacks"]}
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in html and "isolated process" not in html
        if student_of[page] in readable:  # each check's outcome, in the release's language
            assert "随机输入上与参考答案一致" in html
