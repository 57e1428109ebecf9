"""Naming a mistake in the self-check without shipping the wrong code.

The instructor's grader names a mistake by running known wrong variants of a function on
the inputs that failed. Those variants stay on the instructor's side, because each one is
one edit away from the answer. The self-check gets only fingerprints of them: for each
input of a public check, a short hash of what each wrong variant returns. ``mhakit build
--exercise-files`` writes them to fingerprints.json in the exercise's shipped package,
which the release holds. A student's result with the same hash is named as that mistake.
"""

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from .failed_call import RAISED

TABLE_NAME = "fingerprints.json"
MISTAKE_LABEL = {"zh": "可能的错误：", "en": "Likely mistake: "}


def with_mistake(message, hint, language):
    """A failure's message followed by the mistake it was recognised as."""
    return f"{message} — {MISTAKE_LABEL[language]}{hint}"


def _canonical(value, decimals, dtypes=False):
    if isinstance(value, (tuple, list)):
        return b"(" + b",".join(_canonical(v, decimals, dtypes) for v in value) + b")"
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biuf":
        array = np.asarray(value, dtype=np.float64)
        # Rounded, so that float noise does not change the hash; -0.0 becomes 0.0.
        array = np.nan_to_num(np.round(array, decimals), nan=7e300, posinf=8e300,
                              neginf=-8e300) + 0.0
        kind = f"{value.dtype.str}{array.shape}" if dtypes else f"A{array.shape}"
        return kind.encode() + array.tobytes()
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__}:{value!r}".encode()
    raise TypeError(f"no fingerprint for {type(value).__name__}")


def _digest(data):
    return hashlib.sha256(data).hexdigest()[:20]


def probe_key(name, args, kwargs):
    """Identifies one call of a public check by its function and inputs, dtypes included:
    a float32 case has the same numbers as its float64 twin but other answers."""
    return _digest(name.encode() + _canonical(list(args), 9, dtypes=True)
                   + _canonical(sorted(kwargs.items()), 9, dtypes=True))


def fingerprint(value):
    """A short hash of a result, rounded to 5 decimals; None for what is not numbers."""
    try:
        return _digest(_canonical(value, 5))
    except TypeError:
        return None


@lru_cache(maxsize=4)
def _table(folder):
    try:
        return json.loads((Path(folder) / TABLE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"probes": {}, "hints": {}}


def first_named(catalogued, structural):
    """A namer that asks the catalogue first and the structure only when the catalogue
    names nothing. A call that raised has no result the catalogue could know."""
    def name(function, args, kwargs, value, language, student=None):
        """(id, hint, ruled out): id and hint None where nothing is named."""
        ruled_out = ()
        if value is not RAISED:
            named = catalogued(function, args, kwargs, value, language)
            if named and named[0]:
                return named
            ruled_out = named[2] if named else ()
        found = structural(function, args, kwargs, value, language, student=student)
        return (*found, ruled_out) if found else (None, None, ruled_out)
    return name


def name_mistake(folder, name, args, kwargs, value, language):
    """(mistake id, hint in ``language``, the mistakes ruled out) when ``value`` is a
    known wrong result in the table in ``folder``; (None, None, ruled out) when it is
    not; None for a call the table does not hold. A mistake is ruled out where the
    table holds its result on this call and the student's is another."""
    table = _table(folder)
    try:
        probes = table["probes"].get(probe_key(name, args, kwargs), {})
    except TypeError:
        return None
    mistake = probes.get(fingerprint(value))
    ruled_out = frozenset(probes.values()) - {mistake}
    if mistake is None:
        return None, None, ruled_out
    hints = table["hints"][mistake]
    return mistake, hints.get(language, hints["en"]), ruled_out
