"""How fast two commits of the kit grade the same class, side by side, in one run.

It is how a restructuring shows that it grades within 10% of the commit before it. Each
side is a commit, checked out with ``git worktree add --detach`` in a temporary folder
and removed at the end, or WORKTREE: this repository's working tree as it is.

Both sides run on this interpreter, each with ``PYTHONPATH=<its root>``, which comes
before the editable install; the run stops if the kit's package (``mhakit``, or
``autograder`` before the rename) would still be imported from elsewhere. Module paths
move between commits, so nothing of the kit is imported here: everything goes through
each side's own command line, the ``mhakit`` entry of its pyproject.toml.

Each side builds its own class, since its grader checks submissions against its own
release: ``mhakit demo --keep`` writes a course with the 4 sample students, which are
cycled into N numbered copies, e.g. alice_correct_0003, each code answer signed with a
comment of its own. Then, for R rounds, the sides take turns (old, new, old, new, ...:
a busy spell of the machine hits both), each timing
``mhakit grade CLASS --out FRESH --seed S --jobs J --fresh --quiet`` as a subprocess
with time.perf_counter (with ``--gradebook``, CLASS is the demo course's submitted/ folder
and each round also writes the course's gradebook and autograded/ folder). With
``--door nbgrader`` each round times ``python -m nbgrader autograde ASSIGNMENT --force
--IsolatedAutograde.seed=S`` instead, in the demo course (whose nbgrader_config.py grades
with the side's own plugin), once per assignment the class holds; the totals come from
``nbgrader export``, run after the timing. The table
gives each side's median and min seconds, notebooks per second and the ratio new/old of
the medians. The exit status is 1 if the
two sides give a sample student different totals, 2 if a step fails (its output is shown).

Run it from the repository root:

    .venv/bin/python benchmarks/grading_commits.py --old a397226 --new HEAD --notebooks 60 --repeat 3
"""

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKTREE = "WORKTREE"
# The same interpreter (and so the same numpy, nbformat and nbgrader) for both sides.
PYTHON = sys.executable


class Failure(Exception):
    """A step that makes the comparison meaningless; main prints it and exits 2."""


def log(message):
    print(message, file=sys.stderr, flush=True)


def git(*args):
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"git {' '.join(args)} failed:\n{done.stderr.strip()}")
    return done.stdout.strip()


