"""grades.csv: one row per student, the total and each part of the exercise."""

import csv
import os
import tempfile

from ...exercise import current
from ...grader.result import Result
from ..report import status_line
from ..sink import WholeClass

ORDER = 30
FILES = ("grades.csv",)


def csv_columns():
    """grades.csv's columns: the student, the total, each part of the exercise, the status."""
    return ("student", "total") + current().parts + ("status",)


def grade_row(student: str, result: Result) -> dict[str, str]:
    parts = result.parts
    row = {"student": student, "total": f"{result.score:g}", "status": status_line(result)}
    row.update({part: f"{parts.get(part, 0):g}" for part in current().parts})
    return row


def write_grades_csv(path, results):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="",
                                     encoding="utf-8", suffix=".tmp") as handle:
        writer = csv.DictWriter(handle, fieldnames=csv_columns())
        writer.writeheader()
        for student in sorted(results):
            writer.writerow(grade_row(student, results[student]))
    os.replace(handle.name, path)


class GradesCsv(WholeClass):
    def finish(self, results):
        write_grades_csv(self.out / "grades.csv", results)


def sink(run):
    return GradesCsv(run.out)
