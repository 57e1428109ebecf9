"""Which of the child's calls of another contract function the grader answers.

While one function is graded, each function that the reference itself calls is a
stand-in in the child. The grader answers a stand-in only from what it recorded when it
planned the check: the reference's own calls, on the inputs the grader chose. A call
whose arguments match one of those, within tolerance, gets the recorded value; any other
call runs the student's own function. So the grader never computes the reference on
arguments that the child names, and a stand-in tells the student's code nothing that
a correct implementation of the function being graded would not compute anyway.
"""

import math

import numpy as np

from .child.runtime import bind

# Intermediate values of a correct function may differ from the reference's in the
# last bits (einsum, another order of sums), so arguments match within tolerance.
MATCH_TOLERANCE = {np.dtype(np.float32): (2e-4, 1e-5)}
FLOAT64_TOLERANCE = (1e-6, 1e-9)
# Where the reference masks a score with -inf, -1e9 (or any score this low) gives the
# same normalised weights, so it matches too.
VERY_NEGATIVE = -1e4


def recorded_answer(name, args, kwargs, answers, params):
    """(True, value) for the first recorded call of ``name`` whose arguments match these;
    (False, None) when none does, and the student's own function must run."""
    wanted = bind(params, args, kwargs)
    if wanted is None:
        return False, None
    for recorded_name, recorded_args, recorded_kwargs, value in answers:
        if recorded_name != name:
            continue
        recorded = bind(params, recorded_args, recorded_kwargs)
        if recorded is not None and all(_close(g, w) for g, w in zip(wanted, recorded)):
            return True, value
    return False, None


def _close(got, want):
    if isinstance(want, np.ndarray):
        return _close_arrays(got, want)
    if isinstance(want, (tuple, list)):
        return (isinstance(got, (tuple, list)) and len(got) == len(want)
                and all(_close(g, w) for g, w in zip(got, want)))
    if want is None or isinstance(want, (bool, np.bool_)):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, np.integer)):
        return (isinstance(got, (int, np.integer)) and not isinstance(got, (bool, np.bool_))
                and int(got) == int(want))
    if isinstance(want, (float, np.floating)):
        return (isinstance(got, (int, float, np.integer, np.floating))
                and not isinstance(got, (bool, np.bool_))
                and math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12))
    return False


def _close_arrays(got, want):
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
        return False
    if want.dtype == bool:
        # A mask that broadcasts the same way is the same mask: (T, T) for (1, T, T).
        if got.dtype != bool:
            return False
        try:
            shape = np.broadcast_shapes(got.shape, want.shape)
        except ValueError:
            return False
        if math.prod(shape) > 4 * max(want.size, got.size, 1):
            return False
        return bool(np.array_equal(np.broadcast_to(got, shape), np.broadcast_to(want, shape)))
    if got.shape != want.shape or got.dtype == bool:
        return False
    if got.dtype == want.dtype and got.tobytes() == want.tobytes():
        return True  # the usual case, and the cheap one
    rtol, atol = MATCH_TOLERANCE.get(want.dtype, FLOAT64_TOLERANCE)
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        close = np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w))
    close |= (g == w) | (np.isnan(g) & np.isnan(w)) | (np.isneginf(w) & (g <= VERY_NEGATIVE))
    return bool(close.all())


def request_bytes(answers, name):
    """The most array bytes a stand-in request for ``name`` may carry: a few times the
    largest recorded call's, so that nothing the child sends makes the grader allocate
    much (a broadcast mask may be up to four times larger)."""
    sizes = [bytes_of(list(args) + list(kwargs.values()))
             for recorded, args, kwargs, _ in answers if recorded == name]
    return 8 * max(sizes, default=0) + (64 << 10)


def bytes_of(value):
    """The bytes of the arrays in ``value``, however nested."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(bytes_of(v) for v in value)
    return 0
