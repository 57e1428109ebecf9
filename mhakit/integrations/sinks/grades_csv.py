"""grades.csv: one row per student, the total and each part of the exercise."""

import csv
import os
import tempfile

from ...grader.result import Result
from ..report import status_line
from ..sink import WholeClass

ORDER = 30
FILES = ("grades.csv",)


def csv_columns(exercise):
    """grades.csv's columns: the student, the total, each part of the exercise, the status."""
    return ("student", "total") + exercise.parts + ("status",)


def grade_row(student: str, result: Result, exercise) -> dict[str, str]:
    parts = result.parts
    row = {"student": student, "total": f"{result.score:g}", "status": status_line(result)}
    row.update({part: f"{parts.get(part, 0):g}" for part in exercise.parts})
    return row


def write_grades_csv(path, results, exercise):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="",
                                     encoding="utf-8", suffix=".tmp") as handle:
        writer = csv.DictWriter(handle, fieldnames=csv_columns(exercise))
        writer.writeheader()
        for student in sorted(results):
            writer.writerow(grade_row(student, results[student], exercise))
    os.replace(handle.name, path)


class GradesCsv(WholeClass):
    def __init__(self, out, exercise):
        super().__init__(out)
        self.exercise = exercise

    def finish(self, results):
        write_grades_csv(self.out / "grades.csv", results, self.exercise)


def sink(run):
    return GradesCsv(run.out, run.exercise)
