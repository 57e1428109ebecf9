"""What a diagnosis works out from the grader's own inputs is kept for the next
submission that fails on them, and no submission can change what is kept."""

import numpy as np
import pytest

from mhakit.grader import diagnosis, hidden_checks
from mhakit.grader.memo import Memo, content_key
from tests.conftest import grade_answers
from tests.mha_exercise import sample_answers


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
    for module, name in ((diagnosis, "_variant_outputs"), (hidden_checks, "_planned")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _o=original, _n=name, **k: (
            ran.append(_n), _o(*a, **k))[1])
    answers = sample_answers()["bob_partly_correct"]
    first = grade_answers(answers, seed=8641)
    assert {"_variant_outputs", "_planned"} <= set(ran)  # both diagnoses ran
    ran.clear()
    again = grade_answers(answers, seed=8641)
    assert ran == [] and again.tests == first.tests
