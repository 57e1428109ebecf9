"""Grading one submission: run every check against the isolated student, score it.

The result is a dict in Gradescope's results.json schema (``score``, ``tests[]``),
with the kit's own facts (seed, versions, isolation layers) under ``extra_data``.
"""

import hashlib
import secrets
from functools import lru_cache
from pathlib import Path

import numpy as np

import solutions

from .. import __version__
from . import hidden_checks  # noqa: F401 - importing registers the hidden checks
from .notebook_file import clean, read_notebook
from ..selfcheck.framework import HIDDEN, REGISTRY
from ..selfcheck.notebook import graded_cells_of
from .planning import batch_groups, plan, run_planned
from ..selfcheck.runner import NOT_IMPLEMENTED, PASSED, SECTIONS
from ..sandbox import EncodedBatch, IsolatedStudent, Limits
from .style import style_notes
from .tampering import find_tampering

GRADED_FUNCTIONS = tuple(solutions.FUNCTIONS)
PARTS = GRADED_FUNCTIONS + ("quiz",)
VISIBILITY = {"public": "visible", HIDDEN: "after_published"}
_GRADER_FILES = ("selfcheck/framework.py", "selfcheck/checks.py", "selfcheck/runner.py",
                 "selfcheck/notebook.py", "selfcheck/fingerprints.py", "selfcheck/wording.py",
                 "grader/hidden_checks.py", "grader/grading.py", "grader/planning.py",
                 "grader/mistakes.py", "grader/style.py", "grader/tampering.py",
                 "grader/notebook_file.py", "release_layout.json")


@lru_cache(maxsize=1)
def graders_hash():
    """Identifies the graders and the reference; a result records it."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parents[1]
    for name in _GRADER_FILES:
        digest.update((here / name).read_bytes())
    for path in sorted((here / "sandbox").rglob("*.py")):
        digest.update(path.read_bytes())
    digest.update(Path(solutions.mha.__file__).read_bytes())
    return digest.hexdigest()[:16]


def ordered_checks():
    """Checks in notebook order, public before hidden within each part."""
    rank = {name: i for i, name in enumerate(SECTIONS)}
    indexed = list(enumerate(REGISTRY))
    return sorted(indexed, key=lambda item: (rank[item[1].function], item[1].tier != "public"))


def reference_functions():
    return {name: getattr(solutions, name) for name in GRADED_FUNCTIONS}


def _inputs_for(seed):
    return lambda index: np.random.default_rng([seed, index])


@lru_cache(maxsize=4)
def prepared_for(seed):
    """(plans, their calls in batches encoded for the child) under ``seed``. A batch grades
    every submission with one seed, so this is worked out once (see planning.py)."""
    checks, reference = ordered_checks(), reference_functions()
    plans = plan(checks, reference, _inputs_for(seed))
    batches = []
    for positions in batch_groups(checks, plans):
        calls = [call for position in positions for call in plans[position]]
        batches.append((positions, EncodedBatch(calls, reference)))
    return plans, batches


def grade_cells(cells, seed=None, limits=None, tampering=(), language="zh"):
    """Grade code cells [(cell id, source)]; return a results.json dict, its feedback in
    ``language`` ("zh" or "en") where a diagnosis names a mistake.

    Never raises for anything a submission does: a failure of the grading itself is
    reported in the result's status, never as a silent zero.
    """
    seed = secrets.randbits(63) if seed is None else int(seed)
    try:
        result = _grade(cells, seed, limits, list(tampering), language)
    except Exception as error:  # noqa: BLE001 - one submission must not stop a batch
        result = _result([], seed, {"error": f"{type(error).__name__}: {error}"})
        result["extra_data"]["status"] = "grading failed"
        result["output"] = f"mha-kit could not grade this submission: {type(error).__name__}"
    # Student code writes into the result (exception text, load errors): on both doors
    # every string is valid UTF-8 and bounded before any file or gradebook holds it.
    return clean(result)


def _grade(cells, seed, limits, tampering, language):
    tests = []
    checks = ordered_checks()
    limits = limits or Limits.from_environment()
    with IsolatedStudent(cells, reference_functions(), limits) as student:
        plans, encoded = prepared_for(seed)
        results = run_planned(checks, plans, student, _inputs_for(seed), encoded, language)
        for (_, chk), result in zip(checks, results):
            tests.append({
                "name": chk.name,
                "score": result.score,
                "max_score": chk.points,
                "status": result.status,
                "output": result.message or "passed",
                "visibility": VISIBILITY[chk.tier],
            })
            if result.tags:  # diagnosed mistakes, e.g. "split_heads/reshape-without-transpose"
                tests[-1]["tags"] = list(result.tags)
        extra = {"load_errors": student.load_errors, "crashes": student.crashes,
                 "isolation": student.layers, "confinement": student.confinement,
                 "tampering": tampering, "language": language,
                 "style": style_notes(cells, language)}
    return _result(tests, seed, extra)


UNCONFINED_NOTE = "graded unconfined: student code could read the course"


def needs_review(extra):
    """Why a person should look at a grade, one line each (tampering, a failure, grading
    without confinement); empty when nothing calls for it. Both doors flag these."""
    from .notebook_file import one_line

    problems = list(extra.get("tampering") or [])
    if extra.get("status") in ("unreadable", "grading failed"):
        problems.append(one_line(f"{extra['status']}: {extra.get('error') or '?'}", 300))
    if extra.get("confinement") == "plain":
        problems.append(UNCONFINED_NOTE)
    return problems


def _result(tests, seed, extra):
    parts = {part: sum(t["score"] for t in tests if t["name"].startswith(part + ":"))
             for part in PARTS}
    notes = [label for label, key in (("crashes", "crashes"), ("tampering", "tampering"))
             if extra.get(key)] + (["unconfined"] if extra.get("confinement") == "plain" else [])
    status = "graded" + (f" ({', '.join(notes)})" if notes else "")
    return {
        "score": round(sum(t["score"] for t in tests), 6),
        "tests": tests,
        "extra_data": dict(extra, seed=seed, parts=parts, status=status,
                           mhakit_version=__version__, graders_hash=graders_hash(),
                           max_score=sum(t["max_score"] for t in tests)),
    }


def unreadable(reason, seed=None):
    """The result for a file that is not a notebook: zero, with the reason."""
    result = _result([], seed, {"error": reason})
    result["extra_data"]["status"] = "unreadable"
    result["output"] = f"This submission could not be graded: {reason}"
    return result


def file_hash(path):
    """The file's first 16 hex digits of SHA-256, read in pieces (a file of any size)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for piece in iter(lambda: handle.read(1 << 20), b""):
                digest.update(piece)
    except OSError:
        return None
    return digest.hexdigest()[:16]


