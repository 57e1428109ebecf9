"""Running checks and summarising them, for the self-check and the grader alike.

In the release, the exercise's shipped package sits beside this module as ``exercise``
(see authoring/build.py); ``check`` and ``main`` take its checks from there.
"""

import sys
import unicodedata
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from .failed_call import Watched
from .fingerprints import first_named, name_mistake, with_mistake
from .imports import allowed_by, foreign_in_cells, foreign_in_namespace, written_modules
from .known_answers import by_call
from .framework import (PUBLIC, CheckFailed, InProcessStudent, NotDefinedYet,
                        NotImplementedYet, short)
from .inert_ipython import kernel_namespace
from .notebook import graded_cells, run_cells
from .structure import structural_namer, structures_of
from .wording import language, say

PASSED, FAILED, NOT_IMPLEMENTED = "passed", "failed", "not yet implemented"
# Not the same as not written yet: a name the check needs is not defined (NotDefinedYet),
# because the cell that defines it has not run. selfcheck.py, which runs every cell of
# the saved notebook, calls the same finding "not defined".
NOT_RUN, NOT_DEFINED = "not run yet", "not defined"
# The quiz's key stays with the instructor: its public checks see only that every question
# has an answer of the right form, so its row can say no more than that.
ANSWERED = "answered"
QUIZ = "quiz"
DONE = (PASSED, ANSWERED)  # all the self-check can tell: nothing is left to do


@dataclass
class Result:
    check: object
    status: str
    message: str = ""
    tags: tuple = ()  # the diagnosed mistakes, when the check names one
    ruled_out: frozenset = frozenset()  # catalogued mistakes this failure is not
    unnamed: str = ""  # the message without its "Likely mistake", when it has one

    @property
    def score(self):
        return self.check.points if self.status == PASSED else 0.0


def run_check(check, student, rng=None, namer=None):
    """A check passes by returning; what it returns (if anything) is a note to show.

    A failure that names no mistake itself is given to ``namer`` with the call it failed
    on (also one that raised) and the student's handle, for calling it again on a batch
    item: from fingerprints or the wrong variants, else from the structure of the result.
    """
    watched = Watched(student)
    try:
        note = check.run(watched, rng)
    except NotDefinedYet as missing:
        return Result(check, NOT_RUN, str(missing))
    except NotImplementedYet as missing:
        return Result(check, NOT_IMPLEMENTED, str(missing))
    except CheckFailed as failure:
        message, tags = str(failure), failure.tags
        unnamed = getattr(failure, "unnamed", "")
        ruled_out = frozenset(getattr(failure, "ruled_out", ()))
        failed = None if tags or not namer else watched.failed_call(failure)
        named = namer(*failed, language(), student=student) if failed else None
        if named:
            ruled_out |= frozenset(named[2] if len(named) > 2 else ())
        if named and named[0]:
            tags, unnamed = (named[0],), message
            message = with_mistake(message, named[1], language())
        return Result(check, FAILED, short(message, 600), tags, ruled_out,
                      short(unnamed, 600) if unnamed else "")
    except Exception as error:  # noqa: BLE001 - an odd result must not stop the others
        return Result(check, FAILED, say("unchecked", error=f"{type(error).__name__}: "
                                                           f"{short(str(error), 200)}"))
    return Result(check, PASSED, note if isinstance(note, str) else "")


def summarize(results):
    """One row per part, in the checks' order (the notebook's): (part, status, first
    failure message). A part with a check that could not run, for a name not defined,
    is not run yet, whatever its other checks found: running the cell comes first."""
    rows = []
    for function in dict.fromkeys(r.check.function for r in results):
        mine = [r for r in results if r.check.function == function]
        if not mine:
            continue
        first_bad = next((r for r in mine if r.status != PASSED), None)
        not_run = next((r for r in mine if r.status == NOT_RUN), None)
        if not_run is not None:
            rows.append((function, NOT_RUN, not_run.message))
        elif first_bad is None and function == QUIZ:
            rows.append((function, ANSWERED, say("quiz-answered")))
        elif first_bad is None:
            rows.append((function, PASSED, say("all-pass", count=len(mine))))
        else:
            passed = sum(r.status == PASSED for r in mine)
            status = NOT_IMPLEMENTED if passed == 0 and first_bad.status == NOT_IMPLEMENTED else FAILED
            detail = first_bad.message if status == NOT_IMPLEMENTED else say(
                "failed-check", check=_check_label(first_bad.check), message=first_bad.message)
            rows.append((function, status, detail))
    return rows


