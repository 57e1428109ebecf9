"""The demo: release, self-check, grade a bundled class, print the grade table."""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from .batch import grade_folder, grade_table, wide_console
from .gate import confinement_refusal
from ..authoring.build import generate_release, write_source
from ..authoring.sample_class import write_sample_class
from ..exercise import current

COURSE_CONFIG = Path(__file__).resolve().parents[2] / "nbgrader_config.py"


def run_selfcheck(folder, label, notebook):
    done = subprocess.run([sys.executable, "selfcheck.py", notebook], cwd=folder,
                          capture_output=True, text=True)
    print(f"\n== {label}: python selfcheck.py {notebook} -> exit {done.returncode}")
    print(done.stdout.rstrip())
    return done.returncode


def unusable_keep(folder):
    """Why the demo must not build its course in ``folder``, in one line; None for a new
    or empty folder. Anything already there (a real course) would mix with the demo's
    students and grades."""
    folder = Path(folder)
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{folder} is not a folder; give --keep a new or empty folder"
    if any(folder.iterdir()):
        return f"{folder} is not empty; give --keep a new or empty folder"
    return None


def main(keep=None, seed=None):
    unusable = keep and unusable_keep(keep)
    if unusable:
        print(f"mhakit demo: {unusable}", file=sys.stderr)
        return 2
    console = wide_console()
    log = Console(stderr=True)
    course = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="mhakit-demo-"))
    course.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy(COURSE_CONFIG, course / "nbgrader_config.py")
        log.print(f"[1/4] writing source/ and running nbgrader generate_assignment in {course}")
        exercise = current()
        source = write_source(exercise, course)[0]
        release = generate_release(course, source.name)
        log.print("[2/4] self-checking the reference and the untouched release")
        reference_code = run_selfcheck(source, f"reference (source/{source.name})",
                                       exercise.notebook)
        release_code = run_selfcheck(release, f"untouched release (assignments/{release.name})",
                                     exercise.notebook)
        log.print("[3/4] writing the sample class to submitted/")
        write_sample_class(exercise, release / exercise.notebook, course / "submitted")
        log.print("[4/4] grading the class with mhakit grade")
        refused = confinement_refusal()
        if refused:  # the class is the kit's own sample code: the risk is the kit's
            log.print(f"[yellow]{refused}[/]\n[yellow]The demo grades its own sample "
                      "notebooks anyway; a real class would be refused here.[/]")
            confinement_refusal(allow_unconfined=True)
        results = grade_folder(course / "submitted", course / "mhakit-results", seed=seed,
                               exercise=exercise)
        console.print(grade_table(results, exercise))
        console.print(f"results: {course / 'mhakit-results'}" if keep else
                      "(run `mhakit demo --keep DIR` to keep the course folder)")
    finally:
        if not keep:
            shutil.rmtree(course, ignore_errors=True)
    # The demo passes when the reference passes its self-check and the stubs do not.
    return 0 if reference_code == 0 and release_code != 0 else 1
