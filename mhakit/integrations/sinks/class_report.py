"""The class report (report.py): report.md, checks.csv, mistakes.csv and scores.svg."""

from ..report import write_report
from ..sink import WholeClass

ORDER = 40
FILES = ("report.md", "checks.csv", "mistakes.csv", "scores.svg")


class ClassReport(WholeClass):
    def __init__(self, out, exercise):
        super().__init__(out)
        self.exercise = exercise

    def finish(self, results):
        write_report(results, self.out, self.exercise)


def sink(run):
    return ClassReport(run.out, run.exercise)
