"""Known answers: the reference's results on the public checks' fixed inputs, as numbers.

Some public checks need inputs nobody works out by hand: weights that are not the
identity, a different mask for each sequence, float32. Their expected results are
computed from the reference by ``mhakit build --exercise-files`` and shipped as
known_answers.json beside the checks. They are numbers for fixed, public inputs, so a
submission that copies them earns nothing: the hidden checks draw fresh inputs.

The table also holds the reference's result for every other call a public check makes,
keyed like the fingerprints (``probe_key``), so that the self-check can explain a wrong
result by comparing it with the right one (``by_call``).
"""

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from .fingerprints import probe_key

TABLE_NAME = "known_answers.json"


def encode(value):
    """A result as JSON: arrays keep their dtype and shape; floats round-trip exactly."""
    if isinstance(value, (tuple, list)):
        return {"items": [encode(v) for v in value]}
    array = np.asarray(value)
    return {"dtype": array.dtype.str, "shape": list(array.shape),
            "data": array.ravel().tolist()}


def decode(data):
    if "items" in data:
        return tuple(decode(item) for item in data["items"])
    array = np.array(data["data"], dtype=np.dtype(data["dtype"]))
    return array.reshape(data["shape"])


class KnownAnswers:
    """The cases of one shipped package whose answers come from its table.

    ``case`` registers a call at import time, so that the build knows every call whose
    answer it must compute; ``expected`` reads the answer back, in the self-check as in
    the grader.
    """

    def __init__(self, package_file):
        self.folder = Path(package_file).parent
        self.cases = {}  # case id -> (function, args, kwargs)
        self.table = None  # the build puts its freshly computed table here

    def case(self, case_id, function, *args, **kwargs):
        """Register one fixed call; returns (function, args, kwargs) for ``student.call``."""
        if case_id in self.cases:
            raise ValueError(f"two known-answer cases are called {case_id!r}")
        self.cases[case_id] = (function, args, kwargs)
        return case_id

    def call(self, student, case_id, **options):
        function, args, kwargs = self.cases[case_id]
        return student.call(function, *args, **options, **kwargs)

    def expected(self, case_id):
        function, args, kwargs = self.cases[case_id]
        found = by_call(self.folder, function, args, kwargs, self.table)
        if found is None:
            raise LookupError(f"{TABLE_NAME} has no answer for the case {case_id!r}: run "
                              f"`mhakit build --exercise-files`")
        return found


@lru_cache(maxsize=4)
def _read(folder):
    try:
        return json.loads((Path(folder) / TABLE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def by_call(folder, function, args, kwargs, table=None):
    """The reference's result for this call of a public check, or None if it is not known."""
    table = _read(str(folder)) if table is None else table
    try:
        data = table.get(probe_key(function, args, kwargs))
    except TypeError:  # an input with no canonical form has no entry either
        return None
    return None if data is None else decode(data)
