"""The comparisons every check makes (selfcheck/framework.py)."""

import numpy as np
import pytest

from autograder.selfcheck.framework import CheckFailed, expect_array


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
