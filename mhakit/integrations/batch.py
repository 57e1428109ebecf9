"""Grading a folder of submissions: discovery, parallel grading, results on disk."""

import json
import os
import secrets
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from .. import __version__
from . import sinks
from ..exercise import course_exercises, current
from ..phases import WRITING, Stopwatch
from ..grader.result import Result, Status
from ..grader.grading import (file_hash, grade_notebook, grade_notebook_bytes, graders_hash,
                              unreadable)
from ..selfcheck.notebook_file import one_line, read_bounded, scan_json
from .sink import Run, Taken
from .workers import pool_options, started_pool
from .sinks.grades_csv import csv_columns, grade_row

# Files the batch writes next to the students' folders: no student's folder may take them.
RESERVED = sinks.RESERVED


@dataclass
class Submissions:
    """What a folder of submissions holds. ``paths``: {student: the notebook to grade};
    ``problems``: {student: why none is graded}; ``notes``: {student: [one-line notes]};
    ``folders``: {student: the folder's own name, when the student is shown otherwise};
    ``earlier``: {student: earlier submissions of the exercise, such as the other
    language's, which only the gradebook receives}."""
    paths: dict = field(default_factory=dict)
    problems: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    folders: dict = field(default_factory=dict)
    earlier: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.paths) + len(self.problems)