def _check_label(check):
    """The check's title without its function's name, which the table's row already
    shows: what the check looks at, not a finding."""
    title = check.title()
    return title.removeprefix(f"{check.function}: ")


def display_width(text):
    """The columns ``text`` takes in a terminal or a notebook: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# The table's own words in the Chinese release keep the English beside them: the lesson
# and the English release name the states in English.
TABLE_WORDS = {
    "zh": {"headers": ("函数 function", "状态 status", "说明 details"),
           PASSED: "通过 passed", FAILED: "未通过 failed", NOT_IMPLEMENTED: "未实现 not yet implemented",
           NOT_RUN: "未运行 not run yet", NOT_DEFINED: "未定义 not defined",
           ANSWERED: "已作答 answered",
           # the summary, by (how many parts, how many pass): one, all, none, some
           "summary": {"one": "{passed} of 1 part passes. / 这 1 个部分{verdict}。",
                       "one-passes": "通过了", "one-fails": "还没有通过",
                       "all": "{passed} of {total} parts pass. / {total} 个部分全部通过。",
                       "none": "{passed} of {total} parts pass. / {total} 个部分都还没有通过。",
                       "some": "{passed} of {total} parts pass. / {total} 个部分中有 {passed} "
                               "个通过。"}},
    "en": {"headers": ("function", "status", "details"),
           PASSED: PASSED, FAILED: FAILED, NOT_IMPLEMENTED: NOT_IMPLEMENTED, NOT_RUN: NOT_RUN,
           NOT_DEFINED: NOT_DEFINED, ANSWERED: ANSWERED,
           "summary": {"one": "{passed} of 1 part passes.", "one-passes": "", "one-fails": "",
                       "all": "{passed} of {total} parts pass.",
                       "none": "{passed} of {total} parts pass.",
                       "some": "{passed} of {total} parts pass."}},
}


def summary_line(passed, total, chosen=None):
    """"3 of 9 parts pass.", "1 of 1 part passes.", and in Chinese as Chinese says it."""
    words = TABLE_WORDS[chosen or language()]["summary"]
    if total == 1:
        verdict = words["one-passes" if passed else "one-fails"]
        return words["one"].format(passed=passed, verdict=verdict)
    kind = "all" if passed == total else "none" if passed == 0 else "some"
    return words[kind].format(passed=passed, total=total)


def format_table(rows, chosen=None):
    """A plain-text table in the rows' order, which is the notebook's and the same from
    run to run (whatever passes or fails), aligned for Chinese text too."""
    words = TABLE_WORDS[chosen or language()]
    shown = [(name, words[status], detail) for name, status, detail in rows]
    headers = words["headers"]
    widths = [max(display_width(str(r[i])) for r in shown + [headers]) for i in range(2)]
    lines = []
    for row in [headers] + shown:
        cells = [str(row[i]) + " " * (widths[i] - display_width(str(row[i]))) for i in range(2)]
        lines.append("  ".join(cells + [str(row[2])]))
    lines.insert(1, "-" * (sum(widths) + 4 + 40))
    passed = sum(r[1] in DONE for r in rows)
    lines.append("\n" + summary_line(passed, len(rows), chosen))
    return "\n".join(lines)


def namer_for(shipped):
    """The self-check's namer for the exercise's shipped package ``shipped``: a catalogued
    mistake by its fingerprint first, else a diagnosis from the structure of the wrong
    result against the known answer of that public call."""
    folder = str(Path(shipped.__file__).parent)
    return first_named(partial(name_mistake, folder),
                       structural_namer(structures_of(shipped), partial(by_call, folder)))


def shipped():
    """(the public checks, their namer) of the exercise shipped beside this package."""
    from . import exercise  # exists in the release only

    return exercise.CHECKS, namer_for(exercise)


def shipped_imports():
    """What the exercise shipped beside this package lets students import."""
    from . import exercise  # exists in the release only

    return allowed_by(exercise)


def kernel_imports_row(namespace, functions=()):
    """The imports row for a kernel's ``namespace`` (limited to what ``functions`` use,
    when named): its modules that grading cannot offer, but for those a cell of the
    kernel wrote itself (%%writefile, which grading writes too)."""
    history = namespace.get("In")  # the kernel's inputs, as IPython read them
    written = written_modules(enumerate(history if isinstance(history, list) else ()))
    foreign = foreign_in_namespace(namespace, shipped_imports(), functions or None)
    return imports_row({module: ", ".join(names) for module, names in foreign.items()
                        if module not in written})


def imports_row(foreign):
    """The table's row for imports that grading cannot honour ({module: where}), if any:
    the student hears of them before submitting, and the self-check is not green."""
    if not foreign:
        return []
    offered = ", ".join(shipped_imports())
    detail = say("foreign-import", modules=", ".join(sorted(foreign)), offered=offered,
                 where="; ".join(f"{m}: {w}" for m, w in sorted(foreign.items())))
    return [(say("imports-row"), FAILED, detail)]


def student_of(namespace, saved=False, checks=None):
    """The in-process handle on ``namespace``, knowing the exercise's functions (those of
    ``checks``; by default the exercise shipped alongside), so that a composite whose
    piece is not defined is not run yet rather than wrong."""
    checks = shipped()[0] if checks is None else checks
    return InProcessStudent(namespace, parts={c.function for c in checks}, saved=saved)


def validate_note(rows):
    """What ``check("<part>")`` writes on stderr when a row is not done, so that nbgrader's
    Validate button scores the cell 0: a short line for each such row, then the score;
    None when every row is done. The table above it already says what is wrong, so the
    note only points there."""
    said = {FAILED: "cell-failed", NOT_IMPLEMENTED: "cell-not-written", NOT_RUN: "cell-not-run"}
    listed = [say("cell-not-answered" if status == NOT_IMPLEMENTED and name == QUIZ
                  else said[status], name=name)
              for name, status, _ in rows if status in said]
    if not listed:
        return None
    return "\n".join(listed + [say("validate-scores-zero")])


def public_results(student, functions=None, checks=None, namer=None):
    """The public checks' results; by default those of the exercise shipped alongside."""
    if checks is None:
        checks, namer = shipped()
    chosen = [c for c in checks if c.tier == PUBLIC
              and (functions is None or c.function in functions)]
    return consistent([run_check(c, student, namer=namer) for c in chosen])


