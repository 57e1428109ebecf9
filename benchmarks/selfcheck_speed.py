"""How long a student waits for the self-check of a complete notebook.

It builds a throwaway course as grading_speed.py does, takes its correct sample student's
notebook, and times the two ways a student checks their work, each ``--repeat`` times:

  1. ``python selfcheck.py mha.ipynb`` in the release folder, as a subprocess: a fresh
     interpreter that reads the saved notebook (the wall time includes Python's start);
  2. the notebook's last cell, ``check()``, in a namespace that has run every cell before
     it, as a kernel would have (cells go through IPython's transformers, as in Jupyter).

It prints the median and the slowest of each, against the budget of 0.2 s.

    .venv/bin/python benchmarks/selfcheck_speed.py --repeat 10
"""

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grading_speed import ASSIGNMENT, NOTEBOOK, prepare_course

BUDGET = 0.2  # seconds


def saved_notebook(course):
    return next((course / "submitted").glob(f"alice_correct_*/{ASSIGNMENT}/{NOTEBOOK}"))


def time_command_line(release, notebook, repeat):
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "selfcheck.py", str(notebook)], cwd=release,
                              capture_output=True, text=True, timeout=120)
        seconds.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"selfcheck.py exited {done.returncode}:\n{done.stdout}"
                               f"{done.stderr}")
    return seconds


def time_last_cell(release, notebook, repeat):
    """The ``check()`` cell's seconds, after the cells before it ran once, in the release
    folder (where a kernel started by JupyterLab would be)."""
    import matplotlib
    matplotlib.use("Agg")  # the lesson's figures, drawn where nobody sees them
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    cells = [cell.source for cell in nbformat.read(str(notebook), as_version=4).cells
             if cell.cell_type == "code"]
    namespace = {"__name__": "__main__"}
    here = os.getcwd()
    os.chdir(release)
    sys.path.insert(0, str(release))
    try:
        with redirect_stdout(io.StringIO()):
            for source in cells[:-1]:
                exec(compile(transform(source), "<cell>", "exec"), namespace)
        last = compile(transform(cells[-1]), "<cell>", "exec")
        seconds = []
        for _ in range(repeat):
            shown = io.StringIO()
            start = time.perf_counter()
            with redirect_stdout(shown):
                exec(last, namespace)
            seconds.append(time.perf_counter() - start)
        if "9 of 9" not in shown.getvalue():
            raise RuntimeError(f"check() did not pass every part:\n{shown.getvalue()}")
        return seconds
    finally:
        os.chdir(here)
        sys.path.remove(str(release))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10, metavar="R")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="mhakit-selfcheck-"))
    try:
        course = prepare_course(work / "course", 1)
        release = course / "assignments" / ASSIGNMENT
        notebook = saved_notebook(course)
        rows = [("python selfcheck.py mha.ipynb", time_command_line(release, notebook,
                                                                     args.repeat)),
                ("check() in the kernel", time_last_cell(release, notebook, args.repeat))]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    over = False
    for label, seconds in rows:
        worst = max(seconds)
        over |= worst >= BUDGET
        print(f"{label:32s} median {statistics.median(seconds):.3f} s, slowest {worst:.3f} s"
              f" ({args.repeat} runs; budget {BUDGET} s)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
