"""Reading a submitted notebook file without trusting it, and keeping text clean.

A notebook is the student's file: it may be huge, nested thousands of levels deep, made
of millions of empty objects, not UTF-8, or hold lone surrogates in its strings (refused,
as nbgrader fails on them too). Before
``json.loads`` spends memory on it, a cheap scan of the raw bytes bounds its size, its
nesting depth, its number of JSON containers and its number of values. Real notebooks,
figures and all, stay far below every limit.

Text that reaches a file (results.json, feedback, grades.csv, the report, the gradebook)
goes through ``clean_text``: valid UTF-8 (a lone surrogate becomes U+FFFD) and bounded.
"""

import json
import os
import re
import stat
from pathlib import Path

MAX_NOTEBOOK_BYTES = 20 << 20   # a notebook with a few dozen figures has a few MB
MAX_DEPTH = 64                  # a notebook's own structure is about 8 deep
MAX_CONTAINERS = 500_000        # objects and arrays; a real notebook has thousands
MAX_VALUES = 2_000_000          # items of arrays and members of objects

# A JSON string once its escaped backslashes and quotes are gone: nothing outside
# strings contains a quote. (A pattern that repeats over escapes keeps state per repeat:
# hundreds of MB for a string of a million escapes.)
_STRING = re.compile(rb'"[^"]*"')
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def scan_json(data):
    """ValueError when the JSON text ``data`` (bytes) would cost more to parse than any
    notebook should: too deep, too many containers or values. Linear, in C loops."""
    bare = _STRING.sub(b'""', data.replace(b"\\\\", b"").replace(b'\\"', b""))
    containers = bare.count(b"{") + bare.count(b"[")
    if containers > MAX_CONTAINERS:
        raise ValueError(f"the file has {containers} JSON objects and arrays; a notebook "
                         f"may have at most {MAX_CONTAINERS}")
    values = bare.count(b",") + bare.count(b":")
    if values > MAX_VALUES:
        raise ValueError(f"the file has about {values} JSON values; a notebook may have "
                         f"at most {MAX_VALUES}")
    brackets = bare.translate(None, _NOT_A_BRACKET)
    if len(brackets) > 2 * containers:
        raise ValueError("the file is not valid JSON (unbalanced brackets)")
    import numpy as np  # the grader has it; a cumulative sum in C beats a Python loop

    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("{")) | (codes == ord("[")), 1, -1).astype(np.int32)
    depth = int(np.cumsum(steps).max()) if len(steps) else 0
    if depth > MAX_DEPTH:
        raise ValueError(f"the file nests JSON {depth} levels deep; a notebook may nest at "
                         f"most {MAX_DEPTH}")


def read_bounded(path, limit=MAX_NOTEBOOK_BYTES):
    """The bytes of a regular file of at most ``limit`` bytes; ValueError otherwise."""
    # Non-blocking: a FIFO named like a notebook is refused below instead of hanging.
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("the path is not a regular file")
        if info.st_size > limit:
            raise ValueError(f"the file has {info.st_size / (1 << 20):.0f} MB; a notebook may "
                             f"have at most {limit >> 20} MB")
        with os.fdopen(handle, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)  # a file that grows meanwhile is still bounded
    finally:
        os.close(handle)
    if len(data) > limit:
        raise ValueError(f"the file has more than {limit >> 20} MB; a notebook may have at "
                         f"most {limit >> 20} MB")
    return data


def read_notebook(path):
    """The notebook as a dict, in format 4; ValueError says why a file is not one."""
    data = read_bounded(Path(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the file is not UTF-8 text") from None
    scan_json(data)
    try:
        notebook = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"the file is not valid JSON ({type(error).__name__})") from None
    if _MAYBE_SURROGATE.search(data) and _has_surrogate(notebook):
        # As nbgrader, which cannot write such a notebook back: not Unicode text.
        raise ValueError("the file holds a lone surrogate (an escape such as \\ud800), "
                         "which is not Unicode text")
    if not isinstance(notebook, dict):
        raise ValueError("the file holds JSON, but not a notebook (no top-level object)")
    if isinstance(notebook.get("nbformat"), int) and notebook["nbformat"] < 4:
        # nbformat upgrades old notebooks; it runs here, on trusted code only. Imported
        # here because importing it costs over a second (jsonschema's format checkers).
        import nbformat
        try:
            notebook = nbformat.reads(json.dumps(notebook), as_version=4)
        except Exception as error:  # noqa: BLE001 - any failure means "not readable"
            raise ValueError("an old notebook that could not be upgraded "
                             f"({one_line(str(error), 200)})") from None
    return notebook


def _has_surrogate(value):
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    return False


MAX_TEXT = 4000  # characters of one string from student code, in a result


def clean_text(text, limit=MAX_TEXT):
    """``text`` as valid Unicode (so valid UTF-8 once encoded), at most ``limit``
    characters (None: no bound). Lone surrogates become U+FFFD."""
    if not isinstance(text, str):
        text = str(text)
    text = _SURROGATE.sub("\ufffd", text)
    if limit is not None and len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def one_line(text, limit=300):
    """Clean text on one line: for a status column, a log or a table cell."""
    return clean_text(" ".join(clean_text(text, None).split()), limit)


def clean(value, limit=MAX_TEXT, depth=0):
    """A JSON-like value with every string (keys too) through ``clean_text``. Deeper than
    the notebook limit, what is left is dropped: results never nest that far."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {clean_text(key, limit): clean(item, limit, depth + 1)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(item, limit, depth + 1) for item in value]
    return value
