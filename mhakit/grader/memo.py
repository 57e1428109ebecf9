"""What the grader works out from its own inputs alone, kept for the next submission.

A run grades every submission with one seed, so the inputs on which a diagnosis runs
the reference, or a catalogued mistake, are the same for every student whose answer
fails there. What they give is worked out once per grading process and kept, keyed by
the inputs' exact content (types, dtypes, shapes and bytes) and read-only, since every
later submission sees the very same arrays.
"""

import pickle
from collections import OrderedDict

import numpy as np


class Memo:
    """At most ``size`` values, the least recently used dropped first."""

    def __init__(self, size=1024):
        self.size, self.kept = size, OrderedDict()

    def get(self, key, compute):
        """The value kept under ``key``, else ``compute()``, kept read-only. A key of
        None (inputs that cannot be keyed) keeps nothing."""
        if key is None:
            return compute()
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        value = self.kept[key] = read_only(compute())
        if len(self.kept) > self.size:
            self.kept.popitem(last=False)
        return value


def content_key(*parts):
    """Bytes equal only for equal types and contents, bit for bit; None for what cannot
    be written out so."""
    try:
        return pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - e.g. a function among the arguments
        return None


def read_only(value):
    """``value`` with every array in it (in tuples and lists too) made read-only."""
    if isinstance(value, (tuple, list)):
        for item in value:
            read_only(item)
    elif isinstance(value, np.ndarray):
        value.flags.writeable = False
    return value