def shown_name(name):
    """A file name as text that any file can hold: itself when it is UTF-8, else its
    bytes, the undecodable ones escaped (b"eve\\xff" is shown as "eve\\xff")."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def _notebooks(folder):
    """{the student's folder name: the notebooks in it} under ``folder``."""
    found = {}
    for path in sorted(folder.rglob("*.ipynb")):
        parts = path.relative_to(folder).parts
        if ".ipynb_checkpoints" in parts or not path.is_file():
            continue
        folder_name = path.stem if len(parts) == 1 else parts[0]
        found.setdefault(folder_name, []).append(path)
    return found


def _places(exercise):
    """Where an exercise's notebook lies in a student's folder: one per assignment."""
    return {os.path.join(assignment, exercise.notebook) for assignment in exercise.assignments}


def exercise_of(folder):
    """The exercise whose submissions ``folder`` holds: of the exercises the course holds,
    the one whose assignments name the folders of nbgrader's layout
    (submitted/<student>/<assignment>/); the default exercise (``current``) for a flat
    folder, or assignments no exercise names. One run grades one exercise: a folder with
    the assignments of several is a ValueError that names them."""
    folder = Path(folder)
    held = {path.relative_to(folder).parts[1] for paths in _notebooks(folder).values()
            for path in paths if len(path.relative_to(folder).parts) == 3}
    found = {exercise: sorted(held & set(exercise.assignments))
             for exercise in course_exercises()}
    found = {exercise: named for exercise, named in found.items() if named}
    if len(found) > 1:
        each = "; ".join(f"{exercise.name} ({', '.join(named)}) in {exercise.folder}"
                         for exercise, named in found.items())
        raise ValueError(f"{folder} holds the assignments of {len(found)} exercises: {each}. "
                         "Grade one at a time with `mhakit --exercise FOLDER grade`")
    return next(iter(found), None) or current()


def discover(folder, exercise):
    """The submissions of ``exercise`` under nbgrader's submitted/<student>/<assignment>/
    or a flat folder.

    A student folder with several notebooks is graded on the one named like the class's
    notebook (the name most students' notebooks have, e.g. mha/mha.ipynb), as nbgrader
    would; the others are noted. A notebook where another exercise of the course keeps
    its own is left to that exercise's run: a student with no other is not in this one.
    Never raises for what one student's folder holds."""
    folder = Path(folder)
    found = _notebooks(folder)
    # The class's notebook: where most students keep theirs, relative to their folder,
    # or any of the exercise's own (one assignment per language: mha/, mha_en/).
    where = Counter(place for paths in found.values()
                    for place in {_place(folder, path) for path in paths})
    common = where.most_common(1)[0][0] if where else None
    others = {place for other in course_exercises() if other is not exercise
              for place in _places(other)} - _places(exercise)
    class_places = ({common} - others) | _places(exercise)
    wanted = common if common in class_places else os.path.join(exercise.default_assignment,
                                                                  exercise.notebook)
    found_notebooks = Submissions()
    for folder_name, paths in found.items():
        paths = [path for path in paths if _place(folder, path) not in others]
        if not paths:
            continue
        student = _unique(shown_name(folder_name), found_notebooks)
        if student != folder_name:
            found_notebooks.folders[student] = folder_name
        notes = []
        if shown_name(folder_name) != folder_name:
            notes.append(f"the folder name is not UTF-8 text; shown as {student}")
        elif student != folder_name:
            notes.append(f"the folder {folder_name} is shown as {student}")
        chosen, earlier, skipped = _choose(folder, paths, class_places)
        names = ", ".join(shown_name(str(path.relative_to(folder))) for path in skipped)
        if chosen is None:
            found_notebooks.problems[student] = (
                f"{len(paths)} notebooks and none of them is {shown_name(wanted)}: "
                f"{names}")
        else:
            found_notebooks.paths[student] = chosen
            if earlier:
                found_notebooks.earlier[student] = earlier
                notes.append(f"submitted {len(earlier) + 1} times; graded the latest, "
                             f"{shown_name(_place(folder, chosen))}")
            if names:
                notes.append(f"not graded, also in the folder: {names}")
        if notes:
            found_notebooks.notes[student] = notes
    return found_notebooks


def _choose(folder, paths, class_places):
    """(the notebook to grade or None, the student's earlier submissions of the
    exercise, the other notebooks): of several at the class's places, the latest."""
    if len(paths) == 1:
        return paths[0], [], []
    candidates = sorted((path for path in paths if _place(folder, path) in class_places),
                        key=_submitted_at)
    if not candidates:
        return None, [], paths
    return candidates[-1], candidates[:-1], [p for p in paths if p not in candidates]


def _place(folder, path):
    """Where a notebook lies inside its student's folder: ("mha", "mha.ipynb")."""
    parts = path.relative_to(folder).parts
    return os.path.join(*parts[1:]) if len(parts) > 1 else None


def _submitted_at(path):
    """When a notebook was submitted: nbgrader's timestamp.txt next to it, else the
    file's modification time (seconds since the epoch)."""
    from datetime import datetime, timezone

    try:
        text = (path.parent / "timestamp.txt").read_text(encoding="utf-8").strip()
        stamp = datetime.fromisoformat(text.removesuffix(" UTC").removesuffix("Z"))
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()
    except (OSError, ValueError, UnicodeDecodeError):
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0


def _unique(name, taken):
    """``name``, or ``name~2``, ``name~3``...: never a file the batch writes, never a
    student already named."""
    candidate, number = name, 1
    while (candidate in RESERVED or candidate in taken.paths or candidate in taken.problems
           or candidate in (".", "..")):
        number += 1
        candidate = f"{name}~{number}"
    return candidate


def grade_folder(folder, out, seed=None, jobs=None, quiet=False, fresh=False, dask=None,
                 gradebook=None, language=None, exercise=None):
    """Grade every submission, and hand each result to the sinks (sinks/): by default
    <out>/<student>/results.json and feedback, then grades.csv, a report and timing.json.

    A result already on disk is kept when it is for the same notebook, graded by the
    same graders and kit version (and the same seed, when one is given): a run that was
    stopped halfway resumes where it stopped, with the seed of the results it kept. A new
    run draws a new seed. ``fresh`` regrades everything. ``dask``, a scheduler's address,
    spreads the grading over a Dask cluster instead of local processes.
    ``gradebook``, an nbgrader course folder, also puts every grade into its gradebook and
    autograded/ folder, as ``nbgrader autograde`` would. ``language`` ("zh" or "en") sets
    the feedback's language; by default each notebook's own. ``exercise``: the exercise
    whose submissions are graded, by default the one whose assignments the folder holds
    (``exercise_of``); every part of the run is handed it.

    Whatever one submission holds, the class finishes: a student whose notebook cannot be
    read or graded gets a status and a one-line reason, and everyone else is graded.

    Scripts that call this must guard their top level with ``if __name__ == "__main__":``,
    since the grading workers are started afresh (multiprocessing's forkserver).
    """
    if gradebook is not None:
        from .gradebook import check_submitted_folder
        check_submitted_folder(folder, gradebook)
    exercise = exercise or exercise_of(folder)
    found = discover(folder, exercise)
    if not len(found):
        raise ValueError(f"no notebooks found under {folder}")
    submissions = found.paths
    out = Path(out)
    results = {} if fresh else {student: kept for student, path in submissions.items()
                                if (kept := reusable(out / student / "results.json", path, seed,
                                                     exercise, language))}
    # One seed for the whole run: every student meets the same hidden inputs, and the
    # checks are planned once per worker instead of once per submission. A resumed run
    # goes on with the seed of the results it keeps; those of another seed are regraded.
    if seed is None and results:
        seed = Counter(r.seed for r in results.values()).most_common(1)[0][0]
        results = {s: r for s, r in results.items() if r.seed == seed}
    run_seed = secrets.randbits(63) if seed is None else seed
    todo = {student: path for student, path in submissions.items() if student not in results}
    # The workers start first, and ready themselves while this process reads the gradebook.
    pool = started_pool(jobs, len(todo), run_seed, exercise) if todo and not dask else None
    with pool or nullcontext():  # graded() shuts it down; this, if anything fails before
        book = None if gradebook is None else _opened_gradebook(gradebook, found)
        notes = {student: list(found.notes.get(student, []))
                 for student in set(submissions) | set(found.problems)}
        for student, reason in (book.excluded.items() if book else ()):
            notes[student].append(reason)
        console = Console(stderr=True)
        watch = Stopwatch()  # the parent's own phase: writing what comes back
        places = sinks.for_run(Run(out, book, "dask" if dask else jobs, watch, exercise))
        if results and not quiet:
            console.print(f"resuming: {len(results)} earlier results still hold, {len(todo)} to "
                          f"grade (seed {run_seed})")
        for student, reason in found.problems.items():
            results[student] = failure(Status.UNREADABLE, reason, run_seed, exercise)
        try:
            with Progress("[progress.description]{task.description}", BarColumn(),
                          MofNCompleteColumn(), TimeRemainingColumn(), console=console,
                          disable=quiet) as progress:
                task = progress.add_task("grading", total=len(todo))
                for student, result, cells in graded(todo, run_seed, jobs, dask, exercise, book,
                                                     language, pool):
                    watch.enter(WRITING)
                    results[student] = _into(places, Taken(student, with_notes(
                        result, notes.get(student)), "graded", todo[student], cells), run_seed,
                        exercise)
                    watch.leave()
                    progress.advance(task)
            for student in sorted(set(results) - set(todo)):
                how = "found" if student in found.problems else "kept"
                results[student] = _into(places, Taken(
                    student, with_notes(results[student], notes.get(student)), how,
                    submissions.get(student)), run_seed, exercise)
            if book is not None:
                _earlier_into_gradebook(found.earlier, book, run_seed, jobs, dask, exercise,
                                        language)
        finally:
            if book is not None:
                book.close()
    for place in places:
        place.finish(results)
    return dict(sorted(results.items()))


def _opened_gradebook(course, found):
    from .gradebook import GradebookRun

    return GradebookRun(course, found.paths,
                        [path for paths in found.earlier.values() for path in paths])


def _into(places, taken: Taken, seed, exercise) -> Result:
    """Hand one student's final result to every sink; the result as the run keeps it. A
    student whose result could not be written is not graded, and the later sinks say so."""
    for place in places:
        try:
            place.take(taken)
        except Exception as error:  # noqa: BLE001 - one student's files, not the class
            taken = replace(taken, result=with_notes(failure(
                Status.FAILED, f"its results could not be written "
                f"({type(error).__name__}: {error})", seed, exercise), taken.result.extra.get(
                    "batch_notes")))
    return taken.result


def _earlier_into_gradebook(earlier, book, seed, jobs, dask, exercise, language):
    """A student's earlier submissions of the exercise (the other language's), graded into
    their own assignments' entries, so that the gradebook holds every submission; the
    results and grades.csv keep the latest alone, which is what counts."""
    todo = {f"{student} ({path.parent.name})": path for student, paths in earlier.items()
            for path in paths if book.holds(path)}
    for key, result, cells in graded(todo, seed, jobs, dask, exercise, book, language):
        book.record(key, todo[key], result, cells)


def failure(status: Status, reason: str, seed=None, exercise=None) -> Result:
    """The result of a student who could not be graded: zero, a status and the reason."""
    status, reason = Status(status), one_line(reason, 500)
    result = unreadable(reason, seed, exercise)
    if status is not Status.UNREADABLE:
        result = replace(result, status=status,
                         output=f"mha-kit could not grade this submission: {reason}")
    return result.cleaned()


def with_notes(result: Result, notes) -> Result:
    """The result with this run's notes on the student's folder (other notebooks in it,
    a name nbgrader cannot hold), which only the batch sees."""
    extra = {key: value for key, value in result.extra.items() if key != "batch_notes"}
    if notes:
        extra["batch_notes"] = [one_line(note) for note in notes]
    return replace(result, extra=extra)


def graded(todo, seed, jobs, dask, exercise, book=None, language=None, pool=None):
    """(student, result, its cells' grades for the gradebook or None) as they finish,
    graded against ``exercise``, from local processes (``pool``, a started one, which
    this shuts down; else a new one) or a Dask cluster. A submission whose grading
    raises, or kills its worker, gets a "grading failed" result; the others are graded
    all the same."""
    def job(student, path):
        if book is not None and student not in book.excluded:
            return book.job(student, path, seed, exercise, language)
        return grade_notebook, path, seed, None, language, exercise

    def unpack(student, value):
        result, cells = value if book is not None and student not in book.excluded else (
            value, None)
        return student, result, cells

    def died(student, error):
        return student, failure(Status.FAILED, f"{type(error).__name__}: {error}", seed,
                                exercise), None

    if dask:
        try:
            from dask.distributed import Client, as_completed as finished
        except ImportError:
            raise ValueError("--dask needs dask.distributed: pip install 'mha-kit[dask]'") from None
        # Dask's own default waits 30 s in silence for a scheduler that is not there.
        connect_seconds = 5
        try:
            client = Client(dask, timeout=connect_seconds)
        except ValueError as error:
            raise ValueError(f"--dask {dask} is not a scheduler's address ({error}); give "
                             "one like tcp://scheduler:8786") from None
        except OSError:
            raise ValueError(f"no Dask scheduler answered at {dask} within {connect_seconds} "
                             "s; start one there or check the address") from None
        with client:
            futures = {}
            for student, path in todo.items():
                try:
                    data = read_bounded(path)
                except (OSError, ValueError) as error:  # too big to send: unreadable anyway
                    yield student, failure(Status.UNREADABLE, str(error), seed, exercise), None
                    continue
                futures[client.submit(grade_notebook_bytes, path.name, data, seed, language,
                                      exercise, pure=False)] = student
            for future in finished(futures):
                try:
                    yield futures[future], future.result(), None
                except Exception as error:  # noqa: BLE001
                    yield died(futures[future], error)
        return
    start = pool_options(seed, exercise)
    broken = []
    with pool or ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 1, **start) as pool:
        futures = {pool.submit(*job(student, path)): student for student, path in todo.items()}
        for future in as_completed(futures):
            student = futures[future]
            try:
                value = future.result()
            except BrokenProcessPool:  # a worker died: every unfinished future says so
                broken.append(student)
                continue
            except Exception as error:  # noqa: BLE001 - the grading of one student
                yield died(student, error)
                continue
            yield unpack(student, value)
    # Again, one at a time, so that a worker that dies again dies for its own student.
    pool = None
    try:
        for student in sorted(broken):
            pool = pool or ProcessPoolExecutor(max_workers=1, **start)
            try:
                value = pool.submit(*job(student, todo[student])).result()
            except BrokenProcessPool:
                pool.shutdown(wait=False)
                pool = None
                yield died(student, RuntimeError("the grading process died while grading it"))
            except Exception as error:  # noqa: BLE001
                yield died(student, error)
            else:
                yield unpack(student, value)
    finally:
        if pool is not None:
            pool.shutdown()


