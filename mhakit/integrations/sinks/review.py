"""review.csv: the grades a person should look at before they count, one row per reason
(a notebook that was tampered with, a student who could not be graded, grading without
confinement), in student order. A class of hundreds is checked from this list, not by
opening every results.json."""

import csv
import io

from ...grader.grading import needs_review
from ..sink import WholeClass, write_atomically

ORDER = 35
FILES = ("review.csv",)


class Review(WholeClass):
    def finish(self, results):
        rows = [(student, reason) for student in sorted(results)
                for reason in needs_review(results[student])]
        text = io.StringIO(newline="")
        writer = csv.writer(text)
        writer.writerow(["student", "reason"])
        writer.writerows(rows)
        write_atomically(self.out / "review.csv", text.getvalue())


def sink(run):
    return Review(run.out)