def grade_notebook(path, seed=None, limits=None, language=None):
    return read_and_grade(path, seed, limits, language)[0]


def read_and_grade(path, seed=None, limits=None, language=None):
    """(result, the notebook as read, or None when it could not be read). The feedback
    speaks ``language`` when given, else the notebook's own."""
    notebook = None
    try:
        notebook = read_notebook(path)  # bounded: size, depth, containers (notebook_file)
        cells = graded_cells_of(notebook)
        tampering = find_tampering(notebook)
        language = language or language_of(notebook)
    # A reason why a file is unreadable may quote the file: it is cleaned like a result
    # of grade_cells, valid UTF-8 and bounded.
    except (OSError, ValueError) as error:
        result = clean(unreadable(str(error), seed))
    except Exception as error:  # noqa: BLE001 - a notebook's shape must not stop a batch
        result = clean(unreadable(f"the notebook's structure could not be read "
                                  f"({type(error).__name__}: {error})", seed))
    else:
        result = grade_cells(cells, seed, limits, tampering, language)
    result["extra_data"]["submission_hash"] = file_hash(path)  # lets a stopped run resume
    return result, notebook


def grade_notebook_bytes(name, data, seed=None, language=None):
    """For a grading machine that does not share the submissions' folder (Dask)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mhakit-remote-") as folder:
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        return grade_notebook(path, seed, language=language)


def language_of(notebook):
    """The release's language, which the build records in the notebook's metadata."""
    meta = notebook.get("metadata") if isinstance(notebook, dict) else None
    meta = meta.get("mhakit") if isinstance(meta, dict) else None
    language = meta.get("language") if isinstance(meta, dict) else None
    return language if language in ("zh", "en") else "zh"


def part_scores(result):
    return result["extra_data"]["parts"]


@lru_cache(maxsize=2)
def _titles(language):
    return {chk.name: chk.title(language) for chk in REGISTRY}


def title_of(test, result):
    """A test's name as the student reads it: in the result's language. (results.json
    keeps the English name in both, for scripts.)"""
    return _titles(result["extra_data"].get("language", "zh")).get(test["name"], test["name"])


def part_summary(result, part):
    """Feedback text for one part: each check's outcome, without any hidden input."""
    lines = []
    for test in result["tests"]:
        if not test["name"].startswith(part + ":"):
            continue
        mark = {PASSED: "✓", NOT_IMPLEMENTED: "·"}.get(test["status"], "✗")
        points = f" [{test['score']:g}/{test['max_score']:g}]" if test["max_score"] else ""
        detail = "" if test["output"] == "passed" else f" — {test['output']}"
        lines.append(f"{mark} {title_of(test, result)}{points}{detail}")
    note = result["extra_data"].get("style", {}).get(part)
    if lines and note:
        lines.append(note)
    return "\n".join(lines)
