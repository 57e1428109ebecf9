"""Building an exercise's nbgrader source folders, and the student release from them.

``source/<assignment>/`` is derived, never edited by hand: its answer cells come from the
exercise's reference, its points from the exercise's contract, and its self-check is a
copy of ``mhakit/selfcheck`` with the exercise's shipped package beside it as
``mhakit_student/exercise``. ``assignments/<assignment>/`` is then produced by nbgrader's
own ``generate_assignment``. The exercise's generated files (its release layout and its
fingerprints) are written by ``write_exercise_files``, committed, and checked for
staleness by the tests; a course build never writes into the kit.
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import nbformat

from ..exercise import content_files
from ..grader.tampering import layout_of
from ..selfcheck.known_answers import encode
from ..selfcheck.wording import pick
from . import lesson
from .nbgrader_command import command as nbgrader_command

SHIPPED_PACKAGE = "mhakit_student"
SELFCHECK_DIR = Path(__file__).resolve().parents[1] / "selfcheck"


def _meta(grade_id, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def solution_cell_source(exercise, function_name):
    """The reference function, its body wrapped in nbgrader's solution markers."""
    text = exercise.reference_file.read_text(encoding="utf-8")
    start, docstring_end, end = _function_lines(text)[function_name]
    lines = text.splitlines()
    head, body = lines[start - 1:docstring_end], lines[docstring_end:end]
    return "\n".join(head + ["    ### BEGIN SOLUTION"] + body + ["    ### END SOLUTION"])


@lru_cache(maxsize=8)
def _function_lines(text):
    """{function: (its first line, its docstring's last, its last)} of a module's text.
    Cached by the text: the sample class and the tests ask for every function many times,
    and parsing the reference is most of the cost."""
    return {node.name: (node.lineno, node.body[0].end_lineno, node.end_lineno)
            for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)}


def test_cell_source(part):
    return (f"# 自查 / self-check: {part}\n"
            f'check("{part}")\n'
            "### BEGIN HIDDEN TESTS\n"
            f"# mha-kit grades {part} on random inputs in an isolated process.\n"
            "### END HIDDEN TESTS")


def quiz_answer_source(exercise, question):
    """The stub line stays in the release; the key goes between the solution markers."""
    key = exercise.quiz.KEY[question.variable]
    return (f"{question.variable} = None  # {answer_hint(question, key)}\n"
            "### BEGIN SOLUTION\n"
            f"{question.variable} = {key!r}\n"
            "### END SOLUTION")


def answer_hint(question, key):
    """What the answer line asks for, told by the key's kind: a letter, a number, or as
    many numbers as the key holds, in a tuple."""
    if isinstance(question, lesson.Choice):
        return '"A"、"B"、"C" 或 "D" / "A", "B", "C" or "D"'
    if isinstance(key, tuple):
        return f"{len(key)} 个数的元组 / a tuple of {len(key)} numbers"
    return "填一个数 / a number"


def _question_text(question, lang):
    number = question.variable.split("_")[1]
    text = pick((question.zh, question.en), lang)
    if isinstance(question, lesson.Choice):
        text += "\n\n" + "\n".join(f"- {letter}. {pick(option, lang)}"
                                   for letter, option in zip("ABCD", question.options))
    label = pick((f"第 {number} 题", f"Question {number}"), lang)
    return f"**{label}**: {text}"


def _cells_for(exercise, item, lang):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    if isinstance(item, lesson.Text):
        return [md(pick((item.zh, item.en), lang), id=item.id)]
    if isinstance(item, lesson.Demo):
        return [code(item.source, id=item.id, metadata=_meta(item.id, locked=True))]
    if isinstance(item, (lesson.Choice, lesson.Number)):
        return [md(_question_text(item, lang), id=f"about_{item.variable}"),
                code(quiz_answer_source(exercise, item), id=f"answer_{item.variable}",
                     metadata=_meta(f"answer_{item.variable}", solution=True))]
    if isinstance(item, lesson.Written):
        question = pick((item.zh, item.en), lang)
        return [md(question, id=f"about_{item.id}"),
                md(pick(item.model, lang), id=item.id,
                   metadata=_meta(item.id, solution=True, grade=True, points=item.points))]
    name = item.function
    points = exercise.part_points(name)
    test = code(test_cell_source(name), id=f"test_{name}",
                metadata=_meta(f"test_{name}", grade=True, locked=True,
                               points=int(points) if points == int(points) else points))
    if name == "quiz":  # its answers are the questions' cells
        return [test]
    return [code(solution_cell_source(exercise, name), id=f"answer_{name}",
                 metadata=_meta(f"answer_{name}", solution=True)), test]


def build_notebook(exercise, lang=None):
    """The source notebook of ``exercise`` in ``lang`` (default: its first assignment's)."""
    lang = lang or exercise.assignments[exercise.default_assignment]
    items = exercise.content("lesson").LESSON
    cells = [cell for item in items for cell in _cells_for(exercise, item, lang)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"},
                         "language_info": {"name": "python"},
                         "mhakit": {"language": lang}}
    nbformat.validate(notebook)
    return notebook


SELFCHECK_SCRIPT = '''\
"""自查作业 | Self-check for the assignment.

    python selfcheck.py {notebook}

checks the saved notebook with the public checks, prints a table and exits non-zero
while anything fails. Inside the notebook, `check()` does the same for the functions as
they are defined right now. Needs only numpy.
"""

import sys

from mhakit_student import check, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
'''


