"""How fast grading a class is: mhakit grade against nbgrader autograde, side by side.

One run builds a throwaway nbgrader course (source, release, gradebook) and a class of
notebooks: the 4 bundled sample students (correct, partly wrong, unanswered, cheating)
plus a broken one (a syntax error, and a function that kills its own process), cycled
and numbered, e.g. alice_correct_0003, each code answer signed with a comment of its
own. Then, with one fixed seed, it times:

  1. ``mhakit grade submitted --gradebook`` on the first N notebooks, for each N given
     (results on disk and the scores in nbgrader's gradebook count in the time);
  2. on the first M notebooks (the baseline subset) all of these, each in a fresh copy
     of the course, one after another:
       - ``mhakit grade`` again, so that the ratios compare the very same notebooks;
       - ``nbgrader autograde`` with the kit's nbgrader_config.py (the kit's isolated
         grader replaces nbgrader's Execute step: no Jupyter kernel);
       - stock ``nbgrader autograde``, the baseline: the same config without the kit's
         steps, so each notebook runs in a Jupyter kernel.

Every command runs as a subprocess, timed with time.perf_counter, while a thread samples
the memory of its whole process tree (the sum of resident memory, every 100 ms: an upper
bound, as forked processes share pages). It prints notebooks per second, the peak
memory, the ratios, the time per notebook at each N (linear growth keeps it flat) and the
pace once a run is under way (the results' write times, the first tenth left out), and
whether mhakit grade and the kit's nbgrader autograde give every student the same total
(it exits 1 if they do not), and, from each mhakit run's timing.json, the milliseconds per
notebook spent in each phase (planning, child start, round trips, comparison and
diagnosis, writing results).

Run it from the repository root:

    .venv/bin/python benchmarks/grading_speed.py --notebooks 100 300 1000 --baseline-notebooks 20
"""

import argparse
import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from rich import box
from rich.console import Console
from rich.table import Table

from mhakit.authoring.build import generate_release, tool_environment, write_source
from mhakit.exercise import current
from mhakit.integrations.demo import COURSE_CONFIG
from mhakit.phases import ORDER
# Run as a script, Python puts benchmarks/ on the path, not the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.mha_exercise import fill, reference_body, sample_answers

SEED = 1
EXERCISE = current()
ASSIGNMENT, NOTEBOOK = EXERCISE.default_assignment, EXERCISE.notebook  # the Chinese one
KIT_PIPELINES = ("c.Autograde.autograde_preprocessors", "c.Autograde.sanitize_preprocessors",
                 "c.GenerateFeedback.preprocessors")
MHAKIT, KIT_NBGRADER, STOCK = "mhakit grade", "nbgrader autograde + kit config", \
    "stock nbgrader autograde (kernel)"


def class_answers():
    """[(name, answers)]: the bundled samples plus a broken notebook."""
    samples = list(sample_answers().items())
    broken = dict(samples[0][1])
    broken["answer_softmax"] = "def softmax(x, axis=-1)\n    return x\n"  # a syntax error
    broken["answer_multi_head_attention"] = (
        "import os\n\ndef multi_head_attention(*args, **kwargs):\n    os._exit(3)\n")
    broken["answer_dot_product"] = reference_body("dot_product") + "\nraise RuntimeError('oops')\n"
    return samples + [("erin_broken", broken)]


def write_class(course, count):
    """submitted/<sample>_<number>/mha/mha.ipynb for `count` students, cycling the samples.

    Each student's code answers end with a comment that names them, so no two students
    hand in the same source, as in a real class: a cache keyed by a cell's source helps
    the cells that every student leaves as released, not the answers."""
    release = nbformat.read(str(course / "assignments" / ASSIGNMENT / NOTEBOOK), as_version=4)
    samples = class_answers()
    for index in range(count):
        name, answers = samples[index % len(samples)]
        student = f"{name}_{index:04d}"
        own = {cell: source + f"\n# {student}\n" if cell.startswith("answer_") else source
               for cell, source in answers.items()}
        path = course / "submitted" / student / ASSIGNMENT / NOTEBOOK
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(fill(release, own)), encoding="utf-8")


