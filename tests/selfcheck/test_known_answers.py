"""mhakit/selfcheck/known_answers.py: the public checks' shipped answers are the
reference's, with their dtypes, to the last bits that differ from one CPU to another
(tests/authoring/test_build.py: LAST_BITS); a missing table is a one-line error."""

import json

import numpy as np
import pytest

from mhakit.authoring.build import known_answers_text
from mhakit.selfcheck.fingerprints import probe_key
from mhakit.selfcheck.known_answers import KnownAnswers, by_call, decode, encode
from tests.authoring.test_build import LAST_BITS, same_answers
from tests.mha_exercise import EXERCISE, checks

KNOWN = checks.KNOWN


def arrays(value):
    """A result's arrays: the pair's two, or the one."""
    return value if isinstance(value, tuple) else (value,)


def test_the_committed_table_is_a_fresh_build():
    committed = json.loads(EXERCISE.known_answers_file.read_text(encoding="utf-8"))
    assert same_answers(committed, json.loads(known_answers_text(EXERCISE)))


@pytest.mark.parametrize("case_id", sorted(KNOWN.cases))
def test_each_case_ships_the_reference_answer_with_its_dtype(case_id):
    function, args, kwargs = KNOWN.cases[case_id]
    right = EXERCISE.reference[function](*args, **kwargs)
    shipped = KNOWN.expected(case_id)
    for got, want in zip(arrays(shipped), arrays(right)):
        assert got.dtype == want.dtype and got.shape == want.shape
        last_bits = LAST_BITS[got.dtype.str]
        assert np.allclose(got, want, rtol=last_bits, atol=last_bits)


def test_every_float32_case_is_answered_in_float32():
    float32 = [case for case in KNOWN.cases if case.endswith("/float32")]
    assert len(float32) == len(EXERCISE.functions)  # one per function
    for case_id in float32:
        assert all(a.dtype == np.float32 for a in arrays(KNOWN.expected(case_id)))


def test_float32_and_float64_twins_have_their_own_entries():
    x = checks.fixed(2, 3)
    assert probe_key("softmax", (x,), {}) != probe_key("softmax", (x.astype(np.float32),), {})


def test_the_fixed_inputs_are_exact_in_float32():
    """Every numpy computes the same inputs, so the shipped answers always fit them."""
    x = checks.fixed(5, 7, step=5, modulus=13, scale=0.125)
    assert np.array_equal(x.astype(np.float32).astype(np.float64), x)
    assert len(np.unique(x)) == 13


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float32).reshape(2, 3) / 3,
                                   np.array(32), (np.ones(2) / 7, np.zeros((1, 2)))])
def test_encoding_round_trips_exactly(value):
    back = decode(json.loads(json.dumps(encode(value))))
    for got, want in zip(arrays(back), arrays(value)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_missing_table_says_how_to_make_it(tmp_path):
    known = KnownAnswers(tmp_path / "checks.py")
    known.case("one", "softmax", np.zeros(3))
    with pytest.raises(LookupError, match="mhakit build --exercise-files"):
        known.expected("one")
    assert by_call(tmp_path, "softmax", (np.zeros(3),), {}) is None
    with pytest.raises(ValueError, match="two known-answer cases"):
        known.case("one", "softmax", np.ones(3))
