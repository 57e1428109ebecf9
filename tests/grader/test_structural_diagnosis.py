"""Mistakes nobody catalogued are named from the structure of the wrong result, in both
languages, by the grader on its hidden inputs and by the self-check on the public ones."""

import itertools
from functools import lru_cache

import pytest

from tests.conftest import grade_answers
from tests.mha_exercise import sample_answers
from tests.exercises.mha.test_agreement import REWRITES
from tests.grader.test_diagnosis import ALL, edited, self_check

SCORES = "np.swapaxes(K, -1, -2)"
CONCAT = "return per_token.reshape(*per_token.shape[:-2], num_heads * d_k)"
NO_KEY_ZEROED = [("scores = np.where(has_key, scores, 0.0)", "pass"),
                 ("weights = np.where(mask, softmax(scores, axis=-1), 0.0)",
                  "weights = softmax(scores, axis=-1)")]

# name -> (function, edits, the diagnosis's tag, a phrase of its text in each language,
#          whether a public check catches it, catalogued names that the same output
#          earns on some input: there the catalogue's name comes first)
MISTAKES = {
    "scores divided by √T_k": (
        "attention_scores", [("/ math.sqrt(d_k)", "/ math.sqrt(K.shape[-2])")],
        "structure/constant-factor",
        {"zh": "除以的是 √T_k，应该除以 √d_k", "en": "divided by √T_k where it should be divided by √d_k"},
        True, set()),
    "K.T on batched inputs": (
        "attention_scores", [(SCORES, "K.T")], "structure/wrong-with-batch-axes",
        {"zh": "每一项单独算（不带前面的批量维）都对", "en": "Each item alone (without the leading batch axes)"},
        True, set()),
    "axes numbered for 3-D inputs only": (
        "attention_scores", [(SCORES, "(K.transpose(0, 2, 1) if K.ndim == 3 else K.T)")],
        "structure/wrong-with-more-batch-axes",
        {"zh": "少一个批量维时是对的", "en": "Right with one leading batch axis fewer"},
        False, set()),
    "np.dot in dot_product": (
        "dot_product", [("np.sum(u * v, axis=-1)", "np.dot(u, v)")],
        "structure/wrong-with-batch-axes",
        {"zh": "每一项单独算（不带前面的批量维）都对", "en": "Each item alone (without the leading batch axes)"},
        True, set()),
    "np.mean in dot_product": (
        "dot_product", [("np.sum(u * v, axis=-1)", "np.mean(u * v, axis=-1)")],
        "structure/constant-factor",
        {"zh": "多除了一个 d", "en": "divided by d once too often"}, True, set()),
    "softmax sums over axis 0": (
        "softmax", [("np.sum(exps, axis=axis, keepdims=True)",
                     "np.sum(exps, axis=0, keepdims=True)")],
        "structure/normalised-along-another-axis",
        {"zh": "结果沿第 0 轴（即 axis=", "en": "The result sums to 1 along axis 0 (that is, axis="},
        True, set()),
    "softmax sums the whole array": (
        "softmax", [("np.sum(exps, axis=axis, keepdims=True)", "np.sum(exps)")],
        "structure/normalised-over-whole-array",
        {"zh": "整个结果加起来是 1", "en": "The whole result sums to 1"}, True, set()),
    "split_heads with the heads reversed": (
        "split_heads", [("np.swapaxes(per_token, -2, -3)",
                         "np.flip(np.swapaxes(per_token, -2, -3), axis=-3)")],
        "structure/axis-reversed",
        {"zh": "h 轴上的顺序整个反过来了", "en": "along the h axis they come in reverse order"},
        True, set()),
    "split_heads without the swap": (
        "split_heads", [("return np.swapaxes(per_token, -2, -3)", "return per_token")],
        "structure/axes-swapped",
        {"zh": "h 轴和 T 轴对调了", "en": "the h axis and the T axis are swapped"},
        True, {"split_heads/reshape-without-transpose"}),  # the same output where T = h
    "attention gives NaN for a row that may see nothing": (
        "attention", NO_KEY_ZEROED, "structure/wrong-where-mask-allows-nothing",
        {"zh": "这些行有 NaN", "en": "there the result contains NaN"}, True, set()),
    "attention masks with -1e9, so a row that may see nothing is uniform": (
        "attention", [("scores = np.where(mask, scores, -np.inf)",
                       "scores = np.where(mask, scores, -1e9)")] + NO_KEY_ZEROED,
        "structure/wrong-where-mask-allows-nothing",
        {"zh": "这些行数值不对", "en": "there the result has wrong values"},
        True, {"attention/mask-filled-with-zero"}),  # the same output where all keys match
    "concat_heads with T and h·d_k swapped": (
        "concat_heads", [(CONCAT, f"return np.swapaxes({CONCAT[7:]}, -1, -2)")],
        "structure/axes-swapped",
        {"zh": "T 轴和 h·d_k 轴对调了", "en": "the T axis and the h·d_k axis are swapped"},
        True, set()),
    "concat_heads stacks the heads along T": (
        "concat_heads", [(CONCAT, "return H.reshape(*H.shape[:-3], num_heads * H.shape[-2], d_k)")],
        "structure/values-reordered",
        {"zh": "每个数都对，但有些放错了位置", "en": "Every number is right, but some are in the wrong places"},
        True, set()),
    "multi_head_attention's output times num_heads": (
        "multi_head_attention", [("return output, weights", "return output * num_heads, weights")],
        "structure/constant-factor",
        {"zh": "多乘了一个 num_heads", "en": "there is a factor num_heads too many"}, True, set()),
    "multi_head_attention's weights transposed": (
        "multi_head_attention", [("return output, weights",
                                  "return output, np.swapaxes(weights, -1, -2)")],
        "structure/axes-swapped",
        {"zh": "weights：数值都对", "en": "the T_q axis and the T_k axis are swapped"}, True, set()),
}


