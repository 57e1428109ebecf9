"""The class at a glance, after grading: which checks fail most, and how scores spread.

Written next to the results as ``report.md``, ``checks.csv`` and ``scores.png``. The
terminal gets the same histogram as text.
"""

import csv
import threading
from collections import Counter
from pathlib import Path

from ..exercise import current
from ..grader.result import Status, status_of
from ..selfcheck.notebook_file import one_line


def check_failures(results):
    """[(check name, failed, not implemented, passed)], most often failed first."""
    counts = {}
    for result in results.values():
        for test in result.get("tests", []):
            row = counts.setdefault(test["name"], Counter())
            row[test["status"]] += 1
    rows = [(name, c["failed"], c["not yet implemented"], c["passed"]) for name, c in counts.items()]
    return sorted(rows, key=lambda row: (-row[1], -row[2], row[0]))


def diagnosed_mistakes(results):
    """[(mistake id, students, tests)], most common first: each student counts once per
    mistake, however many checks diagnosed it."""
    students, tests = Counter(), Counter()
    for result in results.values():
        tags = [tag for test in result.get("tests", []) for tag in test.get("tags", [])]
        tests.update(tags)
        students.update(set(tags))
    return sorted(((tag, students[tag], tests[tag]) for tag in students),
                  key=lambda row: (-row[1], -row[2], row[0]))


def score_histogram(results, total=None):
    """[(low, high, count)] in ten bins from 0 to the exercise's total, which falls in the
    last bin."""
    total = current().total if total is None else total
    scores = [result["score"] for result in results.values()]
    bins = [(total * i / 10, total * (i + 1) / 10) for i in range(10)]
    return [(low, high, sum(low <= s < high or (high == total and s == total) for s in scores))
            for low, high in bins]


def text_histogram(histogram, width=40):
    top = max((count for _, _, count in histogram), default=0) or 1
    return "\n".join(f"{low:>3g}–{high:<3g} {'█' * round(width * count / top):<{width}} {count}"
                     for low, high, count in histogram)


def write_report(results, out):
    """Write report.md, checks.csv, mistakes.csv and (with matplotlib) scores.png;
    return report.md."""
    out = Path(out)
    failures = check_failures(results)
    histogram = score_histogram(results)
    with open(out / "checks.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["check", "failed", "not_implemented", "passed"])
        writer.writerows(failures)
    mistakes = diagnosed_mistakes(results)
    with open(out / "mistakes.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["mistake", "students", "failed_checks"])
        writer.writerows(mistakes)
    picture = _plot(histogram, out / "scores.png")
    scores = sorted(result["score"] for result in results.values())
    lines = [f"# Class report: {len(results)} submissions", "",
             f"Median score {scores[len(scores) // 2]:g}, lowest {scores[0]:g}, "
             f"highest {scores[-1]:g} (auto-graded points out of {current().total:g}).", "",
             "## Score distribution", "", "```", text_histogram(histogram), "```", ""]
    if picture:
        lines += ["![score distribution](scores.png)", ""]
    odd = needs_a_look(results)
    if odd:
        lines += ["## Submissions that need a look", "",
                  "Not graded, or graded with a note on the student's folder; every other "
                  "student was graded as usual.", "", "| student | status |", "|---|---|"]
        lines += [f"| {_cell(student)} | {_cell(status)} |" for student, status in odd]
        lines += [""]
    lines += ["## Checks that fail most often", "",
              "| check | failed | not implemented | passed |", "|---|---|---|---|"]
    lines += [f"| {name} | {failed} | {missing} | {passed} |"
              for name, failed, missing, passed in failures if failed or missing]
    lines += ["", "## Most common diagnosed mistakes", "",
              "The grader names a mistake when a known wrong variant gives the student's "
              "output (see the exercise's mistakes.py).", ""]
    lines += (["| mistake | students | failed checks |", "|---|---|---|"]
              + [f"| `{tag}` | {students} | {tests} |" for tag, students, tests in mistakes]
              if mistakes else ["No failed check matched a known mistake."])
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def needs_a_look(results):
    """[(student, status with its reason and notes)] for each student who was not graded,
    or whose folder had something to note (other notebooks, a name nbgrader cannot hold)."""
    return [(student, status_line(result)) for student, result in sorted(results.items())
            if status_of(result["extra_data"]) is not Status.GRADED
            or result["extra_data"].get("batch_notes")]


def status_line(result):
    """The status, with the reason when the student was not graded and the batch's
    notes: one line, for grades.csv, the table and the report."""
    extra = result["extra_data"]
    line = extra["status"]
    if status_of(extra) is not Status.GRADED and extra.get("error"):
        line += f": {extra['error']}"
    for note in extra.get("batch_notes") or ():
        line += f"; {note}"
    return one_line(line, 600)


def _cell(text):
    """Text inside a Markdown table cell: one line, its bars escaped."""
    return one_line(text).replace("|", "\\|")


def import_plotting():
    """matplotlib's pyplot, on the Agg backend; None where it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the report still has its text histogram
        return None
    return plt


def import_plotting_meanwhile():
    """Start importing pyplot (0.4 s) in a thread, while the grading processes start:
    a class's report is written when the last notebook is graded, and would otherwise
    wait for this import then."""
    thread = threading.Thread(target=import_plotting, name="mhakit-import-pyplot",
                              daemon=True)
    thread.start()
    return thread


def _plot(histogram, path):
    plt = import_plotting()
    if plt is None:
        return None
    figure, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    ax.bar([f"{low:g}–{high:g}" for low, high, _ in histogram], [c for _, _, c in histogram],
           color="#4c72b0")
    ax.set_xlabel("auto-graded score")
    ax.set_ylabel("submissions")
    ax.tick_params(axis="x", labelrotation=45)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
