"""The rule of structure.py: a diagnosis claims only what its evidence proves.

Each test here builds a wrong result that fits a class's observation by accident, or fits
several classes, and holds the diagnosis to saying no more than the evidence shows."""

import numpy as np

from mhakit.selfcheck.structure import diagnose, structures_of
from mhakit.exercises.mha import reference as ref
from tests.mha_exercise import PUBLIC

STRUCTURE = structures_of(PUBLIC)
RNG = np.random.default_rng(11)


def diagnosis(function, got, *args, **kwargs):
    expected = getattr(ref, function)(*args, **kwargs)
    return diagnose(STRUCTURE[function], args, kwargs, got, expected)


def causal(T):
    return np.tril(np.ones((T, T), dtype=bool))


def test_weights_that_sum_to_1_along_the_right_axis_are_not_said_to_use_another():
    # The mask ignored, with uniform scores: the weights sum to 1 along T_k, as they
    # should, and along T_q too, by accident. Nothing says "another axis".
    Q, K, V = np.zeros((4, 3)), np.zeros((4, 3)), RNG.standard_normal((4, 2))
    got = ref.attention(Q, K, V)
    found = diagnosis("attention", got, Q, K, V, causal(4))
    assert found is None or "another-axis" not in found.id, found


def test_a_transposed_normalised_result_is_a_transpose_and_nothing_more():
    x = RNG.standard_normal((3, 5, 5))
    found = diagnosis("softmax", np.swapaxes(ref.softmax(x), -1, -2), x)
    assert found.id == "structure/axes-swapped", found


def test_a_result_that_fits_two_causes_lists_both_and_picks_neither():
    # Two dot products of opposite sign: reversed, the results are also their negatives.
    u = np.array([[1.0, 2.0], [-1.0, -2.0]])
    v = np.array([[3.0, 1.0], [3.0, 1.0]])
    right = ref.dot_product(u, v)
    found = diagnosis("dot_product", np.flip(right), u, v)
    assert found.id == "structure/one-of(axis-reversed|constant-factor)", found
    assert "(1)" in found.en and "(2)" in found.en and "cannot tell" in found.en
    assert "(1)" in found.zh and "(2)" in found.zh and "分不出" in found.zh


def test_the_batch_observation_lists_keepdims_among_its_causes():
    # A sum without keepdims=True: right for one row alone, raises with a batch axis.
    def no_keepdims(x, axis=-1):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis)

    x = RNG.standard_normal((2, 5))

    def call_again(args, kwargs):
        return no_keepdims(*args, **kwargs), None

    from mhakit.selfcheck.failed_call import RAISED
    found = diagnose(STRUCTURE["softmax"], (x,), {}, RAISED, ref.softmax(x),
                     call_again=call_again)
    assert found.id == "structure/wrong-with-batch-axes"
    assert "keepdims=True" in found.en and "keepdims=True" in found.zh
    assert ".T" in found.en and "axis=1" in found.en


def test_rows_not_divided_at_all_are_not_said_to_be_divided_by_the_wrong_sum():
    x = RNG.standard_normal((3, 4))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    found = diagnosis("softmax", e, x)
    assert found.id == "structure/each-row-off-by-a-factor"
    assert "division is missing" in found.en and "少了这一步除法" in found.zh


def test_an_output_off_by_a_factor_beside_weights_that_say_why_is_not_listed():
    # Uniform weights normalised over the whole array: the output is off by 1/T_q, as
    # a consequence; the weights' class is the diagnosis.
    Q, K, V = np.zeros((3, 2)), np.zeros((4, 2)), RNG.standard_normal((4, 5))
    right_out, right_w = ref.attention(Q, K, V)
    weights = right_w / right_w.sum()
    found = diagnosis("attention", (weights @ V, weights), Q, K, V)
    assert found.id == "structure/normalised-over-whole-array", found


def test_where_the_right_result_sums_to_1_along_two_axes_the_last_is_named():
    # Identical tokens: the right weights are uniform, so they sum to 1 along T_q too.
    Q = K = np.ones((3, 2))
    V = RNG.standard_normal((3, 4))
    right_out, right_w = ref.attention(Q, K, V)
    weights = right_w / right_w.sum()
    found = diagnosis("attention", (weights @ V, weights), Q, K, V)
    assert found.id == "structure/normalised-over-whole-array", found
    assert "T_k" in found.en and "T_q" not in found.en, found.en


def test_a_catalogued_name_that_one_input_fits_by_coincidence_is_not_given():
    # √T_q is 1 where T_q is 1: there the result is the unscaled one, but the other
    # failures rule "no scaling" out, in the grader and in the self-check alike.
    from tests.conftest import grade_answers
    from tests.grader.test_diagnosis import edited, self_check
    from tests.mha_exercise import sample_answers

    answers = edited(sample_answers()["alice_correct"], "attention_scores",
                     [("/ math.sqrt(d_k)", "/ math.sqrt(Q.shape[-2])")])
    for language in ("zh", "en"):
        graded = grade_answers(answers, seed=17, language=language)
        failed = [t for t in graded.tests if t.name.startswith("attention_scores:")
                  and t.status == "failed"]
        assert failed and not any("attention_scores/no-scaling" in t.tags
                                  for t in failed)
        assert any("structure/constant-factor" in t.tags for t in failed)
        checked = [r for r in self_check(answers, language)
                   if r.check.function == "attention_scores" and r.status == "failed"]
        assert checked and not any("attention_scores/no-scaling" in r.tags for r in checked)
        assert all("√" not in r.message or "T_q" in r.message for r in checked
                   if r.tags), [r.message for r in checked]
