"""The class at a glance, after grading: which checks fail most, and how scores spread.

Written next to the results as ``report.md``, ``checks.csv``, ``mistakes.csv`` and
``scores.svg``. The terminal gets the same histogram as text.
"""

import csv
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

from ..grader.result import Result, Status
from ..selfcheck.notebook_file import one_line


def check_failures(results):
    """[(check name, failed, not implemented, passed)], most often failed first."""
    counts = {}
    for result in results.values():
        for test in result.tests:
            row = counts.setdefault(test.name, Counter())
            row[test.status] += 1
    rows = [(name, c["failed"], c["not yet implemented"], c["passed"]) for name, c in counts.items()]
    return sorted(rows, key=lambda row: (-row[1], -row[2], row[0]))


def diagnosed_mistakes(results):
    """[(mistake id, students, tests)], most common first: each student counts once per
    mistake, however many checks diagnosed it."""
    students, tests = Counter(), Counter()
    for result in results.values():
        tags = [tag for test in result.tests for tag in test.tags]
        tests.update(tags)
        students.update(set(tags))
    return sorted(((tag, students[tag], tests[tag]) for tag in students),
                  key=lambda row: (-row[1], -row[2], row[0]))


def score_histogram(results, total):
    """[(low, high, count)] in ten bins from 0 to ``total``, the exercise's, which falls
    in the last bin."""
    scores = [result.score for result in results.values()]
    bins = [(total * i / 10, total * (i + 1) / 10) for i in range(10)]
    return [(low, high, sum(low <= s < high or (high == total and s == total) for s in scores))
            for low, high in bins]


def text_histogram(histogram, width=40):
    top = max((count for _, _, count in histogram), default=0) or 1
    return "\n".join(f"{low:>3g}–{high:<3g} {'█' * round(width * count / top):<{width}} {count}"
                     for low, high, count in histogram)


def write_report(results, out, exercise):
    """Write report.md, checks.csv, mistakes.csv and scores.svg; return report.md."""
    out = Path(out)
    failures = check_failures(results)
    histogram = score_histogram(results, exercise.total)
    with open(out / "checks.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["check", "failed", "not_implemented", "passed"])
        writer.writerows(failures)
    mistakes = diagnosed_mistakes(results)
    with open(out / "mistakes.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["mistake", "students", "failed_checks"])
        writer.writerows(mistakes)
    (out / "scores.svg").write_text(histogram_svg(histogram), encoding="utf-8")
    scores = sorted(result.score for result in results.values())
    lines = [f"# Class report: {len(results)} submissions", "",
             f"Median score {scores[len(scores) // 2]:g}, lowest {scores[0]:g}, "
             f"highest {scores[-1]:g} (auto-graded points out of {exercise.total:g}).", "",
             "## Score distribution", "", "```", text_histogram(histogram), "```", "",
             "![score distribution](scores.svg)", ""]
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


def needs_a_look(results: dict[str, Result]) -> list[tuple[str, str]]:
    """[(student, status with its reason and notes)] for each student who was not graded,
    or whose folder had something to note (other notebooks, a name nbgrader cannot hold)."""
    return [(student, status_line(result)) for student, result in sorted(results.items())
            if result.status is not Status.GRADED or result.extra.get("batch_notes")]


def status_line(result: Result) -> str:
    """The status, with the reason when the student was not graded and the batch's
    notes: one line, for grades.csv, the table and the report."""
    extra = result.extra
    line = result.status_text()
    if result.status is not Status.GRADED and extra.get("error"):
        line += f": {extra['error']}"
    for note in extra.get("batch_notes") or ():
        line += f"; {note}"
    return one_line(line, 600)


def _cell(text):
    """Text inside a Markdown table cell: one line, its bars escaped."""
    return one_line(text).replace("|", "\\|")


# The chart's geometry, in SVG user units (pixels at 100%).
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 600, 300, 56, 12, 14, 70


def histogram_svg(histogram):
    """The score histogram as a bar chart in SVG. Drawn here rather than with matplotlib,
    whose import and PNG rendering took about a third of a second of CPU in every run."""
    top = max((count for _, _, count in histogram), default=0) or 1
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_width / len(histogram)
    base = TOP + plot_height
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="white"/>']
    for step in _ticks(top):
        y = base - plot_height * step / top
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                     'stroke="#dddddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{step}</text>')
    for index, (low, high, count) in enumerate(histogram):
        x, height = LEFT + index * slot, plot_height * count / top
        parts.append(f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{base - height:.1f}" '
                     f'width="{slot * 0.8:.1f}" height="{height:.1f}" fill="#4c72b0">'
                     f'<title>{low:g}–{high:g}: {count}</title></rect>')
        centre = x + slot / 2
        parts.append(f'<text x="{centre:.1f}" y="{base + 14}" text-anchor="end" '
                     f'transform="rotate(-45 {centre:.1f} {base + 14})">'
                     f'{escape(f"{low:g}–{high:g}")}</text>')
    parts += [f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}" stroke="black"/>',
              f'<text x="{LEFT + plot_width / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
              'auto-graded score</text>',
              f'<text transform="translate(14 {TOP + plot_height / 2:.1f}) rotate(-90)" '
              'text-anchor="middle">submissions</text>', "</svg>"]
    return "\n".join(parts) + "\n"


def _ticks(top):
    """Whole-number gridlines from 0 to ``top``, at most six: a step of 1, 2 or 5 times a
    power of ten."""
    scale = 1
    while True:
        for step in (scale, 2 * scale, 5 * scale):
            if top // step <= 5:
                return range(0, top + 1, step)
        scale *= 10
