"""The class report (report.py): report.md, checks.csv, mistakes.csv and scores.svg."""

from ..report import write_report

ORDER = 40
FILES = ("report.md", "checks.csv", "mistakes.csv", "scores.svg")


class ClassReport:
    def __init__(self, out):
        self.out = out

    def take(self, taken):
        pass

    def finish(self, results):
        write_report(results, self.out)


def sink(run):
    return ClassReport(run.out)