def source_files(exercise, assignment):
    """{relative path: text} of everything under source/<assignment>/."""
    lang = exercise.assignments[assignment]
    files = {exercise.notebook: nbformat.writes(build_notebook(exercise, lang)) + "\n",
             "selfcheck.py": SELFCHECK_SCRIPT.replace("{notebook}", exercise.notebook)}
    for path in sorted(SELFCHECK_DIR.glob("*.py")):
        files[f"{SHIPPED_PACKAGE}/{path.name}"] = path.read_text(encoding="utf-8")
    for path in content_files(exercise.shipped_folder):
        name = path.relative_to(exercise.shipped_folder).as_posix()
        files[f"{SHIPPED_PACKAGE}/exercise/{name}"] = vendored(path.read_text(encoding="utf-8"),
                                                               name)
    language = files[f"{SHIPPED_PACKAGE}/language.py"]
    files[f"{SHIPPED_PACKAGE}/language.py"] = language.replace('LANGUAGE = "zh"',
                                                               f'LANGUAGE = "{lang}"')
    return files


KIT_SELFCHECK = re.compile(r"^from mhakit\.selfcheck\.(\w+) import ", flags=re.M)


def vendored(text, name):
    """A shipped module as the release holds it: in the kit it imports the self-check by
    its name there (``from mhakit.selfcheck.framework import ...``), in the release as its
    parent package (``from ..framework import ...``), for it lives in
    ``mhakit_student/exercise/``. Any other use of the kit would fail on the student's
    machine, which has no kit: ValueError."""
    if not name.endswith(".py"):
        return text
    shipped = KIT_SELFCHECK.sub(r"from ..\1 import ", text)
    if re.search(r"\bmhakit\b", shipped):  # mhakit_student has no boundary after "mhakit"
        raise ValueError(f"shipped/{name} uses the kit (mhakit) other than by "
                         "`from mhakit.selfcheck.<module> import ...`: it cannot ship")
    return shipped


def _public_calls(exercise):
    """Each call the exercise's public checks make, with the reference's result, as a
    correct student would see them; a call that raises on purpose is left out."""
    from ..grader.planning import PlanningStudent
    from ..selfcheck.framework import PUBLIC
    from ..selfcheck.runner import run_check

    reference = exercise.reference
    known = getattr(exercise.shipped, "KNOWN", None)
    saved = None if known is None else known.table
    if known is not None:  # the checks read their answers from this fresh table
        known.table = {probe: encode(reference[f](*args, **kwargs))
                       for probe, (f, args, kwargs) in _probes(known.cases.values())}
    try:
        for chk in exercise.shipped.CHECKS.of(tier=PUBLIC):
            planner = PlanningStudent(reference)
            run_check(chk, planner, None)
            for call in (c for c in planner.calls if not c.variable):
                try:
                    right = reference[call.name](*call.args, **call.kwargs)
                except ValueError:  # a check that feeds invalid input on purpose
                    continue
                yield call, right
    finally:
        if known is not None:
            known.table = saved


def _probes(calls):
    from ..selfcheck.fingerprints import probe_key

    return [(probe_key(f, args, kwargs), (f, args, kwargs)) for f, args, kwargs in calls]


def fingerprints_text(exercise):
    """fingerprints.json for the released self-check: for each call a public check makes,
    the hash of each catalogued wrong variant's result (never the variants themselves)."""
    from ..grader.diagnosis import catalogue, variant_outputs
    from ..selfcheck.fingerprints import fingerprint, probe_key

    probes, named = {}, set()
    for call, right in _public_calls(exercise):
        right, table = fingerprint(right), {}
        for mistake, output in variant_outputs(exercise, call.name, call.args, call.kwargs):
            wrong = fingerprint(output)
            if wrong is not None and wrong != right:
                table.setdefault(wrong, mistake.id)
        if table:
            probes[probe_key(call.name, call.args, call.kwargs)] = table
            named |= set(table.values())
    hints = {m.id: {"zh": m.zh, "en": m.en} for ms in catalogue(exercise).values() for m in ms
             if m.id in named}
    return json.dumps({"probes": probes, "hints": hints}, ensure_ascii=False, indent=1,
                      sort_keys=True) + "\n"


def known_answers_text(exercise):
    """known_answers.json for the released self-check: the reference's result for each
    call a public check makes (fixed, public inputs)."""
    from ..selfcheck.fingerprints import probe_key

    table = {probe_key(call.name, call.args, call.kwargs): encode(right)
             for call, right in _public_calls(exercise)}
    return json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n"


def layout_text(exercise):
    """release_layout.json's text: what the tampering check compares submissions with."""
    return json.dumps(layout_of(build_notebook(exercise)), ensure_ascii=False, indent=1) + "\n"


def exercise_files(exercise):
    """{path: text} of the files the build generates for the exercise's folder."""
    return {exercise.layout_file: layout_text(exercise),
            exercise.fingerprints_file: fingerprints_text(exercise),
            exercise.known_answers_file: known_answers_text(exercise)}


def write_exercise_files(exercise):
    """Rewrite the exercise's generated files (an author's step, before committing)."""
    for path, text in exercise_files(exercise).items():
        path.write_text(text, encoding="utf-8")
    return list(exercise_files(exercise))


def write_source(exercise, course_dir, assignments=None):
    """Write source/<assignment>/ for each of the exercise's assignments; return the folders."""
    folders = []
    for assignment in assignments or exercise.assignments:
        target = Path(course_dir) / "source" / assignment
        files = source_files(exercise, assignment)  # first: a build that fails deletes nothing
        if target.exists():
            shutil.rmtree(target)
        for relative, text in files.items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        folders.append(target)
    return folders


def generate_release(course_dir, assignment):
    """Run nbgrader's generate_assignment in ``course_dir``; return the release folder."""
    command = nbgrader_command("generate_assignment", assignment, "--force", "--log-level=WARN")
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