def answers_with(name):
    function, edits = MISTAKES[name][:2]
    return edited(sample_answers()["alice_correct"], function, edits)


@lru_cache(maxsize=None)
def graded(name, language):
    """The grade of the submission with this mistake: graded once, read by two tests."""
    return grade_answers(answers_with(name), seed=17, language=language)


def hidden_tests(result):
    """The hidden checks whose tags count: a wrong piece costs its own checks only (the
    others get its stand-in); the composites' own-pieces checks are for feedback."""
    return [t for t in result.tests if t.visibility != "visible"
            and "own pieces" not in t.name and not t.name.startswith("quiz")]


def test_none_of_these_mistakes_is_catalogued():
    """Each must be named from structure alone: no catalogued variant is one of them."""
    assert not {tag for *_, tag, _, _, _ in MISTAKES.values()} & set(ALL)


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_the_grader_names_it_from_its_hidden_inputs(name, language):
    function, _, tag, phrase, _, also = MISTAKES[name]
    hidden = hidden_tests(graded(name, language))
    tagged = [t for t in hidden if tag in t.tags]
    assert tagged and all(t.name.startswith(function + ":") and t.status == "failed"
                          and phrase[language] in t.output for t in tagged)
    named = {tag for t in hidden for tag in t.tags if not tag.startswith("general/")}
    assert named - also == {tag}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_the_self_check_names_it_from_the_public_inputs(name, language):
    function, _, tag, phrase, public, _ = MISTAKES[name]
    results = self_check(answers_with(name), language)
    tagged = [r for r in results if r.check.function == function and tag in r.tags]
    assert bool(tagged) == public
    assert all(phrase[language] in r.message for r in tagged)


def test_different_mistakes_of_one_function_get_different_diagnoses():
    """Two mistakes of one function give different outputs, so different texts."""
    texts = {name: {t.output.split(" — ", 1)[1] for t in hidden_tests(graded(name, "en"))
                    if any(tag.startswith("structure/") for tag in t.tags)}
             for name in MISTAKES}
    assert all(texts.values())
    for first, second in itertools.combinations(MISTAKES, 2):
        if MISTAKES[first][0] == MISTAKES[second][0]:
            assert not texts[first] & texts[second], (first, second)


def test_right_code_gets_no_structural_diagnosis(reference_answers):
    """The reference, and correct rewrites of five functions in one submission."""
    rewritten = dict(reference_answers)
    for function, edits in REWRITES.values():
        rewritten.update(edited(rewritten, function, edits))
    for answers in (reference_answers, rewritten):
        graded = grade_answers(answers, seed=17, language="en")
        assert graded.score == 100
        assert not any(t.tags for t in graded.tests)
        assert all(r.status == "passed" and not r.tags for r in self_check(answers, "en"))
