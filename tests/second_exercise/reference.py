"""Reference answers of the weighted-average exercise, in plain numpy.

The build copies each function's body into the solution cells; the hidden checks compare
every submission with these functions. Conventions: the weights run along the last axis,
any number of leading batch axes is allowed, a float input keeps its dtype, and inputs
are never modified.
"""

import numpy as np


def weighted_sum(x, w):
    """The sum of x * w over the last axis.

    x: (..., d), w: (..., d) or (d,)  ->  (...)
    """
    x, w = np.asarray(x), np.asarray(w)
    if x.shape[-1:] != w.shape[-1:]:
        raise ValueError(f"last axes differ: {x.shape[-1:]} vs {w.shape[-1:]}")
    return np.sum(x * w, axis=-1)  # (...)


def normalise(x, axis=-1):
    """x divided by its sum along ``axis``, so that it sums to 1 along ``axis``.

    x: any shape, positive entries  ->  the same shape
    """
    x = np.asarray(x)
    total = np.sum(x, axis=axis, keepdims=True)
    return x / total  # same shape as x


def weighted_average(x, w):
    """The average of x over the last axis, each entry counted with its weight in w.

    x: (..., d), w: (..., d), positive weights that need not sum to 1  ->  (...)
    """
    return weighted_sum(x, normalise(w, axis=-1))  # (...)
