"""How long grading one class takes: mha-kit versus nbgrader's own kernel-based autograde.

One run builds a throwaway nbgrader course (source, release, and a class of N notebooks made
by replicating the 4 bundled sample students, e.g. alice_correct_03), then times, on the
same class:

  1. ``mhakit grade submitted --quiet --seed 1`` with all cores, and with ``--jobs 1``;
  2. ``nbgrader autograde mha --force`` with the kit's nbgrader_config.py (the isolated
     grader replaces nbgrader's Execute step: no Jupyter kernel);
  3. stock ``nbgrader autograde mha --force``, whose config drops every kit step
     from nbgrader's pipelines, so each notebook runs in a Jupyter kernel.
     This is the baseline.

Every measurement runs in a fresh copy of the course, as a subprocess timed with
time.perf_counter; the best of ``--repeat`` runs is reported, with the ratio of the stock
baseline's time to each method's. Then it checks that methods 1 and 2 give every student
the same total (the stock baseline grades by the public self-check cells, so its totals
are printed but not compared).

Run it from the repository root:

    .venv/bin/python benchmarks/grading_speed.py --notebooks 20
"""

import argparse
import ast
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from rich import box
from rich.console import Console
from rich.table import Table

from autograder.build import ASSIGNMENT, NOTEBOOK, generate_release, tool_environment, write_source
from autograder.demo import COURSE_CONFIG
from autograder.sample_class import fill, sample_answers

SEED = 1
KIT_PIPELINES = ("c.Autograde.autograde_preprocessors", "c.Autograde.sanitize_preprocessors",
                 "c.GenerateFeedback.preprocessors")


def write_class(course, count):
    """submitted/<sample>_<replica>/mha/mha.ipynb for `count` students, cycling the samples."""
    release = nbformat.read(str(course / "assignments" / ASSIGNMENT / NOTEBOOK), as_version=4)
    samples = list(sample_answers().items())
    for index in range(count):
        name, answers = samples[index % len(samples)]
        path = course / "submitted" / f"{name}_{index // len(samples):02d}" / ASSIGNMENT / NOTEBOOK
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(release, answers), str(path))


def prepare_course(course, count):
    course.mkdir(parents=True)
    shutil.copy(COURSE_CONFIG, course / "nbgrader_config.py")
    write_source(course)
    generate_release(course)  # also records the assignment in gradebook.db, as autograde needs
    write_class(course, count)
    return course


def without_kit_preprocessors(config_text):
    """The config minus every statement that puts the kit's steps into nbgrader's pipelines."""
    lines = config_text.splitlines(keepends=True)
    found = [node for node in ast.parse(config_text).body
             if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) in KIT_PIPELINES]
    if not found:
        raise ValueError("no kit pipeline found; is this the kit's config?")
    for node in reversed(found):  # from the bottom, so earlier line numbers stay valid
        del lines[node.lineno - 1:node.end_lineno]
    return "".join(lines) + "\n# stock baseline: nbgrader's default pipelines\n"


def prepare_stock_course(course, stock):
    # Same release, gradebook and class; only the autograde pipeline differs.
    shutil.copytree(course, stock)
    config = stock / "nbgrader_config.py"
    config.write_text(without_kit_preprocessors(config.read_text(encoding="utf-8")),
                      encoding="utf-8")
    return stock


def timed_run(template, folder, command):
    """Copy the course afresh (no shared gradebook or output), run `command` in it, time it."""
    shutil.copytree(template, folder)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=tool_environment(),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed in {folder}:\n{done.stdout}{done.stderr}")
    return seconds


def best_of(repeat, template, work, tag, command):
    """Best time of `repeat` runs, and the folder of the last run (to read its grades)."""
    times = [timed_run(template, work / f"{tag}-{run}", command) for run in range(repeat)]
    return min(times), work / f"{tag}-{repeat - 1}"


def mhakit_totals(folder):
    with open(folder / "results" / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: float(row["total"]) for row in csv.DictReader(handle)}


