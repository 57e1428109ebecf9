"""Grading a folder of submissions: discovery, parallel grading, results on disk."""

import csv
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from .grading import GRADED_FUNCTIONS, grade_notebook

CSV_COLUMNS = ("student", "total") + GRADED_FUNCTIONS + ("quiz", "status")


def find_submissions(folder):
    """{student: notebook} for nbgrader's submitted/<student>/<assignment>/ or a flat folder."""
    folder = Path(folder)
    found = {}
    for path in sorted(folder.rglob("*.ipynb")):
        parts = path.relative_to(folder).parts
        if ".ipynb_checkpoints" in parts:
            continue
        student = path.stem if len(parts) == 1 else parts[0]
        if student in found:
            raise ValueError(f"two notebooks for {student}: {found[student]} and {path}")
        found[student] = path
    return found


def write_atomically(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def grade_folder(folder, out, seed=None, jobs=None, quiet=False):
    """Grade every submission; write <out>/<student>/results.json and <out>/grades.csv."""
    submissions = find_submissions(folder)
    if not submissions:
        raise ValueError(f"no notebooks found under {folder}")
    out = Path(out)
    jobs = jobs or os.cpu_count() or 1
    results = {}
    console = Console(stderr=True)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, disable=quiet) as progress:
        task = progress.add_task("grading", total=len(submissions))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(grade_notebook, path, seed): student
                       for student, path in submissions.items()}
            for future in as_completed(futures):
                student = futures[future]
                result = future.result()
                write_atomically(out / student / "results.json", json.dumps(result, indent=1))
                results[student] = result
                progress.advance(task)
    write_grades_csv(out / "grades.csv", results)
    return dict(sorted(results.items()))


def grade_row(student, result):
    parts = result["extra_data"]["parts"]
    row = {"student": student, "total": f"{result['score']:g}",
           "status": result["extra_data"]["status"]}
    row.update({part: f"{parts.get(part, 0):g}" for part in GRADED_FUNCTIONS + ("quiz",)})
    return row


def write_grades_csv(path, results):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="",
                                     encoding="utf-8", suffix=".tmp") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for student in sorted(results):
            writer.writerow(grade_row(student, results[student]))
    os.replace(handle.name, path)