MAX_RESULT_BYTES = 16 << 20


def reusable(results_path, notebook, seed, exercise, language=None) -> Result | None:
    """The earlier result for this notebook, if it still holds; else None. A results.json
    that is not one the grader wrote (corrupt, hostile, too big) never holds."""
    try:
        data = read_bounded(results_path, MAX_RESULT_BYTES)
        scan_json(data)
        result = Result.from_json(json.loads(data.decode("utf-8")))
        extra = result.extra
        same = (extra.get("submission_hash") == file_hash(notebook)
                and extra.get("graders_hash") == graders_hash(exercise)
                and extra.get("mhakit_version") == __version__
                and (seed is None or extra.get("seed") == seed)
                and (language is None or extra.get("language") == language))
    except Exception:  # noqa: BLE001 - whatever is on disk, the student is graded again
        return None
    return result.cleaned() if same else None


def short_headers(exercise):
    """The exercise's short column names keep the table inside an 80-column terminal."""
    return {f.name: f.short for f in exercise.functions if f.short}


def wide_console():
    """Tables of results stay whole when stdout is a file or a pipe (rich assumes 80)."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=140)


def grade_table(results, exercise):
    table = Table(box=box.SIMPLE_HEAD,
                  title=f"Graded by mha-kit (auto-graded points out of {exercise.total:g})")
    columns, short = csv_columns(exercise), short_headers(exercise)
    for column in columns:
        table.add_column(short.get(column, column),
                         justify="left" if column in ("student", "status") else "right")
    for student, result in results.items():
        row = grade_row(student, result, exercise)
        table.add_row(*(Text(row[c]) for c in columns))  # a name like "[red]" is text
    return table
