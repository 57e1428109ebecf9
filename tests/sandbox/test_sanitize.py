"""The sanitiser of student text and shapes: honest messages stay readable, encodings go."""

import base64

import numpy as np
import pytest

from mhakit.sandbox.sanitize import (MAX_NUMBERS, count_text, numbers_of, shape_text,
                                         student_text)

# The public numbers of a call attention_scores(Q (2, 3, 4), K (2, 5, 4)).
CALL = numbers_of((np.ones((2, 3, 4)), np.ones((2, 5, 4))), {})
SECRET = 0.8871349  # stands for a hidden input


def described(error):
    """An exception as the child describes it."""
    return f"{type(error).__name__}: {str(error)[:300]}"


def raised(action):
    try:
        action()
    except Exception as error:  # noqa: BLE001
        return described(error)
    raise AssertionError("expected an exception")


HONEST = [
    lambda: np.ones((2, 3, 4)) + np.ones((2, 5, 4)),
    lambda: np.ones((2, 3, 4)) @ np.ones((2, 5, 4)),
    lambda: np.ones((2, 3, 4)).reshape(5, 5),
    lambda: np.ones((2, 3, 4)).sum(axis=4),
    lambda: np.ones((2, 3, 4))[5],
    lambda: np.ones((2, 3, 4))[0, 0, 0, 0],
    lambda: np.max(np.ones((0, 4)), axis=0),
    lambda: bool(np.ones((2, 3, 4))),
    lambda: np.concatenate([np.ones((2, 3)), np.ones((2, 5, 4))]),
    lambda: np.einsum("ij,jk->ik", np.ones((3, 4)), np.ones((5, 4))),
]


@pytest.mark.parametrize("action", HONEST, ids=range(len(HONEST)))
def test_numpys_own_messages_pass_unchanged(action):
    text = raised(action)
    assert student_text(text, CALL, limit=400) == " ".join(text.split())


def test_the_broadcast_message_keeps_the_calls_shapes():
    text = raised(lambda: np.ones((2, 3, 4)) + np.ones((2, 5, 4)))
    assert student_text(text, CALL) == ("ValueError: operands could not be broadcast together "
                                        "with shapes (2,3,4) (2,5,4)")


def test_a_students_honest_message_keeps_its_words_and_its_numbers():
    call = numbers_of((np.zeros((3, 10)), 4), {})
    for text in ("ValueError: d_model=10 is not divisible by num_heads=4",
                 "ValueError: cannot split 10 columns into 4 heads",
                 "ValueError: 10 % 4 != 0",
                 "NameError: name 'Q_heads' is not defined",
                 "ValueError: 维度不对"):
        assert student_text(text, call) == text


@pytest.mark.parametrize("leak", [
    base64.b64encode(np.array([SECRET]).tobytes()).decode(),
    base64.b64encode(b"0.887135 0.112233").decode(),
    np.array([SECRET]).tobytes().hex(),
    SECRET.hex(),
    b"0.887135".hex(),
    "0.887135", "8.87135e-01", "887135", "x0887135", "secret887135",
    "\n".join("0.887135"), " ".join("887135"),
    "eight eight seven one three five", "八八七一三五", "８８７１３５", "⁸⁸⁷¹",
    "deadbeefcafe", "qwertyuiopasdfghjklzxcvbnm",
])
def test_encodings_go(leak):
    text = student_text(f"ValueError: leak {leak}", CALL)
    assert text == "ValueError: leak …", text
    assert not any(ch.isdigit() for ch in text)


def test_digits_that_are_the_calls_own_sizes_still_go_when_listed():
    # 2, 3, 4 and 5 are all sizes of this call; listed bare, they are a code, not a size.
    for leak in ("2 3 4 5", "2\n3\n4\n5", "2,3,4,5", "leak 5", "x=4"):
        assert not any(ch.isdigit() for ch in student_text(f"ValueError: {leak}", CALL)), leak


def test_numbers_outside_the_calls_public_set_go_even_in_a_size_place():
    text = student_text("ValueError: cannot reshape array of size 887 into shape (887,13)", CALL)
    assert "887" not in text and "13" not in text
    assert text.startswith("ValueError: cannot reshape array of size")


def test_at_most_a_few_numbers_show():
    text = student_text("ValueError: " + " ".join(["(2,3)"] * 40), CALL, limit=1000)
    assert sum(ch.isdigit() for ch in text) == MAX_NUMBERS


def test_one_bounded_line_of_valid_utf8():
    text = student_text("KeyError: '\ud800'\n" + "word " * 500, CALL)
    assert "\n" not in text and len(text) <= 160
    text.encode("utf-8")  # no lone surrogate is left
    assert student_text("x" * 100_000, CALL, limit=50) == "…"


def test_only_pythons_and_numpys_exception_types_are_named():
    assert student_text("AxisError: axis 4 is out of bounds", CALL).startswith("AxisError:")
    assert student_text("numpy.linalg.LinAlgError: Singular matrix", CALL) == \
        "LinAlgError: Singular matrix"
    assert student_text("Leak0887135Error: x", CALL) == "Exception: x"
    assert student_text("HiddenIsPositiveError: x", CALL) == "Exception: x"


def test_a_shape_shows_only_the_calls_public_numbers():
    public = numbers_of((np.ones((2, 3, 4)), np.ones((2, 5, 4))), np.ones((2, 3, 5)))
    assert shape_text((2, 3, 5), public) == "(2, 3, 5)"
    assert shape_text((2, 3, 20), public) == "(2, 3, 20)"  # 4 × 5: a size of a wrong product
    assert shape_text((887135, 0), public) == "(?, 0)"
    assert shape_text((7,), public) == "(?,)"
    assert shape_text((1,) * 20, public) == "(1, 1, 1, 1, 1, 1, 1, 1, …)"


def test_a_length_shows_only_when_small_or_public():
    assert count_text(3, CALL) == "3"
    assert count_text(887135, CALL) == "?"
    assert count_text(5, CALL) == "5"


def test_the_public_numbers_of_a_call():
    numbers = numbers_of((np.ones((3, 12)), 4), {"axis": -1})
    assert {0, 1, 2, 3, 4, 12, 36, 48} <= numbers  # sizes, rank, products
    assert 3 in numbers and 12 // 4 in numbers      # an exact quotient (d_k)
    assert 887 not in numbers


def test_the_grader_can_hide_chosen_shapes_in_the_shared_comparisons():
    from mhakit.selfcheck.framework import CheckFailed, expect_array, showing
    from mhakit.sandbox.sanitize import shown_against

    def message():
        with pytest.raises(CheckFailed) as failure:
            expect_array(np.empty((887135, 0)), np.ones((2, 3)), "softmax(x)")
        return str(failure.value)

    assert "887135" in message()  # the self-check shows the student's own shape
    with showing(shown_against):
        assert "887135" not in message() and "(?, 0)" in message()