def consistent(results):
    """``results`` with no catalogued mistake named where another failure of the same
    function rules it out: where the mistake's variant gave a result other than the
    student's. A name that fits one input by coincidence (dividing by √T_q where T_q is
    1 looks like no scaling at all) must not stand against the inputs it does not fit."""
    ruled_out = {}
    for result in results:
        ruled_out.setdefault(result.check.function, set()).update(result.ruled_out)
    return [replace(result, message=result.unnamed, tags=(), unnamed="")
            if result.tags and result.unnamed
            and result.tags[0] in ruled_out[result.check.function] else result
            for result in results]


def check(*functions):
    """Self-check the functions as they are defined right now in the calling notebook.

    It never raises, so Run All reaches the end of the notebook. ``check()`` prints the
    table for everything. ``check("<part>")``, in a test cell, prints that part's row and
    then tells nbgrader's Validate button how it went: a part that fails, is not written
    yet or has not run writes a short note to stderr, which Validate scores 0 (a failing
    score, see nbgrader.utils.determine_grade), and which points to the table instead of
    saying its message twice; a pass gives nothing.
    """
    namespace = sys._getframe(1).f_globals
    rows = summarize(public_results(student_of(namespace), functions or None))
    rows += kernel_imports_row(namespace, functions)
    print(format_table(rows))
    note = validate_note(rows) if functions else None
    if note:
        print(note, file=sys.stderr)
    return None


def main(argv=None):
    """python selfcheck.py NOTEBOOK.ipynb: check the saved notebook; exit 1 while anything fails."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python selfcheck.py NOTEBOOK.ipynb", file=sys.stderr)
        return 2
    try:
        cells = graded_cells(argv[0])
    except (OSError, ValueError) as error:  # read_notebook says why in one line
        print(f"cannot read {argv[0]}: {error}", file=sys.stderr)
        return 2
    namespace = kernel_namespace()
    for cell_id, problem in run_cells(cells, namespace).items():
        print(f"cell {cell_id} did not run: {short(problem)}", file=sys.stderr)
    rows = [(name, NOT_DEFINED if status == NOT_RUN else status, detail)
            for name, status, detail in summarize(public_results(student_of(namespace,
                                                                            saved=True)))]
    foreign = {}
    for cell_id, line, module in foreign_in_cells(cells, shipped_imports()):
        foreign.setdefault(module, []).append(f"{cell_id}:{line}")
    rows += imports_row({module: ", ".join(places) for module, places in foreign.items()})
    print(format_table(rows))
    return 0 if all(row[1] in DONE for row in rows) else 1
