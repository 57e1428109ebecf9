"""The comparisons every check makes (selfcheck/framework.py)."""

import numpy as np
import pytest

from mhakit.selfcheck.framework import CheckFailed, all_close, expect_array


def test_the_very_numbers_expected_pass_and_come_back():
    expected = np.linspace(0, 1, 12).reshape(3, 4)
    got = expected.copy()
    assert expect_array(got, expected, "the result") is got


def test_a_nan_fails_even_where_the_reference_has_the_same_nan():
    # Equal bytes are not enough: isclose never calls a NaN close, so neither may the
    # shortcut for identical numbers.
    expected = np.array([0.5, np.nan])
    with pytest.raises(CheckFailed):
        expect_array(expected.copy(), expected, "the result")


@pytest.mark.parametrize("got, expected", [
    (np.array([-0.0, 1.0]), np.array([0.0, 1.0])),  # equal numbers, other bytes
    (np.array([1, 2]), np.array([1.0, 2.0])),  # another dtype, compared by value
    (np.array([1.0, 2.0 + 1e-12]), np.array([1.0, 2.0])),  # within the tolerance
])
def test_numbers_that_are_close_pass_whatever_their_bytes(got, expected):
    expect_array(got, expected, "the result")


def test_numbers_that_are_off_still_fail_with_how_far():
    with pytest.raises(CheckFailed, match="1e-03|0.001"):
        expect_array(np.array([1.0, 2.002]), np.array([1.0, 2.0]), "the result")


SPECIAL = [0.0, -0.0, 1.0, 1e-300, 1e300, np.inf, -np.inf, np.nan]


def _pairs(rng):
    """Pairs of arrays that are close, nearly close, far, and full of infinities and NaN,
    of float, integer and boolean dtypes, some broadcast."""
    for _ in range(400):
        shape = tuple(rng.integers(0, 4, size=rng.integers(0, 3)))
        b = rng.normal(size=shape) * 10.0 ** rng.integers(-12, 12)
        a = b + rng.normal(size=shape) * 10.0 ** rng.integers(-14, 0) * np.abs(b)
        if rng.random() < 0.4 and a.size:
            a.flat[rng.integers(a.size)] = rng.choice(SPECIAL)
        if rng.random() < 0.3 and b.size:
            b.flat[rng.integers(b.size)] = rng.choice(SPECIAL)
        if rng.random() < 0.3 and a.size:  # the same infinity or NaN in both
            at = rng.integers(a.size)
            a.flat[at] = b.flat[at] = rng.choice(SPECIAL)
        kind = rng.choice(["f8", "f4", "i8", "bool", "scalar", "broadcast"])
        with np.errstate(all="ignore"):  # huge values cast to ints or float32, on purpose
            if kind in ("i8", "bool"):
                a, b = (np.nan_to_num(x, posinf=0, neginf=0).astype(kind) for x in (a, b))
            elif kind == "f4":
                a, b = a.astype(np.float32), b.astype(np.float32)
            elif kind == "scalar":
                b = float(rng.choice(SPECIAL + [1.0, 2.0]))
            elif kind == "broadcast" and a.ndim:
                b = b[..., :1] if b.ndim and b.shape[-1] else b
        yield a, b


def test_all_close_answers_as_numpys_allclose_does():
    rng = np.random.default_rng(0)
    for a, b in _pairs(rng):
        for rtol, atol in ((1e-6, 1e-9), (2e-4, 1e-5), (1e-5, 1e-8), (0.0, 0.0)):
            for equal_nan in (False, True):
                try:
                    want = bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
                except ValueError:  # shapes that do not broadcast: both refuse
                    with pytest.raises(ValueError):
                        all_close(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
                    continue
                got = all_close(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
                assert got is want, (a, b, rtol, atol, equal_nan)
