"""Building the nbgrader source folder, and the student release from it.

``source/mha/`` is derived, never edited by hand: its answer cells come from
``solutions/mha.py``, its points from the hidden checks, and its self-check files are
copies of ``autograder/public``. ``assignments/mha/`` is then produced by nbgrader's own
``generate_assignment``. Tests rebuild both and fail when the committed copies are stale.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

import solutions

from . import lesson
from ..grader.hidden_checks import POINTS, QUIZ_EXPLANATIONS, QUIZ_KEY, QUIZ_POINTS
from ..selfcheck.wording import pick
from ..grader.tampering import LAYOUT_FILE, layout_of

WRITTEN_POINTS = 1  # per optional written answer, graded by hand, on top of the 100

ASSIGNMENTS = {"mha": "zh", "mha_en": "en"}  # assignment id -> language; "mha" is the default
ASSIGNMENT = "mha"
NOTEBOOK = "mha.ipynb"
SHIPPED_PACKAGE = "mhakit_student"
PUBLIC_DIR = Path(__file__).resolve().parents[1] / "selfcheck"
SOLUTIONS_FILE = Path(solutions.mha.__file__)


def _meta(grade_id, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def solution_cell_source(function_name):
    """The reference function, its body wrapped in nbgrader's solution markers."""
    text = SOLUTIONS_FILE.read_text(encoding="utf-8")
    lines = text.splitlines()
    node = next(n for n in ast.parse(text).body
                if isinstance(n, ast.FunctionDef) and n.name == function_name)
    docstring = node.body[0]
    head = lines[node.lineno - 1:docstring.end_lineno]
    body = lines[docstring.end_lineno:node.end_lineno]
    return "\n".join(head + ["    ### BEGIN SOLUTION"] + body + ["    ### END SOLUTION"])


def test_cell_source(part):
    return (f"# 自查 / self-check: {part}\n"
            f'check("{part}")\n'
            "### BEGIN HIDDEN TESTS\n"
            f"# mha-kit grades {part} on random inputs in an isolated process.\n"
            "### END HIDDEN TESTS")


def quiz_answer_source(question):
    """The stub line stays in the release; the key goes between the solution markers."""
    key = QUIZ_KEY[question.variable]
    stub = ('"A"、"B"、"C" 或 "D" / "A", "B", "C" or "D"' if isinstance(question, lesson.Choice)
            else "填数字 / a number")
    return (f"{question.variable} = None  # {stub}\n"
            "### BEGIN SOLUTION\n"
            f"{question.variable} = {key!r}\n"
            "### END SOLUTION")


def _question_text(question, lang):
    number = question.variable.split("_")[1]
    text = question.zh if lang == "zh" else question.en
    if isinstance(question, lesson.Choice):
        text += "\n\n" + "\n".join(f"- {letter}. {zh if lang == 'zh' else en}"
                                   for letter, (zh, en) in zip("ABCD", question.options))
    label = f"第 {number} 题" if lang == "zh" else f"Question {number}"
    return f"**{label}**: {text}"


def _cells_for(item, lang):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    if isinstance(item, lesson.Text):
        return [md(item.zh if lang == "zh" else item.en, id=item.id)]
    if isinstance(item, lesson.Demo):
        return [code(item.source, id=item.id, metadata=_meta(item.id, locked=True))]
    if isinstance(item, (lesson.Choice, lesson.Number)):
        return [md(_question_text(item, lang), id=f"about_{item.variable}"),
                code(quiz_answer_source(item), id=f"answer_{item.variable}",
                     metadata=_meta(f"answer_{item.variable}", solution=True))]
    if isinstance(item, lesson.Written):
        question = item.zh if lang == "zh" else item.en
        model = pick(QUIZ_EXPLANATIONS["quiz_" + item.id.split("_")[1]], lang)
        return [md(question, id=f"about_{item.id}"),
                md(model, id=item.id, metadata=_meta(item.id, solution=True, grade=True,
                                                     points=WRITTEN_POINTS))]
    if item.function == "quiz":
        return [code(test_cell_source("quiz"), id="test_quiz",
                     metadata=_meta("test_quiz", grade=True, locked=True,
                                    points=sum(QUIZ_POINTS.values())))]
    name = item.function
    return [code(solution_cell_source(name), id=f"answer_{name}",
                 metadata=_meta(f"answer_{name}", solution=True)),
            code(test_cell_source(name), id=f"test_{name}",
                 metadata=_meta(f"test_{name}", grade=True, locked=True, points=sum(POINTS[name])))]