def cli_module(root):
    """The module of the mhakit entry point in root's pyproject.toml, e.g. mhakit.cli."""
    try:
        with open(root / "pyproject.toml", "rb") as handle:
            entry = tomllib.load(handle)["project"]["scripts"]["mhakit"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise Failure(f"no mhakit entry point in {root / 'pyproject.toml'}: {error!r}")
    return entry.split(":")[0]


class Side:
    """One commit (or the working tree) and the folders this run gives it."""

    def __init__(self, label, rev, work):
        self.label, self.work = label, work / label
        self.work.mkdir(parents=True)
        self.worktree = self.commit = self.klass = self.course = None
        self.seconds, self.totals = [], {}
        if rev == WORKTREE:
            self.root, self.name = REPO, "working tree"
        else:
            # The hash, not the name: HEAD may move while the benchmark runs.
            self.commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
            self.name = self.commit[:7]

    def check_out(self):
        if self.commit:
            self.worktree = Path(tempfile.mkdtemp(prefix=f"mhakit-{self.label}-")) / "tree"
            git("worktree", "add", "--detach", str(self.worktree), self.commit)
            self.root = self.worktree
        # Read once: the working tree's pyproject.toml may change while this runs.
        self.cli = cli_module(self.root)

    def remove(self):
        if self.worktree is None:
            return
        if self.worktree.exists():
            git("worktree", "remove", "--force", str(self.worktree))
        shutil.rmtree(self.worktree.parent, ignore_errors=True)

    def environment(self):
        return dict(os.environ, PYTHONPATH=str(self.root))

    def python(self, *args):
        # cwd is this side's own work folder: -c puts the cwd first on sys.path, and
        # the repository's root there would shadow another commit's package.
        return subprocess.run([PYTHON, *args], cwd=self.work, env=self.environment(),
                              capture_output=True, text=True)

    def check_import(self):
        package = self.cli.split(".")[0]  # the kit's package at this commit (it was renamed)
        done = self.python("-c", f"import {package}; print({package}.__file__)")
        found = Path(done.stdout.strip() or "?").resolve()
        if done.returncode != 0 or not found.is_relative_to(self.root.resolve()):
            raise Failure(f"{self.label} ({self.name}): {package} comes from {found}, not "
                          f"from {self.root}\n{done.stderr.strip()}")

    def nbgrader(self, course, *args):
        # In the course, as an instructor runs it: python -m puts the course first on
        # sys.path, then PYTHONPATH, this side's root, for its nbgrader_config.py's plugin.
        return subprocess.run([PYTHON, "-m", "nbgrader", *map(str, args)], cwd=course,
                              env=self.environment(), capture_output=True, text=True)

    def mhakit(self, *args):
        code = f"import sys; from {self.cli} import main; sys.exit(main())"
        return self.python("-c", code, *map(str, args))


def require(done, what):
    if done.returncode != 0:
        raise Failure(f"{what} exited {done.returncode}:\n{done.stdout[-3000:]}"
                      f"{done.stderr[-3000:]}")


def build_class(side, count, gradebook=False):
    """class/<sample>_<NNNN>/mha/... for `count` students, cycling the side's own demo;
    with ``gradebook``, in the demo course's submitted/ folder instead."""
    course = side.work / "course"
    log(f"{side.label} ({side.name}): mhakit demo --keep {course}")
    require(side.mhakit("demo", "--keep", course), f"{side.label}: mhakit demo")
    samples = sorted(p for p in (course / "submitted").iterdir() if p.is_dir())
    if not samples:
        raise Failure(f"{side.label}: the demo wrote no students to {course / 'submitted'}")
    side.klass = side.work / "class"
    if gradebook:  # the class is the course's own, so that its gradebook takes the grades
        shutil.move(course / "submitted", side.work / "samples")
        samples = [side.work / "samples" / sample.name for sample in samples]
        side.klass, side.course = course / "submitted", course
    for index in range(count):
        sample = samples[index % len(samples)]
        student = f"{sample.name}_{index:04d}"
        for assignment in sample.iterdir():
            shutil.copytree(assignment, side.klass / student / assignment.name)
        for notebook in (side.klass / student).rglob("*.ipynb"):
            sign(notebook, student)


def sign(notebook, student):
    """Ends each code answer of ``notebook`` with a comment naming ``student``: in a real
    class no two students hand in the same source, so a cache keyed by a cell's source
    must not make the copies look cheaper than they are."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution"):
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            cell["source"] = source + f"\n# {student}\n"
    notebook.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def grade_once(side, run, args):
    if args.door == "nbgrader":
        return autograde_once(side, run, args)
    out = side.work / f"results-{run}"
    command = ["grade", side.klass, "--out", out, "--seed", args.seed, "--jobs", args.jobs,
               "--fresh", "--quiet"] + (["--gradebook", side.course] if args.gradebook else [])
    start = time.perf_counter()
    done = side.mhakit(*command)
    seconds = time.perf_counter() - start
    require(done, f"{side.label}: mhakit grade")
    side.seconds.append(seconds)
    read_totals(side, out / "grades.csv")
    if not args.keep:
        shutil.rmtree(out)
    log(f"  round {run + 1}, {side.label} ({side.name}): {seconds:.2f} s")


def autograde_once(side, run, args):
    """One round of the nbgrader door: autograde every assignment of the class, timed
    together; then export the grades (not timed) and read their totals."""
    assignments = sorted({folder.name for student in side.klass.iterdir()
                          for folder in student.iterdir() if folder.is_dir()})
    start = time.perf_counter()
    for assignment in assignments:
        require(side.nbgrader(side.course, "autograde", assignment, "--force",
                              f"--IsolatedAutograde.seed={args.seed}"),
                f"{side.label}: nbgrader autograde {assignment}")
    seconds = time.perf_counter() - start
    side.seconds.append(seconds)
    exported = side.work / f"grades-{run}.csv"
    require(side.nbgrader(side.course, "export", "--to", exported),
            f"{side.label}: nbgrader export")
    read_totals(side, exported, student="student_id", total="score")  # nbgrader's columns
    log(f"  round {run + 1}, {side.label} ({side.name}): {seconds:.2f} s")


def read_totals(side, path, student="student", total="total"):
    """Each sample student's totals, over all its copies and rounds, from a CSV whose
    columns ``student`` and ``total`` name them (mhakit grade's grades.csv by default)."""
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            sample = row[student].rsplit("_", 1)[0]
            side.totals.setdefault(sample, set()).add(float(row[total]))


def report(old, new, args):
    print(f"{'side':<6} {'code':<13} {'median s':>9} {'min s':>7} {'notebooks/s':>12}")
    for side in (old, new):
        median = statistics.median(side.seconds)
        print(f"{side.label:<6} {side.name:<13} {median:>9.2f} {min(side.seconds):>7.2f} "
              f"{args.notebooks / median:>12.1f}")
    ratio = statistics.median(new.seconds) / statistics.median(old.seconds)
    how = "nbgrader autograde" if args.door == "nbgrader" else f"mhakit grade, {args.jobs} jobs"
    print(f"new/old = {ratio:.2f} (median of {args.repeat} rounds, {args.notebooks} "
          f"notebooks, {how})")


def differing_totals(old, new):
    samples = sorted(old.totals.keys() | new.totals.keys())
    return [f"{s}: old {sorted(old.totals.get(s, []))}, new {sorted(new.totals.get(s, []))}"
            for s in samples if old.totals.get(s) != new.totals.get(s)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="a397226", help="a commit (default a397226)")
    parser.add_argument("--new", default=WORKTREE,
                        help=f"a commit, or {WORKTREE} for the working tree (the default)")
    parser.add_argument("--notebooks", type=int, default=60, metavar="N",
                        help="submissions in each side's class (default 60)")
    parser.add_argument("--repeat", type=int, default=3, metavar="R",
                        help="timed rounds per side (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="mhakit grade --jobs (default 2)")
    parser.add_argument("--seed", type=int, default=1234, help="mhakit grade --seed (default 1234)")
    parser.add_argument("--keep", metavar="DIR",
                        help="build the courses, classes and results here and keep them")
    parser.add_argument("--gradebook", action="store_true",
                        help="grade the class as the demo course's submitted/ folder, with "
                             "mhakit grade --gradebook")
    parser.add_argument("--door", choices=("mhakit", "nbgrader"), default="mhakit",
                        help="time mhakit grade (the default), or nbgrader autograde in the "
                             "demo course")
    args = parser.parse_args(argv)
    if min(args.notebooks, args.repeat, args.jobs) < 1:
        parser.error("--notebooks, --repeat and --jobs must be at least 1")
    if args.keep and any((Path(args.keep) / label).exists() for label in ("old", "new")):
        parser.error(f"{args.keep} already holds an old/ or new/ folder from an earlier run")
    return args


def compare(args, work):
    sides = []
    try:
        for label, rev in (("old", args.old), ("new", args.new)):
            sides.append(Side(label, rev, work))
        for side in sides:
            side.check_out()
            side.check_import()
        for side in sides:
            build_class(side, args.notebooks, args.gradebook or args.door == "nbgrader")
        log(f"timing {args.door} on {args.notebooks} notebooks, {args.repeat} rounds")
        for run in range(args.repeat):
            for side in sides:
                grade_once(side, run, args)
    finally:
        for side in sides:
            side.remove()
    return sides


def main(argv=None):
    args = parse_args(argv)
    work = (Path(args.keep).resolve() if args.keep
            else Path(tempfile.mkdtemp(prefix="mhakit-commits-")))
    try:
        old, new = compare(args, work)
    except Failure as failure:
        log(f"grading_commits: {failure}")
        return 2
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report(old, new, args)
    differing = differing_totals(old, new)
    for line in differing:
        print(f"WARNING: the sides' totals differ for {line}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
