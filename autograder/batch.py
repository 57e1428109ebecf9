"""Grading a folder of submissions: discovery, parallel grading, results on disk."""

import csv
import json
import multiprocessing
import os
import secrets
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from . import __version__
from .feedback import feedback_html, feedback_markdown
from .grading import (GRADED_FUNCTIONS, file_hash, grade_notebook, grade_notebook_bytes,
                      graders_hash)
from .report import write_report

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


def write_feedback(folder, student, result):
    """feedback.md and feedback.html next to the student's results.json."""
    write_atomically(folder / "feedback.md", feedback_markdown(student, result))
    write_atomically(folder / "feedback.html", feedback_html(student, result))


def write_atomically(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def grade_folder(folder, out, seed=None, jobs=None, quiet=False, fresh=False, dask=None,
                 gradebook=None, language=None):
    """Grade every submission; write <out>/<student>/results.json, grades.csv and a report.

    A result already on disk is kept when it is for the same notebook, graded by the
    same graders and kit version (and the same seed, when one is given): a run that was
    stopped halfway resumes where it stopped. ``fresh`` regrades everything. ``dask``, a
    scheduler's address, spreads the grading over a Dask cluster instead of local processes.
    ``gradebook``, an nbgrader course folder, also puts every grade into its gradebook and
    autograded/ folder, as ``nbgrader autograde`` would. ``language`` ("zh" or "en") sets
    the feedback's language; by default each notebook's own.

    Scripts that call this must guard their top level with ``if __name__ == "__main__":``,
    since the grading workers are started afresh (multiprocessing's forkserver).
    """
    submissions = find_submissions(folder)
    if not submissions:
        raise ValueError(f"no notebooks found under {folder}")
    out = Path(out)
    results = {} if fresh else {student: kept for student, path in submissions.items()
                                if (kept := reusable(out / student / "results.json", path, seed,
                                                     language))}
    todo = {student: path for student, path in submissions.items() if student not in results}
    # One seed for the whole run: every student meets the same hidden inputs, and the
    # checks are planned once per worker instead of once per submission.
    run_seed = secrets.randbits(63) if seed is None else seed
    book = None
    if gradebook is not None:
        from .gradebook import GradebookRun
        book = GradebookRun(gradebook, submissions)
    console = Console(stderr=True)
    if results and not quiet:
        console.print(f"resuming: {len(results)} earlier results still hold, {len(todo)} to grade")
    try:
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeRemainingColumn(), console=console,
                      disable=quiet) as progress:
            task = progress.add_task("grading", total=len(todo))
            for student, result, cells in graded(todo, run_seed, jobs, dask, book, language):
                write_atomically(out / student / "results.json", json.dumps(result, indent=1))
                write_feedback(out / student, student, result)
                if book is not None:
                    book.record(student, todo[student], result, cells)
                results[student] = result
                progress.advance(task)
        if book is not None:  # kept results may predate the gradebook's last change
            for student in sorted(set(results) - set(todo)):
                book.record(student, submissions[student], results[student])
    finally:
        if book is not None:
            book.close()
    write_grades_csv(out / "grades.csv", results)
    write_report(results, out)
    return dict(sorted(results.items()))


def graded(todo, seed, jobs, dask, book=None, language=None):
    """(student, result, its cells' grades for the gradebook or None) as they finish,
    from local processes or a Dask cluster."""
    if dask:
        try:
            from dask.distributed import Client, as_completed as finished
        except ImportError:
            raise ValueError("--dask needs dask.distributed: pip install 'mha-kit[dask]'") from None
        with Client(dask) as client:
            futures = {client.submit(grade_notebook_bytes, path.name, path.read_bytes(), seed,
                                     language, pure=False): student
                       for student, path in todo.items()}
            for future in finished(futures):
                yield futures[future], future.result(), None
        return
    # Processes, not threads: the checks are Python and would share one core under the
    # GIL. Each worker keeps its own warm zygote and plans its checks once.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 1, mp_context=context) as pool:
        futures = {pool.submit(*(book.job(student, path, seed, language) if book else
                                 (grade_notebook, path, seed, None, language))): student
                   for student, path in todo.items()}
        for future in as_completed(futures):
            value = future.result()
            result, cells = value if book else (value, None)
            yield futures[future], result, cells


def reusable(results_path, notebook, seed, language=None):
    """The earlier result for this notebook, if it still holds; else None."""
    try:
        result = json.loads(results_path.read_text(encoding="utf-8"))
        extra = result["extra_data"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = (extra.get("submission_hash") == file_hash(notebook)
            and extra.get("graders_hash") == graders_hash()
            and extra.get("mhakit_version") == __version__
            and (seed is None or extra.get("seed") == seed)
            and (language is None or extra.get("language") == language))
    return result if same else None


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


# Short headers keep the table inside an 80-column terminal.
SHORT = {"dot_product": "dot", "attention_scores": "scores", "softmax": "softmax",
         "attention": "attn", "split_heads": "split", "concat_heads": "concat",
         "output_projection": "W_o", "multi_head_attention": "mha"}


def wide_console():
    """Tables of results stay whole when stdout is a file or a pipe (rich assumes 80)."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=140)


def grade_table(results):
    table = Table(box=box.SIMPLE_HEAD, title="Graded by mha-kit (auto-graded points out of 100)")
    for column in CSV_COLUMNS:
        table.add_column(SHORT.get(column, column),
                         justify="left" if column in ("student", "status") else "right")
    for student, result in results.items():
        row = grade_row(student, result)
        table.add_row(*(row[c] for c in CSV_COLUMNS))
    return table
