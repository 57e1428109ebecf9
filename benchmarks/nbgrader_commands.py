"""What one nbgrader command costs as nbgrader runs it, and as the kit runs it.

The kit runs nbgrader for its own builds and for the test suite's courses through
``python -m mhakit.authoring.nbgrader_command`` (see that module): nbgrader's command line
without jsonschema's parsers of the "iri" format, and, for a new gradebook, without a
process of ``alembic heads``. This times, side by side, the same commands both ways:

  1. ``nbgrader db assignment add mha`` in a course that has no gradebook yet, so that
     nbgrader makes one (the first command of every new course);
  2. ``nbgrader db student list`` in a course whose gradebook exists.

Each round runs every command both ways, in turn (which one first alternates), each in a
fresh copy of a course folder that holds only the kit's nbgrader_config.py. It prints the
median wall time and CPU time (the command's own and its children's: ``alembic heads`` is
one) of each, and the kit's way as a ratio of nbgrader's.

    .venv/bin/python benchmarks/nbgrader_commands.py --repeat 7
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mhakit.authoring.nbgrader_command import command as kit_command

REPOSITORY = Path(__file__).resolve().parents[1]
WAYS = {"nbgrader": [sys.executable, "-m", "nbgrader"], "the kit's": kit_command()}
COMMANDS = {
    "db assignment add (new gradebook)": (["db", "assignment", "add", "mha"], False),
    "db student list (gradebook exists)": (["db", "student", "list"], True),
}


def fresh_course(root, with_gradebook):
    """A course folder with the kit's config, and a gradebook if asked."""
    course = Path(tempfile.mkdtemp(dir=root))
    shutil.copy(REPOSITORY / "nbgrader_config.py", course)
    if with_gradebook:
        run(WAYS["the kit's"] + ["db", "assignment", "add", "mha"], course)
    return course


def run(command, course):
    """(wall seconds, CPU seconds of the process and all it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PATH=f"{Path(sys.executable).parent}"
                                                    f"{os.pathsep}{os.environ['PATH']}"))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(repeat, root):
    """{(command, way): [(wall, cpu), ...]}, the ways alternating which goes first."""
    times = {}
    for round_number in range(repeat):
        ways = list(WAYS) if round_number % 2 == 0 else list(reversed(WAYS))
        for label, (arguments, with_gradebook) in COMMANDS.items():
            for way in ways:
                course = fresh_course(root, with_gradebook)
                times.setdefault((label, way), []).append(run(WAYS[way] + arguments, course))
                shutil.rmtree(course)
    return times


def report(times, repeat):
    table = Table(title=f"One nbgrader command, both ways (medians of {repeat} rounds)")
    for column in ("command", "way", "wall s", "CPU s", "wall, kit / nbgrader",
                   "CPU, kit / nbgrader"):
        table.add_column(column, justify="left" if column in ("command", "way") else "right")
    for label in COMMANDS:
        medians = {way: [statistics.median(values) for values in zip(*times[(label, way)])]
                   for way in WAYS}
        plain = medians["nbgrader"]
        for way, (wall, cpu) in medians.items():
            ratios = ("", "") if way == "nbgrader" else (f"{wall / plain[0]:.2f}",
                                                         f"{cpu / plain[1]:.2f}")
            table.add_row(label, way, f"{wall:.2f}", f"{cpu:.2f}", *ratios)
    Console(width=max(Console().width, 110)).print(table)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, metavar="R",
                        help="rounds, each running every command both ways (default 5)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="mhakit-nbgrader-bench-") as root:
        report(measure(args.repeat, root), args.repeat)


if __name__ == "__main__":
    main()
