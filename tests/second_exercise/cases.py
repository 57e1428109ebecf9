"""The hidden checks' inputs: for each function, a generator of fresh random cases.

``CASES[name](rng, edge)`` returns a list of (args, kwargs): random inputs with batch axes
and non-square shapes when ``edge`` is false, edge cases when it is true.
"""

import numpy as np


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _positive(rng, *shape):
    """Weights: positive, never close to zero, so that every sum is safe to divide by."""
    return rng.uniform(0.2, 3.0, shape)


def _width(rng):
    return int(rng.integers(3, 8))


def cases_weighted_sum(rng, edge):
    if edge:
        return [((_normal(rng, 1), _normal(rng, 1)), {}),
                ((_normal(rng, 2, 3, 1), _normal(rng, 2, 3, 1)), {}),
                ((_normal(rng, 4, 5), np.zeros((4, 5))), {}),
                ((_normal(rng, 2, 6), -_positive(rng, 2, 6)), {})]
    d = _width(rng)
    return [((_normal(rng, d), _normal(rng, d)), {}),
            ((_normal(rng, 5, d), _normal(rng, 5, d)), {}),
            ((_normal(rng, 3, 4, d), _normal(rng, 3, 4, d)), {}),
            ((_normal(rng, 2, 3, d), _normal(rng, d)), {})]  # one w for every row


def cases_normalise(rng, edge):
    if edge:
        return [((_positive(rng, 1),), {}),
                ((np.full((2, 3), float(rng.uniform(0.5, 2.0))),), {}),
                ((1e6 * _positive(rng, 4, 3),), {}),
                ((_positive(rng, 3, 1),), {}),
                ((_positive(rng, 2, 3, 4),), {"axis": 0})]
    return [((_positive(rng, 7),), {}),
            ((_positive(rng, 4, 6),), {}),
            ((_positive(rng, 4, 6),), {"axis": 0}),
            ((_positive(rng, 2, 3, 5),), {"axis": -2})]


def cases_weighted_average(rng, edge):
    if edge:
        d = _width(rng)
        return [((_normal(rng, 1), _positive(rng, 1)), {}),
                ((_normal(rng, 3, d), np.ones((3, d))), {}),  # the plain mean
                ((_normal(rng, 2, 1, 4), 1e6 * _positive(rng, 2, 1, 4)), {}),
                ((_normal(rng, 5), np.array([1e-3, 1e-3, 5.0, 1e-3, 1e-3])), {})]
    d = _width(rng)
    return [((_normal(rng, d), _positive(rng, d)), {}),
            ((_normal(rng, 5, d), _positive(rng, 5, d)), {}),
            ((_normal(rng, 2, 3, d), _positive(rng, 2, 3, d)), {})]


CASES = {name[len("cases_"):]: case for name, case in list(globals().items())
         if name.startswith("cases_")}
