"""``nbgrader export`` for the kit's exercises: one row per student and exercise, whichever
language.

An exercise is released once per language (its ``assignments``: ``mha`` and
``mha_en``, separate nbgrader assignments with the same cells and points), and a student
submits one of them. nbgrader's CsvExportPlugin writes a row per student per assignment,
one of them 0. ``ExerciseExport`` (``c.ExportApp.plugin_class`` in nbgrader_config.py)
writes one row per student for each exercise of the course (one, unless MHAKIT_EXERCISE
names several), named after the exercise:

- the submission that counts, in ``submitted``: the later one (by nbgrader's timestamp)
  when a student submitted both languages, and ``status`` says so;
- ``raw_score``, ``late_submission_penalty`` and ``score``: the auto-graded points (the
  code cells), out of ``max_score``, the exercise's total (100); nbgrader's late penalty
  comes off these points;
- ``written_extra_credit``: what a grader gave the written answers in formgrader (they
  are worth 0 points and paid as extra credit, see ``authoring/lesson.py``'s Written;
  a gradebook from 1-point written cells reports their points here too), never in
  ``score``;
- a student with no submission: 0 and the status ``no submission``.

nbgrader's ``--to`` (default ``grades.csv``), ``--student`` and ``--assignment`` are
honoured, in nbgrader's documented ``[a,b]`` form too. ``--assignment`` names nbgrader
assignments, the language variants: only their submissions count
(``--assignment=[mha_en]``: the English ones). Errors are one line and exit 2.
"""

import csv
import sys

from nbgrader.plugins.export import ExportPlugin

from ..exercise import course_exercises, current, for_assignment

COLUMNS = ("assignment", "submitted", "duedate", "timestamp", "student_id", "last_name",
           "first_name", "email", "raw_score", "late_submission_penalty", "score",
           "max_score", "written_extra_credit", "status")


class ExportRefused(Exception):
    """What is wrong with the export's options or the gradebook, in one line."""


class ExerciseExport(ExportPlugin):
    """One row per student for each exercise, out of its total, written answers apart."""

    def export(self, gradebook):
        destination, chosen = self.to or "grades.csv", listed(self.assignment)
        try:
            rows = []
            for exercise in exercises_of(gradebook, chosen):
                own = [name for name in chosen if for_assignment(name) is exercise]
                found = exercise_rows(gradebook, exercise, own, listed(self.student))
                self.log.info("Exporting %s grades of %d students to %s", exercise.name,
                              len(found), destination)
                rows += found
            write_rows(destination, rows)
        except ExportRefused as refused:
            print(f"mha-kit export: {refused}", file=sys.stderr)
            raise SystemExit(2)


def listed(values):
    """The names of an ``--assignment`` or ``--student`` option. nbgrader documents
    ``--student [s1,s2]``, which traitlets hands over as the one text "[s1,s2]" (and
    nbgrader's own exporter then matches nobody): its names are taken apart here."""
    names = []
    for value in values:
        text = str(value)
        if text.startswith("[") and text.endswith("]"):
            names += [name.strip(" '\"") for name in text[1:-1].split(",")]
        else:
            names.append(text)
    return [name for name in names if name]


def exercises_of(gradebook, chosen):
    """The exercises whose grades to write: those of the ``--assignment`` names, else each
    exercise of the course that the gradebook holds an assignment of (the default one
    when it holds none, which then says what is missing)."""
    if chosen:
        return list(dict.fromkeys(for_assignment(name) for name in chosen))
    held = {assignment.name for assignment in gradebook.assignments}
    found = [exercise for exercise in course_exercises() if held & set(exercise.assignments)]
    return found or [current()]


def exercise_rows(gradebook, exercise, assignments=(), students=()):
    """The rows, one per student of the gradebook (or of ``students``), in its order."""
    variants = counted_assignments(gradebook, exercise, assignments)
    submissions = {name: {s.student_id: s for s in gradebook.assignment_submissions(name)}
                   for name in variants}
    everyone = chosen_students(gradebook, students)
    return [student_row(exercise, variants, student,
                        [submissions[name][student.id] for name in variants
                         if student.id in submissions[name]])
            for student in everyone]


