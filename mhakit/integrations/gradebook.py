"""mhakit grade's results in nbgrader's gradebook and autograded/ folder.

``nbgrader autograde`` (with the kit's config) and ``mhakit grade --gradebook COURSE``
are two doors to the same grades. Both grade with the same grader and write the test
cells' outputs with ``cell_outputs``; the scores then come from nbgrader's own rules
(``determine_grade``, the checksum test for unanswered written cells). nbgrader's
autograde spends about half a second per notebook on its own steps (metadata validation,
one query per cell). Here the workers build the autograded notebooks in parallel, and
one process writes the gradebook, a hundred submissions per commit.

Like nbgrader's OverwriteCells, the autograded notebook takes every locked cell's
source and every cell's grading metadata from the gradebook's copy of the release, so
an edited test cell or changed points count for nothing. Written answers are left for
manual grading in formgrader, unless they are untouched (0 points, "No response.").
"""

import importlib.util
import json
import os
import shutil
import sys
import threading
from pathlib import Path

from ..exercise import of_result
from ..grader.result import Status
from ..selfcheck.cells import carries, grade_id_of, in_nbformat_shape, nbgrader_meta
from .cell_outputs import test_cell_outputs, test_cell_part


def import_nbgrader_meanwhile():
    """Start importing what reading and writing the gradebook needs (nbgrader's API and
    rules, nbformat: about 0.35 s of CPU) in a thread: `mhakit grade` calls this before it
    probes its confinement and starts its workers, which mostly wait on other processes.
    The run's own imports then find the modules loaded, or wait for them to be."""
    _nbgrader_package_alone()

    def load():
        try:
            import nbformat  # noqa: F401
            import nbgrader.api
            import nbgrader.utils  # noqa: F401
        except Exception:  # noqa: BLE001 - the run imports them again, and says why not
            pass

    # Not a daemon: an interpreter that exits (a refused run) waits for the import to end.
    threading.Thread(target=load, name="mhakit-import-nbgrader").start()


def _nbgrader_package_alone():
    """Register nbgrader's package without running its __init__, which imports the
    Jupyter server extensions (nbconvert, jupyter_server: about 0.25 s of a run's start)
    that the gradebook never uses; its modules (api, utils) import as usual. Only in a
    process that has not imported nbgrader yet, such as the `mhakit` command's own."""
    if "nbgrader" in sys.modules:
        return
    spec = importlib.util.find_spec("nbgrader")
    if spec is None:
        return  # not installed: the gradebook's own import says so
    package = importlib.util.module_from_spec(spec)
    sys.modules["nbgrader"] = package
    from nbgrader._version import __version__
    package.__version__ = __version__


def release_cells(course, assignment, notebook):
    """{grade_id: cell dict} of the release as nbgrader's gradebook stores it."""
    from nbgrader.api import Gradebook

    with Gradebook(database_url(course)) as gradebook:
        stored = gradebook.find_notebook(notebook, assignment)
        cells = {}
        for cell in stored.source_cells:
            cells[cell.name] = {"cell_type": cell.cell_type, "source": cell.source,
                                "locked": cell.locked, "checksum": cell.checksum}
        for cell in stored.grade_cells:
            cells[cell.name].update(grade=True, points=cell.max_score)
        for cell in stored.solution_cells:
            cells[cell.name].update(solution=True)
        for cell in stored.task_cells:
            cells[cell.name].update(task=True, points=cell.max_score)
    return cells


def database_url(course):
    return f"sqlite:///{Path(course).resolve() / 'gradebook.db'}"


def _stored_metadata(grade_id, stored):
    meta = {"grade_id": grade_id, "schema_version": 3, "cell_type": stored["cell_type"],
            "grade": bool(stored.get("grade")),
            "solution": bool(stored.get("solution")), "locked": bool(stored.get("locked"))}
    if stored.get("grade") or stored.get("task"):
        meta["points"] = stored["points"]
    if stored.get("task"):
        meta["task"] = True
    if stored.get("checksum"):
        meta["checksum"] = stored["checksum"]
    return meta


