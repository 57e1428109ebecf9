"""Grading one submission: run every check against the isolated student, score it.

The result is a ``Result`` (see result.py): its score, an ``Outcome`` per check, and the
kit's own facts (seed, versions, isolation layers) in its ``extra``.
"""

import hashlib
import secrets
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import __version__
from ..phases import NOTES, PLANNING, READING, measuring, phase, rounded
from ..exercise import current, of_result
from ..sandbox import EncodedBatch, IsolatedStudent, Limits
from ..sandbox.hidden import hide
from ..sandbox.process import make_spare, start_zygote
from ..selfcheck.framework import HIDDEN
from ..selfcheck.notebook import graded_cells_of
from ..selfcheck.notebook_file import read_notebook
from ..selfcheck.runner import FAILED, NOT_IMPLEMENTED, PASSED, consistent
from ..selfcheck.wording import decide, pick
from .hidden_checks import hidden_checks
from .planning import batch_groups, plan, run_planned
from .result import Outcome, Result, Status
from .imports import import_notes, slow_imports
from .style import style_notes
from .tampering import collect_findings, find_tampering

VISIBILITY = {"public": "visible", HIDDEN: "after_published"}
KIT = Path(__file__).resolve().parents[1]
GRADING_ROOMS = ("selfcheck", "grader", "sandbox")  # the engine's code that decides a grade
# Beside the reference, the grader's own secrets: the probe child must fail to open them
# too (the kit's folder, which holds them, is hidden as a whole).
hide(sentinels=[KIT / "grader" / "hidden_checks.py", Path(__file__).resolve()])


def graders_hash(exercise=None):
    """Identifies what decides a grade: the engine's grading code and the exercise's
    checks, cases, layout and reference (not its lesson text); a result records it."""
    return _graders_hash(exercise or current())