def prepare_course(course, count):
    course.mkdir(parents=True)
    shutil.copy(COURSE_CONFIG, course / "nbgrader_config.py")
    write_source(EXERCISE, course, [ASSIGNMENT])
    generate_release(course, ASSIGNMENT)  # also records it in gradebook.db, as autograde needs
    write_class(course, count)
    return course


def first_students(course, count, target):
    """A copy of the course whose class is its first `count` students."""
    shutil.copytree(course, target, ignore=shutil.ignore_patterns("submitted"))
    by_number = sorted((course / "submitted").iterdir(), key=lambda p: p.name.rsplit("_", 1)[1])
    for student in by_number[:count]:  # the mix of samples, not alice after alice
        shutil.copytree(student, target / "submitted" / student.name)
    return target


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


def make_stock(course):
    config = course / "nbgrader_config.py"
    config.write_text(without_kit_preprocessors(config.read_text(encoding="utf-8")),
                      encoding="utf-8")
    return course


# ------------------------------------------------------------ memory of a process tree

PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(root):
    """Sum of the resident memory (bytes) of ``root`` and all its descendants. One read of
    /proc/<pid>/stat per process (parent and rss are both there), so that sampling
    costs the measured run little."""
    children, rss = {}, {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * PAGE
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


class PeakMemory(threading.Thread):
    def __init__(self, pid, every=0.1):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak = pid, every, 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self.done.wait(self.every)

    def stop(self):
        self.done.set()
        self.join()
        return self.peak


def timed_run(course, command, may_fail=False):
    """Run `command` in `course`; (seconds, peak bytes of its process tree).

    ``may_fail``: stock nbgrader exits 1 when a notebook kills its kernel (the broken
    sample does), after grading the others; that run still counts, and says so."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=course, env=tool_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = PeakMemory(process.pid)
    sampler.start()
    output, _ = process.communicate()
    seconds = time.perf_counter() - start
    peak = sampler.stop()
    if process.returncode != 0:
        if not may_fail:
            raise RuntimeError(f"{' '.join(command)} failed in {course}:\n{output}")
        failed = sorted(set(re.findall(r"error processing assignment '[^']*' for student "
                                       r"'([^']*)'", output)))
        Console(stderr=True).print(f"  exit {process.returncode}; not graded: {', '.join(failed)}")
    return seconds, peak


# ------------------------------------------------------------ the commands and their totals

def mhakit_command():
    return ["mhakit", "grade", "submitted", "--out", "results", "--quiet", "--seed", str(SEED),
            "--gradebook", "."]


def autograde_command(kit):
    # The same seed as mhakit grade, so that the two sets of totals can be compared.
    seed = [f"--IsolatedAutograde.seed={SEED}"] if kit else []
    return ["nbgrader", "autograde", ASSIGNMENT, "--force"] + seed


def mhakit_timing(course):
    """The run's timing.json: seconds per notebook in each phase (see mhakit/phases.py),
    and the steady pace between its results (``steady_pace``)."""
    timing = json.loads((course / "results" / "timing.json").read_text(encoding="utf-8"))
    return dict(timing, steady_seconds_per_notebook=steady_pace(course / "results"))


def steady_pace(results):
    """Seconds per notebook once a run is under way: from the result written when a tenth
    of the class was done to the last one, by the files' modification times (each
    results.json is written once, as its student's result arrives). What a run costs
    whatever its size, before its first results and after its last, is left out."""
    written = sorted(path.stat().st_mtime for path in results.glob("*/results.json"))
    start = len(written) // 10
    if len(written) - start < 2:
        return None
    return (written[-1] - written[start]) / (len(written) - 1 - start)


def mhakit_totals(course):
    with open(course / "results" / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: float(row["total"]) for row in csv.DictReader(handle)}


def gradebook_totals(course):
    """Per-student scores as nbgrader's gradebook holds them, via `nbgrader export`."""
    done = subprocess.run(["nbgrader", "export"], cwd=course, env=tool_environment(),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader export failed in {course}:\n{done.stdout}{done.stderr}")
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


def measure(course, work, sizes, subset, repeat):
    """[(label, notebooks, seconds, peak bytes, totals, timing.json or None)], best of
    `repeat` per row."""
    plan = [(MHAKIT, n, mhakit_command(), mhakit_totals, False) for n in sizes]
    plan += [(MHAKIT, subset, mhakit_command(), mhakit_totals, False),
             (KIT_NBGRADER, subset, autograde_command(True), gradebook_totals, False),
             (STOCK, subset, autograde_command(False), gradebook_totals, True)]
    rows, log = [], Console(stderr=True)
    for tag, (label, count, command, totals, stock) in enumerate(plan):
        best = None
        for run in range(repeat):
            folder = first_students(course, count, work / f"run{tag}-{run}")
            if stock:
                make_stock(folder)
            log.print(f"timing {label} on {count} notebooks: {' '.join(command)}")
            seconds, peak = timed_run(folder, command, may_fail=stock)
            log.print(f"  {seconds:.2f} s, {count / seconds:.1f} notebooks/s, "
                      f"peak {peak / 2 ** 20:.0f} MB")
            if best is None or seconds < best[0]:
                timing = mhakit_timing(folder) if label == MHAKIT else None
                best = (seconds, peak, totals(folder), timing)
            shutil.rmtree(folder) if run < repeat - 1 else None
        rows.append((label, count, *best))
    return rows


# ------------------------------------------------------------ the report

def speed_table(rows, subset):
    on_subset = {label: seconds for label, count, seconds, *_ in rows[-3:]}
    table = Table(box=box.SIMPLE_HEAD, title="Grading speed (one fixed seed; best of the repeats)")
    for header in ("method", "notebooks", "seconds", "notebooks / s", "peak memory",
                   f"× stock nbgrader ({subset})", f"× kit nbgrader ({subset})"):
        table.add_column(header, justify="left" if header == "method" else "right")
    for label, count, seconds, peak, *_ in rows:
        rate = count / seconds
        vs = [f"{rate / (subset / on_subset[base]):.1f}×" for base in (STOCK, KIT_NBGRADER)]
        table.add_row(label, str(count), f"{seconds:.2f}", f"{rate:.1f}",
                      f"{peak / 2 ** 20:.0f} MB", *vs)
    return table


def linearity_lines(rows):
    """Seconds per notebook at each size, and the marginal cost between sizes."""
    mine = sorted({(count, seconds) for label, count, seconds, *_ in rows[:-3]
                   if label == MHAKIT})
    lines = ["mhakit grade, seconds per notebook: " +
             ", ".join(f"{seconds / count:.4f} at {count}" for count, seconds in mine)]
    for (n1, t1), (n2, t2) in zip(mine, mine[1:]):
        each = (t2 - t1) / (n2 - n1)
        lines.append(f"  each notebook from {n1} to {n2} added {each:.4f} s; the line through "
                     f"the two meets 0 notebooks at {t1 - n1 * each:.2f} s, what a run costs "
                     "whatever its size (starting, probing, reading the gradebook)")
    if len(mine) > 1:
        (small, t_small), (large, t_large) = mine[0], mine[-1]
        apart = _apart(t_large / large, t_small / small)
        lines.append(f"  the time per notebook at {large} is {apart} the time at {small}")
    pace = sorted({count: timing.get("steady_seconds_per_notebook") for label, count, _, _, _,
                   timing in rows[:-3] if label == MHAKIT}.items())
    pace = [(count, seconds) for count, seconds in pace if seconds]
    if pace:
        lines.append("  once under way (from the first tenth of the results to the last): " +
                     ", ".join(f"{seconds:.4f} s per notebook at {count}"
                               for count, seconds in pace))
    if len(pace) > 1:
        (small, p_small), (large, p_large) = pace[0], pace[-1]
        lines.append(f"  that pace at {large} is {_apart(p_large, p_small)} the pace at {small}")
    return lines


def _apart(value, base):
    change = value / base - 1
    return f"{abs(change):.0%} {'above' if change > 0 else 'below'}"


def agreement(rows):
    """Whether mhakit grade and the kit's nbgrader autograde agree, student by student."""
    mine, theirs = rows[-3][4], rows[-2][4]  # the totals of each
    differing = sorted(s for s in mine.keys() | theirs.keys() if mine.get(s) != theirs.get(s))
    return differing


def by_sample(totals):
    groups = {}
    for student, total in totals.items():
        groups.setdefault(student.rsplit("_", 1)[0], []).append(total)
    return {sample: f"{min(v):g}" if min(v) == max(v) else f"{min(v):g}–{max(v):g}"
            for sample, v in groups.items()}


def totals_table(rows):
    table = Table(box=box.SIMPLE_HEAD, title="Totals on the baseline subset, by sample student")
    shown = [(label, by_sample(totals)) for label, _, _, _, totals, _ in rows[-3:]]
    samples = sorted({sample for _, row in shown for sample in row})
    table.add_column("method")
    for sample in samples:
        table.add_column(sample, justify="right")
    for label, row in shown:
        table.add_row(label, *(row.get(sample, "-") for sample in samples))
    return table


def breakdown_table(rows):
    """Where mhakit grade's time went, per notebook, at each class size: each phase's
    seconds added up over the workers (so they sum to about jobs × wall), from the run's
    timing.json, beside the wall time per notebook."""
    runs = sorted({count: timing for label, count, _, _, _, timing in rows[:-3]
                   if label == MHAKIT}.items())
    seconds = {count: timing["seconds_per_notebook"] for count, timing in runs}
    phases = [name for name in ORDER if any(per.get(name) for per in seconds.values())]
    table = Table(box=box.SIMPLE_HEAD, title="mhakit grade: milliseconds per notebook, by "
                  f"phase (added over the {runs[0][1]['jobs']} workers)")
    table.add_column("phase")
    for count, _ in runs:
        table.add_column(f"{count} notebooks", justify="right")
    for name in phases:
        table.add_row(name, *(f"{seconds[count].get(name, 0) * 1000:.1f}" for count, _ in runs))
    table.add_row("all phases", *(f"{sum(seconds[count].values()) * 1000:.1f}"
                                  for count, _ in runs))
    table.add_row("wall time once the gradebook is read / notebooks", *(
        f"{timing['wall_seconds'] / timing['notebooks'] * 1000:.1f}" for _, timing in runs))
    return table


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", type=int, nargs="+", default=[100], metavar="N",
                        help="class sizes for mhakit grade (default 100)")
    parser.add_argument("--baseline-notebooks", type=int, default=20, metavar="M",
                        help="notebooks graded by all three methods (default 20)")
    parser.add_argument("--repeat", type=int, default=1, metavar="R",
                        help="runs per row; the fastest is reported (default 1)")
    parser.add_argument("--keep", metavar="DIR", help="build and keep the work folder here")
    args = parser.parse_args(argv)
    if min(args.notebooks) < 1 or args.baseline_notebooks < 1 or args.repeat < 1:
        parser.error("sizes and --repeat must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    # rich assumes 80 columns when piped; the tables are wider than that.
    console = Console() if Console().is_terminal else Console(width=140)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mhakit-speed-"))
    # mhakit grade refuses a course that other accounts can read; mkdtemp is private already.
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    work.chmod(0o700)
    try:
        count = max(args.notebooks + [args.baseline_notebooks])
        Console(stderr=True).print(f"preparing a course with {count} notebooks in {work}")
        course = prepare_course(work / "course", count)
        rows = measure(course, work, sorted(args.notebooks), args.baseline_notebooks,
                       args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    console.print(f"cores (os.cpu_count): {os.cpu_count()}")
    console.print(speed_table(rows, args.baseline_notebooks))
    for line in linearity_lines(rows):
        console.print(line)
    console.print(breakdown_table(rows))
    console.print(totals_table(rows))
    differing = agreement(rows)
    console.print("per-student totals, mhakit grade vs nbgrader autograde + kit config: " +
                  ("equal" if not differing else f"DIFFER for {', '.join(differing)}"))
    console.print("(stock nbgrader grades only the public self-check cells, in a kernel "
                  "where student code can rewrite them; its totals are shown, not compared)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
