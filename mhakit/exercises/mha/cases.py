"""The hidden checks' inputs: for each function, a generator of fresh random cases.

``CASES[name](rng, edge)`` returns a list of (args, kwargs): random non-square inputs
when ``edge`` is false, edge cases when it is true. The grader calls each with a
generator seeded by the check's name, so the inputs are new for every run's seed.
"""

import numpy as np


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _distinct(rng, *shape):
    """Distinct values in random order: any transposed or misplaced entry shows."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)


def _mask(rng, *shape, allow_empty_rows=True):
    mask = rng.random(shape) < 0.6
    if not allow_empty_rows:
        mask[..., 0] = True
    return mask


def _heads(rng):
    """(num_heads, d_k) with num_heads > 1, d_k != num_heads and d_k != num_heads²: else
    dividing the scores by num_heads would equal dividing by √d_k."""
    h = int(rng.integers(2, 5))
    d_k = int(rng.choice([d for d in range(2, 7) if d not in (h, h * h)]))
    return h, d_k


# ----------------------------------------------------------- case generators
# Each returns a list of (args, kwargs). B >= 2, T_q != T_k, d_model != T.

def cases_dot_product(rng, edge):
    if edge:
        return [((_normal(rng, 1), _normal(rng, 1)), {}),
                ((_normal(rng, 6), _normal(rng, 6)), {}),
                ((_normal(rng, 2, 3, 4, 1), _normal(rng, 2, 3, 4, 1)), {})]
    d = int(rng.integers(3, 9))
    return [((_normal(rng, d), _normal(rng, d)), {}),
            ((_normal(rng, 5, d), _normal(rng, 5, d)), {}),
            ((_normal(rng, 3, 4, d), _normal(rng, 3, 4, d)), {})]


def cases_attention_scores(rng, edge):
    if edge:
        return [((_normal(rng, 1, 5), _normal(rng, 3, 5)), {}),
                ((_normal(rng, 2, 4, 1), _normal(rng, 2, 1, 1)), {}),
                ((_normal(rng, 3, 1, 1), _normal(rng, 3, 2, 1)), {})]
    B, T_q, T_k, d_k = 2, 3, 5, 4 + int(rng.integers(0, 4))
    return [((_normal(rng, T_q, d_k), _normal(rng, T_k, d_k)), {}),
            ((_normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k)), {}),
            ((_normal(rng, B, 3, T_k, d_k), _normal(rng, B, 3, T_q, d_k)), {})]


def cases_softmax(rng, edge):
    if edge:
        big = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4], [5e3, 5e3, -2e3]])
        return [((rng.permutation(big.ravel()).reshape(3, 3) * rng.choice([-1, 1]),), {}),
                ((_normal(rng, 1),), {}),
                ((np.full((2, 3), float(rng.normal())),), {}),
                ((3 * _normal(rng, 4, 2, 3),), {"axis": 1})]
    return [((3 * _normal(rng, 7),), {}),
            ((3 * _normal(rng, 4, 6),), {}),
            ((3 * _normal(rng, 4, 6),), {"axis": 0}),
            ((3 * _normal(rng, 2, 3, 5),), {"axis": -2})]


def cases_attention(rng, edge):
    B, T_q, T_k, d_k, d_v = 2, 3, 5, 4, 6
    if edge:
        return [((_normal(rng, 1, d_k), _normal(rng, 1, d_k), _normal(rng, 1, d_v)), {}),
                ((_normal(rng, 2, d_k), _normal(rng, 4, d_k), _normal(rng, 4, 1)),
                 {"mask": np.array([[True, False, True, False], [False] * 4])}),
                ((_normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k), _normal(rng, B, T_k, d_v)),
                 {"mask": np.zeros((B, T_q, T_k), dtype=bool)})]
    Q, K, V = _normal(rng, B, T_q, d_k), _normal(rng, B, T_k, d_k), _normal(rng, B, T_k, d_v)
    causal = np.tril(np.ones((T_q, T_k), dtype=bool))
    return [((Q, K, V), {}),
            ((Q, K, V), {"mask": causal}),
            ((Q, K, V), {"mask": _mask(rng, B, T_q, T_k)}),
            ((Q[0], K[0], V[0]), {"mask": _mask(rng, T_q, T_k, allow_empty_rows=False)})]


def cases_split_heads(rng, edge):
    h, d_k = _heads(rng)
    if edge:
        return [((_distinct(rng, 4, 6), 1), {}),
                ((_distinct(rng, 2, 4, 6), 6), {}),
                ((_distinct(rng, 2, 1, h * d_k), h), {})]
    return [((_distinct(rng, 3, 5, h * d_k), h), {}),
            ((_distinct(rng, 5, h * d_k), h), {}),
            ((_distinct(rng, 2, 3, 4, h * d_k), h), {})]


def cases_concat_heads(rng, edge):
    h, d_k = _heads(rng)
    if edge:
        return [((_distinct(rng, 2, 1, 4, 3),), {}),
                ((_distinct(rng, 2, 5, 4, 1),), {}),
                ((_distinct(rng, h, 1, d_k),), {})]
    return [((_distinct(rng, 3, h, 5, d_k),), {}),
            ((_distinct(rng, h, 5, d_k),), {}),
            ((_distinct(rng, 2, 3, h, 4, d_k),), {})]


def cases_output_projection(rng, edge):
    h, d_k = _heads(rng)
    width, d_model = h * d_k, h * d_k + 3
    if edge:  # the square W_o first: there a transposed W_o gives numbers, not an error
        return [((_normal(rng, 2, 3, width), _normal(rng, width, width)), {}),
                ((_normal(rng, 1, width), _normal(rng, width, d_model)), {})]
    return [((_normal(rng, 3, 5, width), _normal(rng, width, d_model)), {}),
            ((_normal(rng, 5, width), _normal(rng, width, d_model)), {})]


def _mha_args(rng, B, T, h, d_k):
    d_model = h * d_k
    X = _normal(rng, *B, T, d_model)
    weights = [_normal(rng, d_model, d_model) / np.sqrt(d_model) for _ in range(4)]
    return (X, *weights, h)


def cases_multi_head_attention(rng, edge):
    h, d_k = _heads(rng)
    B, T = 2, 5
    if edge:
        return [(_mha_args(rng, (B,), 1, h, d_k), {}),
                (_mha_args(rng, (B,), T, 1, 6), {}),
                (_mha_args(rng, (B,), T, 6, 1), {}),
                (_mha_args(rng, (), T, h, d_k), {"mask": np.zeros((T, T), dtype=bool)})]
    return [(_mha_args(rng, (B,), T, h, d_k), {}),
            (_mha_args(rng, (B,), T, h, d_k), {"mask": np.tril(np.ones((T, T), dtype=bool))}),
            # B = h: a mask given to the heads without its head axis gives wrong numbers
            (_mha_args(rng, (h,), T, h, d_k), {"mask": _mask(rng, h, T, T)}),
            (_mha_args(rng, (), T, h, d_k), {})]


CASES = {name[len("cases_"):]: case for name, case in list(globals().items())
         if name.startswith("cases_")}