def counted_assignments(gradebook, exercise, chosen):
    """{assignment name: its gradebook entry}, the exercise's variants whose submissions
    count, in the exercise's order."""
    known = {assignment.name: assignment for assignment in gradebook.assignments}
    names = ", ".join(exercise.assignments)
    unknown = [name for name in chosen if name not in exercise.assignments]
    if unknown:
        raise ExportRefused(f"--assignment {', '.join(unknown)}: this exporter writes the "
                            f"grades of {exercise.name} only; its assignments are {names}")
    variants = {name: known[name] for name in exercise.assignments
                if name in known and (not chosen or name in chosen)}
    if not variants:
        wanted = ", ".join(chosen) if chosen else names
        raise ExportRefused(f"the gradebook holds no assignment {wanted}: run `mhakit "
                            f"build` in the course folder first")
    for name, assignment in variants.items():
        if assignment.max_code_score != exercise.total:
            raise ExportRefused(
                f"{name} is worth {assignment.max_code_score:g} auto-graded points in the "
                f"gradebook, but {exercise.name} {exercise.total:g}: rebuild the release "
                f"(`mhakit build`) and generate it again")
    return variants


def chosen_students(gradebook, chosen):
    everyone = gradebook.students
    if not chosen:
        return everyone
    missing = sorted(set(chosen) - {student.id for student in everyone})
    if missing:
        raise ExportRefused(f"--student {', '.join(missing)}: no such student in the "
                            f"gradebook (`nbgrader db student list` shows them)")
    return [student for student in everyone if student.id in chosen]


def student_row(exercise, variants, student, submissions):
    """The student's row from the submissions they made (none, one, or several)."""
    row = {"assignment": exercise.name, "student_id": student.id,
           "last_name": student.last_name, "first_name": student.first_name,
           "email": student.email, "max_score": exercise.total}
    if not submissions:
        first = next(iter(variants.values()))
        looked_in = "" if list(variants) == list(exercise.assignments) else \
            f" to {', '.join(variants)}"
        return row | {"submitted": "", "duedate": first.duedate, "timestamp": "",
                      "raw_score": 0, "late_submission_penalty": 0, "score": 0,
                      "written_extra_credit": 0, "status": f"no submission{looked_in}"}
    counted = later_submission(submissions)
    penalty = counted.late_submission_penalty or 0
    return row | {"submitted": counted.assignment.name, "duedate": counted.assignment.duedate,
                  "timestamp": counted.timestamp, "raw_score": counted.code_score,
                  "late_submission_penalty": penalty,
                  "score": max(0.0, counted.code_score - penalty),
                  "written_extra_credit": counted.written_score,
                  "status": status(counted, [s for s in submissions if s is not counted])}


def later_submission(submissions):
    """The later of a student's submissions; with no timestamps to tell, the first in
    the exercise's order (``status`` then says that neither was later)."""
    stamped = [s for s in submissions if s.timestamp is not None]
    return max(stamped, key=lambda s: s.timestamp) if stamped else submissions[0]


def status(counted, others):
    """``graded``, or the notes an instructor must read: what was not counted, and what
    still waits for a grader in formgrader."""
    notes = []
    for other in others:
        if other.timestamp is not None and counted.timestamp is not None \
                and other.timestamp < counted.timestamp:
            notes.append(f"also submitted {other.assignment.name} at {other.timestamp}: "
                         f"the later {counted.assignment.name} counts")
        else:
            notes.append(f"also submitted {other.assignment.name}, neither later by "
                         f"timestamp: {counted.assignment.name} counts")
    waiting = [grade for notebook in counted.notebooks for grade in notebook.grades
               if grade.needs_manual_grade]
    if any(grade.cell_type == "code" for grade in waiting):
        notes.append("auto-graded cells flagged for review in formgrader")
    written = sum(grade.cell_type == "markdown" for grade in waiting)
    if written:
        notes.append(f"written answers to grade in formgrader: {written}")
    return "; ".join(notes) or "graded"


def write_rows(destination, rows):
    try:
        with open(destination, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, COLUMNS)
            writer.writeheader()
            writer.writerows({key: shown(row[key]) for key in COLUMNS} for row in rows)
    except OSError as error:
        raise ExportRefused(f"cannot write {destination}: {error.strerror or error}; "
                            f"choose another file with --to") from None


def shown(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