def gradebook_totals(folder):
    """Per-student scores as nbgrader's gradebook holds them, via `nbgrader export`."""
    done = subprocess.run(["nbgrader", "export"], cwd=folder, env=tool_environment(),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader export failed in {folder}:\n{done.stdout}{done.stderr}")
    with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


def methods(course, stock):
    """(label, course to copy, command, reader of per-student totals), baseline last."""
    mhakit = ["mhakit", "grade", "submitted", "--out", "results", "--quiet", "--seed", str(SEED)]
    autograde = ["nbgrader", "autograde", ASSIGNMENT, "--force"]
    return [
        ("mhakit grade (all cores)", course, mhakit, mhakit_totals),
        ("mhakit grade --jobs 1", course, mhakit + ["--jobs", "1"], mhakit_totals),
        # The same seed as mhakit grade, so that the two sets of totals can be compared.
        ("nbgrader autograde + kit config", course,
         autograde + [f"--IsolatedAutograde.seed={SEED}"], gradebook_totals),
        ("stock nbgrader autograde (kernel)", stock, autograde, gradebook_totals),
    ]


def measure(args, work, course, stock):
    """{label: (best seconds, totals)}; runs one method after another, never in parallel."""
    measured = {}
    for tag, (label, template, command, read_totals) in enumerate(methods(course, stock)):
        Console(stderr=True).print(f"timing {label}: {' '.join(command)}")
        seconds, last = best_of(args.repeat, template, work, f"run{tag}", command)
        measured[label] = (seconds, read_totals(last))
    return measured


def speed_table(measured, count, repeat):
    baseline = list(measured.values())[-1][0]
    table = Table(box=box.SIMPLE_HEAD,
                  title=f"Grading {count} notebooks (best of {repeat})")
    for header in ("method", "graded", "total s", "s / notebook",
                   "× faster than stock nbgrader autograde"):
        table.add_column(header, justify="left" if header == "method" else "right")
    for label, (seconds, totals) in measured.items():
        table.add_row(label, str(len(totals)), f"{seconds:.2f}", f"{seconds / count:.3f}",
                      f"{baseline / seconds:.1f}×")
    return table


def totals_report(measured):
    """Lines saying whether mhakit grade and the kit's nbgrader autograde agree, per student."""
    labels = list(measured)
    reference = measured[labels[2]][1]
    lines = []
    for label in labels[:2]:
        totals = measured[label][1]
        differing = sorted(s for s in reference.keys() | totals.keys()
                           if totals.get(s) != reference.get(s))
        verdict = "equal" if not differing else f"DIFFER for {', '.join(differing)}"
        lines.append(f"per-student totals, {label} vs {labels[2]}: {verdict}")
    return lines


def by_sample(totals):
    """{sample student: "total"} over its replicas; a range shows when replicas disagree."""
    groups = {}
    for student, total in totals.items():
        groups.setdefault(student.rsplit("_", 1)[0], []).append(total)
    return {sample: f"{min(v):g}" if min(v) == max(v) else f"{min(v):g}–{max(v):g}"
            for sample, v in groups.items()}


def totals_table(measured):
    shown = {label: by_sample(totals) for label, (_, totals) in measured.items()}
    samples = sorted({sample for row in shown.values() for sample in row})
    table = Table(box=box.SIMPLE_HEAD, title="Per-student totals, by sample student")
    table.add_column("method")
    for sample in samples:
        table.add_column(sample, justify="right")
    for label, row in shown.items():
        table.add_row(label, *(row.get(sample, "-") for sample in samples))
    return table


def report(console, measured, count, repeat):
    console.print(f"cores (os.cpu_count): {os.cpu_count()}   notebooks N: {count}")
    console.print(speed_table(measured, count, repeat))
    for line in totals_report(measured):
        console.print(line)
    console.print(totals_table(measured))
    console.print("(stock nbgrader grades by the public self-check cells, so its totals are "
                  "shown but not compared)")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", type=int, default=20, metavar="N",
                        help="notebooks in the class (default 20)")
    parser.add_argument("--repeat", type=int, default=1, metavar="R",
                        help="runs per method; the best is reported (default 1)")
    parser.add_argument("--keep", metavar="DIR", help="build and keep the work folder here")
    args = parser.parse_args(argv)
    if args.notebooks < 1 or args.repeat < 1:
        parser.error("--notebooks and --repeat must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    # rich assumes 80 columns when piped; the table is wider than that.
    console = Console() if Console().is_terminal else Console(width=120)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mhakit-speed-"))
    try:
        Console(stderr=True).print(f"preparing a course with {args.notebooks} notebooks in {work}")
        course = prepare_course(work / "course", args.notebooks)
        stock = prepare_stock_course(course, work / "course-stock")
        measured = measure(args, work, course, stock)
        report(console, measured, args.notebooks, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