def autograded_notebook(submitted, stored_cells, result):
    """The notebook nbgrader's autograde would write: cleaned, restored, test outputs in.
    ``submitted`` is left as it is: what changes here is copied first (cells and their
    metadata; the rest is shared, and only read)."""
    notebook = in_nbformat_shape(submitted)
    present = set()
    for cell in reversed(notebook["cells"]):  # of a duplicate, the last copy counts, as in nbgrader
        meta = cell["metadata"] = dict(cell["metadata"])
        grade_id = grade_id_of(cell)
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        if grade_id not in stored_cells or grade_id in present:
            meta.pop("nbgrader", None)  # unknown or duplicated: not graded, like nbgrader
            continue
        present.add(grade_id)
        stored = stored_cells[grade_id]
        meta["nbgrader"] = _stored_metadata(grade_id, stored)
        if stored.get("locked"):
            cell["source"], cell["cell_type"] = stored["source"], stored["cell_type"]
            if stored["cell_type"] == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            else:
                cell.pop("outputs", None)
                cell.pop("execution_count", None)
    for grade_id, stored in stored_cells.items():  # a deleted locked cell comes back
        if grade_id not in present and stored.get("locked"):
            cell = {"cell_type": stored["cell_type"], "metadata": {
                "nbgrader": _stored_metadata(grade_id, stored)}, "source": stored["source"]}
            if stored["cell_type"] == "code":
                cell.update(outputs=[], execution_count=None)
            notebook["cells"].append(cell)
    for cell in notebook["cells"]:
        part = test_cell_part(grade_id_of(cell), of_result(result))
        if part is not None and cell["cell_type"] == "code":
            cell["outputs"] = test_cell_outputs(part, cell["metadata"]["nbgrader"].get(
                "points", 0), result)
    return notebook


