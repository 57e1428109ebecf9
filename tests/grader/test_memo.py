"""What a diagnosis works out from the grader's own inputs, or from a wrong result on
them, is kept for the next submission that fails there, and no submission can change
what is kept."""

import numpy as np
import pytest

from mhakit.grader import diagnosis, hidden_checks
from mhakit.grader.memo import Memo, content_digest, content_key
from mhakit.selfcheck.framework import tolerance_for
from mhakit.selfcheck.structure import from_results, structures_of
from mhakit.exercises.mha import reference as ref
from tests.conftest import grade_answers
from tests.mha_exercise import EXERCISE, PUBLIC, sample_answers


@pytest.mark.parametrize("other", [
    np.array([1.0, 2.0], dtype=np.float32),  # another dtype, the same numbers
    np.array([[1.0, 2.0]]),                  # another shape
    np.array([1.0, np.nextafter(2.0, 3.0)]),  # another last bit
    (1.0, 2.0),                              # another type
])
def test_only_inputs_equal_to_the_bit_share_a_key(other):
    assert content_key("f", np.array([1.0, 2.0])) == content_key("f", np.array([1.0, 2.0]))
    assert content_key("f", np.array([1.0, 2.0])) != content_key("f", other)
    assert content_key(0.0) != content_key(-0.0)
    assert content_digest("f", np.array([1.0, 2.0])) != content_digest("f", other)
    assert len(content_digest("f", np.zeros(10_000))) == 32


def test_a_kept_value_is_read_only_and_the_oldest_goes_first():
    memo = Memo(size=2)
    kept = memo.get("a", lambda: (np.zeros(2), [np.ones(1)]))
    with pytest.raises(ValueError, match="read-only"):
        kept[1][0][0] = 5.0
    assert memo.get("a", lambda: pytest.fail("worked out again")) is kept
    memo.get("b", lambda: 2)
    memo.get("c", lambda: 3)
    assert list(memo.kept) == ["b", "c"]
    assert memo.get(None, lambda: 4) == 4 and None not in memo.kept


def test_a_second_submission_wrong_on_the_same_inputs_reruns_neither_variants_nor_reference(
        monkeypatch):
    ran = []
    monkeypatch.setattr(diagnosis, "_EXPLAINED", Memo())  # bob may have been graded before
    for module, name in ((diagnosis, "_variant_outputs"), (hidden_checks, "_planned"),
                         (diagnosis, "from_results")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _o=original, _n=name, **k: (
            ran.append(_n), _o(*a, **k))[1])
    answers = sample_answers()["bob_partly_correct"]
    first = grade_answers(answers, seed=8641)
    assert {"_variant_outputs", "_planned", "from_results"} <= set(ran)  # every diagnosis ran
    ran.clear()
    again = grade_answers(answers, seed=8641)
    assert ran == [] and again.tests == first.tests


def test_a_structural_diagnosis_is_kept_per_wrong_result_and_is_what_working_it_out_gives(
        monkeypatch):
    monkeypatch.setattr(diagnosis, "_EXPLAINED", Memo())
    kept = diagnosis.kept_from_results(EXERCISE, "softmax")
    x = np.random.default_rng(5).standard_normal((3, 5, 5))
    right, structure = ref.softmax(x), structures_of(PUBLIC)["softmax"]
    tolerance = tolerance_for(right.dtype)
    # As results come from a child: arrays of their own, in C order.
    swapped, doubled = np.ascontiguousarray(np.swapaxes(right, -1, -2)), 2.0 * right
    for got in (swapped, doubled):  # two results on the same inputs: two entries
        assert (kept(structure, (x,), {}, got, right, tolerance)
                == from_results(structure, (x,), {}, got, right, tolerance))
    assert len(diagnosis._EXPLAINED.kept) == 2
    monkeypatch.setattr(diagnosis, "from_results", lambda *a: pytest.fail("worked out again"))
    settled, found = kept(structure, (x,), {}, swapped.copy(), right, tolerance)
    assert settled and found.id == "structure/axes-swapped"