@lru_cache(maxsize=4)
def _graders_hash(exercise):
    named = [(path.relative_to(KIT), path) for room in GRADING_ROOMS
             for path in sorted((KIT / room).rglob("*.py"))]
    named += [(Path(exercise.name) / path.relative_to(exercise.folder), path)
              for path in exercise.grading_files() if path.is_relative_to(exercise.folder)]
    named.append((Path("reference"), exercise.reference_file))
    digest = hashlib.sha256()
    for name, path in named:
        digest.update(name.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def ordered_checks(exercise=None):
    """The exercise's checks, public and hidden, in the notebook's order (public first
    within each part). Built once per exercise and process."""
    return _ordered_checks(exercise or current())


@lru_cache(maxsize=8)
def _ordered_checks(exercise):
    everything = list(exercise.shipped.CHECKS) + list(hidden_checks(exercise))
    rank = {part: index for index, part in enumerate(exercise.parts)}
    return sorted(everything, key=lambda chk: (rank[chk.function], chk.tier != "public"))


def seeded(seed):
    """``rng_for(check)``: the generator of a check's hidden inputs, from the run's seed and
    the check's name, so adding or moving a check changes no other check's inputs."""
    def rng_for(chk):
        return np.random.default_rng(_seed_sequence(seed, chk.name))
    return rng_for


@lru_cache(maxsize=4096)
def _seed_sequence(seed, name):
    # Working out a SeedSequence from its entropy is most of a generator's start, and a
    # grading process asks for each check's generator again for every submission.
    number = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return np.random.SeedSequence([seed, number])


def prepared_for(seed, exercise=None):
    """(plans, their calls in batches encoded for the child, usually one) under ``seed``.
    A run grades every submission with one seed, so each grading process works this out
    once (see planning.py)."""
    return _prepared_for(seed, exercise or current())


@lru_cache(maxsize=4)
def _prepared_for(seed, exercise):
    checks, reference = ordered_checks(exercise), exercise.reference
    plans = plan(checks, reference, seeded(seed))
    batches = []
    for positions in batch_groups(plans, reference):
        calls = [call for position in positions for call in plans[position]]
        batches.append((positions, EncodedBatch(calls, reference, shared=True)))
    return plans, batches


def warm_up(seed, exercise=None):
    """Ready this process to grade with ``seed``: the checks planned and a confined child
    waiting, as after its first submission. A class run's workers do this as they start,
    while the run's main process reads the gradebook, so that work is not on the run's
    wall clock."""
    exercise = exercise or current()
    try:
        limits = _child_limits(exercise)
        start_zygote(limits)  # it imports numpy while this process plans
    except Exception:  # noqa: BLE001 - the first submission starts its own, and says why not
        limits = None
    prepared_for(int(seed), exercise)
    if limits is not None:
        try:
            make_spare(limits)
        except Exception:  # noqa: BLE001 - as above
            pass


def grade_cells(cells, seed=None, limits=None, tampering=(), language="zh",
                exercise=None) -> Result:
    """Grade code cells [(cell id, source)]; return a Result, its feedback in
    ``language`` ("zh" or "en") where a diagnosis names a mistake.

    Never raises for anything a submission does: a failure of the grading itself is
    reported in the result's status, never as a silent zero.
    """
    seed = secrets.randbits(63) if seed is None else int(seed)
    exercise = exercise or current()
    with measuring() as watch:
        try:
            result = _grade(cells, seed, limits, list(tampering), language, exercise)
        except Exception as error:  # noqa: BLE001 - one submission must not stop a batch
            result = replace(
                _result([], seed, {"error": f"{type(error).__name__}: {error}"}, exercise),
                status=Status.FAILED,
                output=f"mha-kit could not grade this submission: {type(error).__name__}")
        result = result.with_extra(seconds=rounded(watch.total()))  # see phases.py
    # Student code writes into the result (exception text, load errors): on both doors
    # every string is valid UTF-8 and bounded before any file or gradebook holds it.
    return result.cleaned()


def isolated_student(cells, exercise, limits=None):
    """The grader's handle on a submission's ``cells``, in a child that may import what
    the exercise lets students import, and whose stand-ins answer by meaning."""
    limits = _child_limits(exercise, limits)
    with phase(NOTES):
        warm = slow_imports(cells, exercise.student_imports)
    return IsolatedStudent(cells, exercise.reference, limits, exercise.functions, warm)


def _child_limits(exercise, limits=None):
    return replace(limits or Limits.from_environment(), packages=exercise.student_imports)


def _grade(cells, seed, limits, tampering, language, exercise) -> Result:
    checks = ordered_checks(exercise)
    with isolated_student(cells, exercise, limits) as student:
        with phase(PLANNING):
            plans, encoded = prepared_for(seed, exercise)
        results = consistent(run_planned(checks, plans, student, seeded(seed), encoded,
                                         language, exercise))
        tests = [Outcome(chk.name, result.score, chk.points, result.status,
                         result.message or "passed", VISIBILITY[chk.tier], tuple(result.tags))
                 for chk, result in zip(checks, results)]
        with phase(NOTES):
            notes = {"style": style_notes(cells, exercise, language),
                     "imports": import_notes(cells, exercise, language)}
        extra = {"load_errors": student.load_errors, "crashes": student.crashes,
                 "isolation": student.layers, "confinement": student.confinement,
                 "tampering": tampering, "language": language, **notes}
    return _result(tests, seed, extra, exercise)


UNCONFINED_NOTE = "graded unconfined: student code could read the course"


def needs_review(result: Result) -> list[str]:
    """Why a person should look at a grade, one line each (tampering, a failure, grading
    without confinement); empty when nothing calls for it. Both doors flag these."""
    from ..selfcheck.notebook_file import one_line

    extra = result.extra
    problems = list(extra.get("tampering") or [])
    if result.status is not Status.GRADED:
        problems.append(one_line(f"{result.status.value}: {extra.get('error') or '?'}", 300))
    if extra.get("confinement") == "plain":
        problems.append(UNCONFINED_NOTE)
    return problems


def _result(tests: list[Outcome], seed, extra: dict, exercise=None) -> Result:
    exercise = exercise or current()
    parts = {part: sum(t.score for t in tests if t.part == part) for part in exercise.parts}
    return Result(round(sum(t.score for t in tests), 6), tuple(tests),
                  dict(extra, seed=seed, parts=parts, mhakit_version=__version__,
                       exercise=exercise.name, graders_hash=graders_hash(exercise),
                       max_score=sum(t.max_score for t in tests)))


def unreadable(reason: str, seed=None, exercise=None) -> Result:
    """The result for a file that is not a notebook: zero, with the reason."""
    return replace(_result([], seed, {"error": reason}, exercise), status=Status.UNREADABLE,
                   output=f"This submission could not be graded: {reason}")


def unreadable_reason(error):
    """Why a file could not be read as a notebook, in words, from the error that reading
    it raised: both doors say the same of the same file."""
    if isinstance(error, (OSError, ValueError)):
        return str(error)
    return f"the notebook's structure could not be read ({type(error).__name__}: {error})"


def file_hash(path):
    """The file's first 16 hex digits of SHA-256, read in pieces (a file of any size)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for piece in iter(lambda: handle.read(1 << 20), b""):
                digest.update(piece)
    except OSError:
        return None
    return digest.hexdigest()[:16]


def grade_notebook(path, seed=None, limits=None, language=None, exercise=None) -> Result:
    return read_and_grade(path, seed, limits, language, exercise)[0]


def read_and_grade(path, seed=None, limits=None, language=None,
                   exercise=None) -> tuple[Result, dict | None]:
    """(result, the notebook as read, or None when it could not be read), graded against
    ``exercise`` (by default ``current()``). The feedback speaks ``language`` when given,
    else the notebook's own."""
    notebook, exercise = None, exercise or current()
    with measuring() as watch:
        try:
            with phase(READING):
                notebook = read_notebook(path)  # bounded: size, depth, containers
                cells = graded_cells_of(notebook, exercise.kit_sources)
                tampering = (find_tampering(notebook, exercise)
                             + collect_findings(Path(path).parent))
                language = decide(language, notebook)
        # A reason why a file is unreadable may quote the file: it is cleaned like a result
        # of grade_cells, valid UTF-8 and bounded.
        except Exception as error:  # noqa: BLE001 - a notebook's shape must not stop a batch
            result = unreadable(unreadable_reason(error), seed, exercise).cleaned()
        else:
            result = grade_cells(cells, seed, limits, tampering, language, exercise)
        with phase(READING):
            result = result.with_extra(submission_hash=file_hash(path))  # lets a run resume
    return result.with_extra(seconds=rounded(watch.total())), notebook


def grade_notebook_bytes(name, data, seed=None, language=None, exercise=None) -> Result:
    """For a grading machine that does not share the submissions' folder (Dask)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mhakit-remote-") as folder:
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        return grade_notebook(path, seed, language=language, exercise=exercise)


@lru_cache(maxsize=4)
def _titles(language, exercise):
    return {chk.name: chk.title(language) for chk in ordered_checks(exercise)}


def title_of(test: Outcome, result: Result) -> str:
    """A test's name as the student reads it: in the result's language. (results.json
    keeps the English name in both, for scripts.)"""
    titles = _titles(decide(result.language), of_result(result))
    return titles.get(test.name, test.name)


def part_summary(result: Result, part: str) -> str:
    """Feedback text for one part: each check's outcome, without any hidden input. The
    0-point checks that failed come last, indented under a line that says why they cost
    nothing, so that a ✗ that cost points never looks like one that did not."""
    tests = result.tests_of(part)
    free = [t for t in tests if not t.max_score and t.status == FAILED]
    lines = [_outcome(test, result) for test in tests if test not in free]
    if free:
        lines.append(free_checks_heading(result, part))
        lines += ["  " + _outcome(test, result) for test in free]
    extra = result.extra
    for notes in (extra.get("imports", {}), extra.get("style", {})):
        if lines and notes.get(part):
            lines.append(notes[part])
    return "\n".join(lines)


def _outcome(test: Outcome, result: Result) -> str:
    mark = {PASSED: "✓", NOT_IMPLEMENTED: "·"}.get(test.status, "✗")
    points = f" [{test.score:g}/{test.max_score:g}]" if test.max_score else ""
    detail = "" if test.output == "passed" else f" — {test.output}"
    return f"{mark} {title_of(test, result)}{points}{detail}"


FREE = {  # (Chinese, English)
    "full": ("不扣分，只作反馈：{part} 已得满分。下面的检查把你自己写的几个函数连起来运行，"
             "别的函数有错，这里也会不通过{lost}。",
             "No points lost on these (feedback only): {part} earned all its points. These "
             "checks run your own functions together, so a mistake in another function "
             "fails them too{lost}."),
    "short": ("不扣分，只作反馈：让 {part} 在上面扣分的错误在下面又出现了，也可能是它们运行的"
              "你的别的函数有错{lost}。",
              "No points lost on these (feedback only): they fail on the mistake that cost "
              "{part} points above, or on one in another of your functions that they "
              "run{lost}."),
    "lost": ("（丢了分的是 {names}）", "; {names} lost points"),
    "and": ("、", ", "),
}


def free_checks_heading(result: Result, part: str) -> str:
    """Why the 0-point checks of ``part`` that failed cost nothing, naming the functions
    before it that lost points: the checks of a part run only what the notebook taught
    up to it, so the mistake that fails them is in one of those or in ``part`` itself."""
    exercise = of_result(result)
    language = decide(result.language)
    earned = result.parts
    names = exercise.function_names
    before = names[:names.index(part)] if part in names else ()
    lost = [name for name in before if earned.get(name, 0) < exercise.part_points(name)]
    said = pick(FREE["lost"], language).format(names=pick(FREE["and"], language).join(lost))
    full = earned.get(part, 0) >= exercise.part_points(part)
    return pick(FREE["full" if full else "short"], language).format(
        part=part, lost=said if lost else "")
