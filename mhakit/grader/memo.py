"""What the grader works out again and again in a class, kept for the next submission.

A run grades every submission with one seed, so the inputs on which a diagnosis runs
the reference, or a catalogued mistake, are the same for every student whose answer
fails there; and students who make the same mistake hand in the same wrong numbers on
those inputs. What the grader works out from them is kept once per grading process,
keyed by their exact content (types, dtypes, shapes and bytes) and read-only, since
every later submission sees the very same arrays. Only what is a function of the key
alone is kept: a hit gives a submission what working it out would have given it. A key
that holds a student's result is its digest, so that the memo's size does not grow
with what a submission returns.
"""

import hashlib
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


def content_digest(*parts):
    """``content_key``'s 32-byte BLAKE2b digest, or None: for keys that hold a student's
    result, which may be large (and two different contents never meet on one digest)."""
    key = content_key(*parts)
    return None if key is None else hashlib.blake2b(key, digest_size=32).digest()


def read_only(value):
    """``value`` with every array in it (in tuples and lists too) made read-only."""
    if isinstance(value, (tuple, list)):
        for item in value:
            read_only(item)
    elif isinstance(value, np.ndarray):
        value.flags.writeable = False
    return value
