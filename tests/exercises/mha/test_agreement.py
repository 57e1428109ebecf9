"""A green self-check means full marks for the code: on every mistake of the corpus, and on
every pair of mistakes in two different functions, the public checks all pass exactly
when the hidden checks give all of the code's 88 points.

The corpus is the catalogue's mistakes and the general ones (tests/grader/test_diagnosis.py),
some mistakes nobody catalogued, and correct rewrites, which must be green and full.
"""

import itertools

import pytest

from mhakit.selfcheck.runner import ANSWERED, PASSED, QUIZ, summarize
from tests.conftest import grade_answers
from tests.grader.test_diagnosis import EDITS, GENERAL, self_check
from tests.mha_exercise import POINTS, reference_body

SCORES = "(Q @ np.swapaxes(K, -1, -2)) / math.sqrt(d_k)"
INLINE_HEADS = ("heads, weights = attention(Q, K, V, mask)",
                "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
                "    if mask is not None:\n"
                "        scores = np.where(mask, scores, -np.inf)\n"
                "    weights = softmax(scores, axis=-1)\n"
                "    heads = weights @ V")
# Mistakes the catalogue does not list: id -> (function, [(old, new)])
UNLISTED = {
    "dot_product/np.dot": ("dot_product", [("np.sum(u * v, axis=-1)", "np.dot(u, v)")]),
    "attention_scores/np.sqrt-makes-float64": ("attention_scores", [
        ("/ math.sqrt(d_k)", "/ np.sqrt(d_k)")]),
    "attention_scores/divided-by-sqrt-T_k": ("attention_scores", [
        ("/ math.sqrt(d_k)", "/ math.sqrt(K.shape[-2])")]),
    "attention_scores/K.T": ("attention_scores", [(SCORES, "(Q @ K.T) / math.sqrt(d_k)")]),
    "attention/NaN-for-a-row-that-sees-nothing": ("attention", [
        ("scores = np.where(has_key, scores, 0.0)", ""),
        ("weights = np.where(mask, softmax(scores, axis=-1), 0.0)",
         "weights = softmax(scores, axis=-1)")]),
    "split_heads/heads-reversed": ("split_heads", [
        ("np.swapaxes(per_token, -2, -3)", "np.flip(np.swapaxes(per_token, -2, -3), axis=-3)")]),
    "multi_head_attention/np.sqrt-makes-float64": ("multi_head_attention", [INLINE_HEADS]),
    "multi_head_attention/output-times-num_heads": ("multi_head_attention", [
        ("return output, weights", "return output * num_heads, weights")]),
}
# Correct rewrites: green, and full marks.
REWRITES = {
    "dot_product/einsum": ("dot_product", [
        ("np.sum(u * v, axis=-1)", 'np.einsum("...d,...d->...", u, v)')]),
    "attention_scores/power-of-a-half": ("attention_scores", [
        ("/ math.sqrt(d_k)", "/ d_k ** 0.5")]),
    "softmax/methods": ("softmax", [
        ("np.max(x, axis=axis, keepdims=True)", "x.max(axis=axis, keepdims=True)"),
        ("np.sum(exps, axis=axis, keepdims=True)", "exps.sum(axis=axis, keepdims=True)")]),
    "concat_heads/concatenate": ("concat_heads", [
        ("return per_token.reshape(*per_token.shape[:-2], num_heads * d_k)",
         "return np.concatenate(list(np.moveaxis(H, -3, 0)), axis=-1)")]),
}
CORPUS = {**EDITS, **GENERAL, **UNLISTED,
          **REWRITES}
PAIRS = [(a, b) for a, b in itertools.combinations(sorted(CORPUS), 2)
         if CORPUS[a][0] != CORPUS[b][0]]
CODE_POINTS = sum(sum(points) for points in POINTS.values())


def with_mistakes(reference_answers, *mistake_ids):
    answers = dict(reference_answers)
    for mistake_id in mistake_ids:
        function, edits = CORPUS[mistake_id]
        source = reference_body(function)
        for old, new in edits:
            assert old in source, (mistake_id, old)
            source = source.replace(old, new, 1)
        answers[f"answer_{function}"] = source
    return answers


def verdicts(answers):
    """(whether the self-check is green, the code's points in the hidden grade)."""
    rows = summarize(self_check(answers, "en"))
    green = all(status == (ANSWERED if part == QUIZ else PASSED) for part, status, _ in rows)
    parts = grade_answers(answers, seed=17, language="en").parts
    return green, sum(points for part, points in parts.items() if part != QUIZ)


def test_the_corpus_holds_mistakes_of_every_function_and_the_pairs_are_many():
    assert CODE_POINTS == 88
    assert {function for function, _ in CORPUS.values()} == set(POINTS)
    assert len(PAIRS) > 400


@pytest.mark.slow
@pytest.mark.parametrize("mistake_id", sorted(CORPUS))
def test_green_exactly_when_full_for_each_mistake(reference_answers, mistake_id):
    green, points = verdicts(with_mistakes(reference_answers, mistake_id))
    assert green == (points == CODE_POINTS), (green, points)
    # The rewrites are right, and everything else is a real mistake.
    assert green == (mistake_id in REWRITES), (green, points)


@pytest.mark.slow
def test_green_exactly_when_full_for_every_pair_of_mistakes(reference_answers):
    disagreements = []
    for pair in PAIRS:
        green, points = verdicts(with_mistakes(reference_answers, *pair))
        if green != (points == CODE_POINTS):
            disagreements.append((pair, green, points))
    assert disagreements == []


def test_the_reference_is_green_and_full(reference_answers):
    assert verdicts(reference_answers) == (True, CODE_POINTS)
