"""What a sink of a class run's results is given, and what it offers (see sinks/)."""

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..grader.result import Result


@dataclass(frozen=True)
class Run:
    """What a sink may need to know about the run: where results go (``out``), the
    gradebook run with ``--gradebook`` (else None), how it graded (``jobs``: a number of
    processes, or "dask"), its Stopwatch (the parent's own time, spent writing) and the
    exercise it graded."""
    out: Path
    book: Any
    jobs: Any
    watch: Any
    exercise: Any


@dataclass(frozen=True)
class Taken:
    """One student's final result. ``how``: "graded" by this run, "found" (this run
    found nothing to grade in the student's folder, and says why) or "kept" (an earlier
    run's result, which still holds). ``notebook``: the notebook it is for (None when
    "found"); ``cells``: the graded cells a worker wrote into the gradebook's autograded
    notebook, when it did."""
    student: str
    result: Result
    how: str
    notebook: Path | None = None
    cells: dict | None = None


class Sink(Protocol):
    def take(self, taken: Taken) -> None: ...

    def finish(self, results: dict) -> None: ...


class WholeClass:
    """A sink that writes once, from the whole class, into ``out``, and takes no result
    on its own."""

    def __init__(self, out):
        self.out = out

    def take(self, taken):
        pass

    def finish(self, results):
        raise NotImplementedError


def write_atomically(path, text):
    """``text`` at ``path``, whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