def write_autograded(course, assignment, student, submitted_path, stored_cells, result,
                     submitted=None):
    """autograded/<student>/<assignment>/: the submission's folder, its notebook graded.
    ``submitted`` is the notebook as grading read it; without it, the file is read again.
    Runs in a grading worker; the caller writes the gradebook."""
    from ..selfcheck.notebook_file import read_notebook

    target = Path(course) / "autograded" / student / assignment
    source_folder = Path(submitted_path).parent
    if target.exists():
        shutil.rmtree(target)
    # Other notebooks (a student's mha-Copy1.ipynb) stay behind, as nbgrader leaves
    # them: generate_feedback would fail on a notebook the gradebook does not know.
    shutil.copytree(source_folder, target,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"))
    release = Path(course) / "source" / assignment  # nbgrader puts the course's own files back
    if release.is_dir():
        shutil.copytree(release, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.ipynb", "__pycache__", ".*"))
    path = target / Path(submitted_path).name
    try:  # read_notebook, as grading does: an old (v3) notebook comes upgraded
        submitted = read_notebook(submitted_path) if submitted is None else submitted
        if not isinstance(submitted, dict) or not isinstance(submitted.get("cells"), list):
            raise ValueError("not a notebook")
    except (OSError, ValueError):
        # Unreadable: the release's locked cells alone, with the result's outputs, as
        # nbgrader's door writes it; feedback can then say why.
        submitted = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    notebook = autograded_notebook(submitted, stored_cells, result)
    temporary = path.with_name(f".{path.name}.tmp")
    # Without indentation: json's C encoder, four times as fast as its indenting one in
    # Python; Jupyter and nbgrader read the file all the same.
    temporary.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
    return notebook


def cell_grades(notebook, result):
    """({grade cell: (auto score, needs manual grading)}, {comment cell: auto comment}),
    by nbgrader's own rules (SaveAutoGrades, then the kit's FlagTampering)."""
    from nbformat import from_dict
    from nbgrader import utils

    from ..grader.grading import needs_review

    problems = needs_review(result)
    grades, comments = {}, {}
    for raw in (notebook or {}).get("cells", []):
        meta = nbgrader_meta(raw)
        if not carries(raw, "grade", "solution", "task"):
            continue
        cell = from_dict(raw)
        if utils.is_grade(cell):
            score = utils.determine_grade(cell, None)[0]
            grades[meta["grade_id"]] = (score, score is None or bool(problems))
        if utils.is_solution(cell) or utils.is_task(cell):
            untouched = (meta.get("checksum") == utils.compute_checksum(cell)
                         and not utils.is_task(cell))
            comments[meta["grade_id"]] = ("mha-kit: " + "; ".join(problems) if problems
                                          else "No response." if untouched else None)
    return grades, comments


class GradebookWriter:
    """One open gradebook for a whole run; submissions go in by the chunk.

    nbgrader's own add_submission commits once per submission, and a commit costs more
    than grading one; its ORM, loading and saving each row as an object, costs a few
    milliseconds per submission more. So this writes the same rows as nbgrader's classes
    would (a submission, a notebook for each of the assignment's notebooks, a grade per
    grade cell, a comment per solution cell, each with nbgrader's kind of id) straight
    into their tables, and commits every ``chunk`` submissions. A submission graded
    before keeps its rows, its manual scores and its manual comments.
    ``entries``: the (assignment, notebook) pairs the run writes, each an assignment of
    the gradebook (MissingEntry otherwise).
    """

    def __init__(self, course, entries, chunk=100):
        from nbgrader.api import Gradebook, Student
        from sqlalchemy import select

        self.course, self.chunk, self.pending = Path(course), chunk, []
        self.gradebook = Gradebook(database_url(course))
        try:
            self.entries = {entry: _Entry(self.gradebook, *entry) for entry in entries}
            self.students = set(self.gradebook.db.scalars(select(Student.__table__.c.id)))
        except Exception:
            self.gradebook.close()
            raise

    def record(self, entry, student, grades, comments):
        self.pending.append((self.entries[entry], student, grades, comments))
        if len(self.pending) >= self.chunk:
            self.flush()

    def flush(self):
        from nbgrader.api import Student

        rows = _Rows()
        for entry, student, grades, comments in self.pending:
            if student not in self.students:
                rows.add(Student, id=student)
                self.students.add(student)
            submission = entry.submissions.get(student) or entry.new_submission(student, rows)
            timestamp = self._timestamp(entry.assignment_name, student)
            if timestamp is not None:
                rows.change_timestamp(submission.id, timestamp)
            for grade in submission.grades:
                auto_score, manual = grades.get(entry.names[grade.cell_id], (0, False))
                rows.change_grade(grade.id, auto_score, manual)
            for comment in submission.comments:
                rows.change_comment(comment.id, comments.get(entry.names[comment.cell_id]))
        rows.write(self.gradebook.db)
        self.gradebook.db.commit()
        self.pending = []

    def close(self):
        try:
            if self.pending:
                self.flush()
        finally:
            self.gradebook.close()

    def _timestamp(self, assignment, student):
        from nbgrader.utils import parse_utc

        path = self.course / "submitted" / student / assignment / "timestamp.txt"
        try:
            return parse_utc(path.read_text(encoding="utf-8").strip()) or None
        except (OSError, ValueError):
            return None


class _Row:
    """A gradebook row this run knows: its id and its cell's."""

    def __init__(self, id, cell_id):
        self.id, self.cell_id = id, cell_id


class _Submission:
    """A student's submission of an entry: its id, and the grade and comment rows of the
    entry's notebook in it."""

    def __init__(self, id):
        self.id, self.grades, self.comments = id, [], []


class _Rows:
    """The rows one chunk adds, and the columns it changes, written in a few statements."""

    def __init__(self):
        self.added = {}  # model -> [row dicts]
        self.grades, self.comments, self.timestamps = [], [], []

    def add(self, model, **row):
        self.added.setdefault(model, []).append(row)

    def change_grade(self, grade_id, auto_score, manual):
        """The grader's score; a person is asked to look where the grader says so, or
        where a person has given a score already (as it is when the row is written)."""
        self.grades.append({"row": grade_id, "auto_score": auto_score, "manual": bool(manual)})

    def change_comment(self, comment_id, auto_comment):
        self.comments.append({"row": comment_id, "auto_comment": auto_comment})

    def change_timestamp(self, submission_id, timestamp):
        self.timestamps.append({"row": submission_id, "timestamp": timestamp})

    def write(self, db):
        from nbgrader.api import (Comment, Grade, Student, SubmittedAssignment,
                                  SubmittedNotebook)
        from sqlalchemy import Boolean, bindparam, insert, or_, update

        for model in (Student, SubmittedAssignment, SubmittedNotebook, Grade, Comment):
            if self.added.get(model):  # each after the rows it refers to
                db.execute(insert(model.__table__), self.added[model])
        grade = Grade.__table__
        changes = ((grade, self.grades, {
            "auto_score": bindparam("auto_score"),
            "needs_manual_grade": or_(bindparam("manual", type_=Boolean),
                                      grade.c.manual_score.isnot(None))}),
            (Comment.__table__, self.comments, {"auto_comment": bindparam("auto_comment")}),
            (SubmittedAssignment.__table__, self.timestamps,
             {"timestamp": bindparam("timestamp")}))
        for table, rows, columns in changes:
            if rows:
                db.execute(update(table).where(table.c.id == bindparam("row")).values(**columns),
                           rows)


class _Entry:
    """One assignment's notebook in the open gradebook: the ids of its rows, and its
    submissions so far (only the ids of their rows: no objects of nbgrader's)."""

    def __init__(self, gradebook, assignment, notebook):
        from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook
        from sqlalchemy import select

        found = gradebook.find_assignment(assignment)  # else MissingEntry
        stored = gradebook.find_notebook(notebook, assignment)
        self.assignment_name, self.assignment_id = found.name, found.id
        self.notebook_id = stored.id  # plain values: a commit expires nbgrader's objects
        # Per notebook of the assignment, in its order: (graded cells, commented cells).
        self.cells = {each.id: ([cell.id for cell in each.grade_cells + each.task_cells],
                                [cell.id for cell in each.solution_cells + each.task_cells])
                      for each in found.notebooks}
        # Cell names by id, read once: asking each grade for its name costs a query.
        self.names = {cell.id: cell.name for cells in (
            stored.grade_cells, stored.solution_cells, stored.task_cells) for cell in cells}
        submitted, notebooks = SubmittedAssignment.__table__, SubmittedNotebook.__table__
        self.submissions, mine = {}, {}  # by student; by submission id
        for row in gradebook.db.execute(select(submitted.c.id, submitted.c.student_id)
                                        .where(submitted.c.assignment_id == found.id)):
            self.submissions[row.student_id] = mine[row.id] = _Submission(row.id)
        by_notebook = dict(gradebook.db.execute(
            select(notebooks.c.id, notebooks.c.assignment_id)
            .where(notebooks.c.notebook_id == self.notebook_id)).all())
        for model, kept in ((Grade, "grades"), (Comment, "comments")):
            table = model.__table__
            for row in gradebook.db.execute(
                    select(table.c.id, table.c.cell_id, table.c.notebook_id)
                    .where(table.c.notebook_id.in_(by_notebook))):
                getattr(mine[by_notebook[row.notebook_id]], kept).append(
                    _Row(row.id, row.cell_id))

    def new_submission(self, student, rows):
        """Rows for a student's first submission of the assignment, as nbgrader's
        SubmittedAssignment makes them: a notebook for each of the assignment's
        notebooks, its grades and comments empty until ``flush`` fills this entry's."""
        from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook, new_uuid

        submission = _Submission(new_uuid())
        rows.add(SubmittedAssignment, id=submission.id, assignment_id=self.assignment_id,
                 student_id=student, timestamp=None, extension=None)
        for notebook_id, (graded, commented) in self.cells.items():
            notebook = new_uuid()
            rows.add(SubmittedNotebook, id=notebook, assignment_id=submission.id,
                     notebook_id=notebook_id, flagged=False, late_submission_penalty=None)
            for cell_id in graded:
                grade = _Row(new_uuid(), cell_id)
                rows.add(Grade, id=grade.id, notebook_id=notebook, cell_id=cell_id,
                         auto_score=None, manual_score=None, extra_credit=None,
                         needs_manual_grade=True)
                if notebook_id == self.notebook_id:
                    submission.grades.append(grade)
            for cell_id in commented:
                comment = _Row(new_uuid(), cell_id)
                rows.add(Comment, id=comment.id, notebook_id=notebook, cell_id=cell_id,
                         auto_comment=None, manual_comment=None)
                if notebook_id == self.notebook_id:
                    submission.comments.append(comment)
        self.submissions[student] = submission
        return submission


def _graded_cells(notebook):
    return {"cells": [cell for cell in (notebook or {}).get("cells", [])
                      if carries(cell, "grade", "solution", "task")]}


def grade_into_autograded(path, seed, course, assignment, student, stored_cells,
                          language=None, exercise=None):
    """A grading worker's job with --gradebook: the result, and the cells that carry
    grades or comments in the autograded notebook it wrote. (The worker does not score
    them itself: importing nbgrader would cost it seconds.)"""
    from ..grader.grading import read_and_grade

    result, submitted = read_and_grade(path, seed, language=language, exercise=exercise)
    try:
        notebook = write_autograded(course, assignment, student, path, stored_cells, result,
                                    submitted)
    except Exception:  # noqa: BLE001 - like an unreadable notebook: zeros, flagged
        notebook = None
    return result, _graded_cells(notebook)


def _text(name):
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def check_submitted_folder(folder, course):
    """ValueError unless ``folder`` is the course's submitted/ folder itself: that is
    where the gradebook's students are its subfolders' names. A student's own folder, or
    an assignment's, would make its subfolders students."""
    submitted = Path(course) / "submitted"
    if Path(folder).resolve() != submitted.resolve():
        raise ValueError(f"--gradebook {course} grades the course's submitted/ folder as a "
                         f"whole: run `mhakit grade {submitted} --gradebook {course}`, not "
                         f"{folder} (results that still hold are kept, so it is quick)")


class GradebookRun:
    """``mhakit grade --gradebook COURSE``: the course's submitted/ folder into its
    gradebook, each submission into its own assignment's entry (a course may release
    one exercise as several assignments, one per language)."""

    def __init__(self, course, submissions, earlier=()):
        """``submissions``: {student: notebook}; ``earlier``: other notebooks that go to
        the gradebook alone (a student's submission in the other language)."""
        from nbgrader.api import MissingEntry

        self.course = Path(course)
        if not (self.course / "gradebook.db").exists():
            raise ValueError(f"{self.course} has no gradebook.db: run `mhakit build` in the "
                             "course folder first (it registers the assignments)")
        self.submitted = (self.course / "submitted").resolve()
        entries = {self._entry(p) for p in (*submissions.values(), *earlier)} - {None}
        if not entries:
            example = next(iter(submissions.values()), "nothing")
            raise ValueError(f"--gradebook needs nbgrader's layout {self.course}/submitted/"
                             f"<student>/<assignment>/<notebook>.ipynb, not {example}")
        self.stored = {}
        for entry in sorted(entries):
            try:
                self.stored[entry] = release_cells(self.course, *entry)
            except MissingEntry:
                pass  # its students are excluded below, with the reason
        if not self.stored:
            names = ", ".join(sorted({assignment for assignment, _ in entries}))
            raise ValueError(f"the gradebook has no assignment {names} with these notebooks: "
                             "run `mhakit build` (or `nbgrader generate_assignment`) first")
        self.excluded = {student: reason for student, p in submissions.items()
                         if (reason := self._exclusion(p))}
        self.writer = GradebookWriter(self.course, self.stored)

    def _entry(self, path):
        """(assignment, notebook) of a notebook at submitted/<student>/<assignment>/, or None."""
        path = Path(path)
        return ((path.parent.name, path.stem)
                if path.resolve().parent.parent.parent == self.submitted else None)

    def holds(self, path):
        """Whether this notebook can go into the gradebook."""
        return self._exclusion(path) is None

    def _exclusion(self, path):
        """Why this notebook stays out of the gradebook, or None."""
        entry = self._entry(path)
        if entry is None:
            return ("not in the gradebook: its notebook is not at "
                    "submitted/<student>/<assignment>/<notebook>.ipynb")
        if entry not in self.stored:
            return (f"not in the gradebook: it has no assignment {entry[0]} with a notebook "
                    f"{entry[1]}")
        if not _text(path.parent.parent.name):
            return ("not in the gradebook: the folder name is not UTF-8 text, which nbgrader "
                    "cannot hold; rename the folder")
        return None

    def job(self, student, path, seed, exercise, language=None):
        """The worker's job, graded against ``exercise``; the gradebook's student is the
        folder's own name."""
        entry = self._entry(path)
        return (grade_into_autograded, path, seed, self.course, entry[0],
                Path(path).parent.parent.name, self.stored[entry], language, exercise)

    def record(self, student, path, result, graded_cells=None):
        entry, folder = self._entry(path), Path(path).parent.parent.name
        try:
            if graded_cells is None:  # graded elsewhere (Dask), or kept from an earlier run
                graded_cells = _graded_cells(write_autograded(
                    self.course, entry[0], folder, path, self.stored[entry], result))
            grades, comments = cell_grades(graded_cells, result)
        except Exception as error:  # noqa: BLE001 - zeros, flagged for a person, with why
            grades, comments = self._flagged(entry, f"could not read the graded cells "
                                                    f"({type(error).__name__})")
        if result.status is not Status.GRADED:  # no cells to read: say why
            grades, comments = self._flagged(entry, f"{result.status.value}: "
                                                    f"{result.extra.get('error') or '?'}")
        self.writer.record(entry, folder, grades, comments)

    def _flagged(self, entry, reason):
        """Every grade waiting for a person, the tests' at 0 and the written answers'
        ungraded (as nbgrader leaves them); every comment the one-line reason."""
        from ..selfcheck.notebook_file import one_line

        note = one_line(f"mha-kit: {reason}", 300)
        stored = self.stored[entry]
        grades = {name: (None if cell.get("solution") else 0, True)
                  for name, cell in stored.items() if cell.get("grade")}
        comments = {name: note for name, cell in stored.items()
                    if cell.get("solution") or cell.get("task")}
        return grades, comments

    def close(self):
        self.writer.close()