def build_notebook(lang="zh"):
    cells = [cell for item in lesson.LESSON for cell in _cells_for(item, lang)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"},
                         "language_info": {"name": "python"},
                         "mhakit": {"language": lang}}
    nbformat.validate(notebook)
    return notebook


SELFCHECK_SCRIPT = '''\
"""自查 mha 作业 | Self-check for the mha assignment.

    python selfcheck.py mha.ipynb

checks the saved notebook with the public checks, prints a table and exits non-zero
while anything fails. Inside the notebook, `check()` does the same for the functions as
they are defined right now. Needs only numpy.
"""

import sys

from mhakit_student import check, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
'''


def source_files(assignment=ASSIGNMENT):
    """{relative path: text} of everything under source/<assignment>/."""
    lang = ASSIGNMENTS[assignment]
    files = {NOTEBOOK: nbformat.writes(build_notebook(lang)) + "\n",
             "selfcheck.py": SELFCHECK_SCRIPT}
    for path in sorted(PUBLIC_DIR.glob("*.py")):
        files[f"{SHIPPED_PACKAGE}/{path.name}"] = path.read_text(encoding="utf-8")
    files[f"{SHIPPED_PACKAGE}/fingerprints.json"] = fingerprints_text()
    language = files[f"{SHIPPED_PACKAGE}/language.py"]
    files[f"{SHIPPED_PACKAGE}/language.py"] = language.replace('LANGUAGE = "zh"',
                                                               f'LANGUAGE = "{lang}"')
    return files


def fingerprints_text():
    """fingerprints.json for the released self-check: for each call a public check makes,
    the hash of each catalogued wrong variant's result (never the variants themselves)."""
    import numpy as np

    from ..grader.mistakes import CATALOGUE
    from ..grader.planning import PlanningStudent
    from ..selfcheck.fingerprints import fingerprint, probe_key
    from ..selfcheck.framework import PUBLIC, checks_for
    from ..selfcheck.runner import run_check

    reference = {name: getattr(solutions, name) for name in solutions.FUNCTIONS}
    probes, named = {}, set()
    for chk in checks_for(tier=PUBLIC):
        planner = PlanningStudent(reference)
        run_check(chk, planner, None)
        for call in (c for c in planner.calls if not c.variable):
            try:
                right, table = fingerprint(reference[call.name](*call.args, **call.kwargs)), {}
            except ValueError:  # a check that feeds invalid input on purpose
                continue
            for mistake in CATALOGUE.get(call.name, ()):
                for variant in mistake.variants:
                    try:
                        with np.errstate(all="ignore"):
                            wrong = fingerprint(variant(*call.args, **call.kwargs))
                    except Exception:  # noqa: BLE001 - a variant these inputs do not fit
                        continue
                    if wrong is not None and wrong != right:
                        table.setdefault(wrong, mistake.id)
            if table:
                probes[probe_key(call.name, call.args, call.kwargs)] = table
                named |= set(table.values())
    hints = {m.id: {"zh": m.zh, "en": m.en} for ms in CATALOGUE.values() for m in ms
             if m.id in named}
    return json.dumps({"probes": probes, "hints": hints}, ensure_ascii=False, indent=1,
                      sort_keys=True) + "\n"


def layout_text():
    """release_layout.json's text: what the tampering check compares submissions with."""
    return json.dumps(layout_of(build_notebook()), ensure_ascii=False, indent=1) + "\n"


def write_source(course_dir, assignments=tuple(ASSIGNMENTS)):
    """Write source/<assignment>/ for each assignment (and the kit's release_layout.json);
    return the folders."""
    LAYOUT_FILE.write_text(layout_text(), encoding="utf-8")
    folders = []
    for assignment in assignments:
        target = Path(course_dir) / "source" / assignment
        if target.exists():
            shutil.rmtree(target)
        for relative, text in source_files(assignment).items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        folders.append(target)
    return folders


def generate_release(course_dir, assignment=ASSIGNMENT):
    """Run nbgrader's generate_assignment in ``course_dir``; return the release folder."""
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force",
               "--log-level=WARN"]
    done = subprocess.run(command, cwd=course_dir, capture_output=True, text=True,
                          env=tool_environment())
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{done.stdout}{done.stderr}")
    return Path(course_dir) / "assignments" / assignment


def tool_environment():
    """nbgrader runs helper programs (alembic) by name: find them beside this Python."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
