"""Each catalogued mistake, made on purpose, is named as exactly that mistake."""

import pytest

from tests.mha_exercise import CATALOGUE, EXERCISE, POINTS, PUBLIC
from mhakit.selfcheck import runner
from mhakit.selfcheck.framework import InProcessStudent
from mhakit.selfcheck.notebook import run_cells
from mhakit.selfcheck.wording import speaking
from tests.mha_exercise import reference_body

from tests.conftest import ANSWER_ORDER, grade_answers

# mistake id -> (function, [(text in the reference answer, what the student wrote)])
EDITS = {
    "dot_product/no-sum": ("dot_product", [("return np.sum(u * v, axis=-1)", "return u * v")]),
    "dot_product/sum-over-everything": ("dot_product", [
        ("return np.sum(u * v, axis=-1)", "return np.sum(u * v)")]),
    "attention_scores/no-scaling": ("attention_scores", [("/ math.sqrt(d_k)", "")]),
    "attention_scores/divided-by-d_k": ("attention_scores", [("/ math.sqrt(d_k)", "/ d_k")]),
    "attention_scores/multiplied-by-sqrt-d_k": ("attention_scores", [
        ("/ math.sqrt(d_k)", "* math.sqrt(d_k)")]),
    "softmax/no-max-subtraction": ("softmax", [
        ("shifted = x - np.max(x, axis=axis, keepdims=True)", "shifted = x")]),
    "softmax/wrong-axis": ("softmax", [("axis=axis", "axis=-1"), ("axis=axis", "axis=-1")]),
    "softmax/normalised-over-whole-array": ("softmax", [
        ("np.max(x, axis=axis, keepdims=True)", "np.max(x)"),
        ("np.sum(exps, axis=axis, keepdims=True)", "np.sum(exps)")]),
    "attention/mask-ignored": ("attention", [("if mask is None:", "if True:")]),
    "attention/mask-inverted": ("attention", [
        ("mask = np.asarray(mask, dtype=bool)", "mask = ~np.asarray(mask, dtype=bool)")]),
    "attention/mask-after-softmax": ("attention", [
        ("scores = np.where(mask, scores, -np.inf)", "scores = scores")]),
    "attention/mask-filled-with-zero": ("attention", [
        ("scores = np.where(mask, scores, -np.inf)", "scores = np.where(mask, scores, 0.0)"),
        ("weights = np.where(mask, softmax(scores, axis=-1), 0.0)",
         "weights = softmax(scores, axis=-1)")]),
    "split_heads/reshape-without-transpose": ("split_heads", [
        ("per_token = X.reshape(*X.shape[:-1], num_heads, d_k)",
         "return X.reshape(*X.shape[:-2], num_heads, X.shape[-2], d_k)")]),
    "split_heads/width-read-as-d_k-h": ("split_heads", [
        ("per_token = X.reshape(*X.shape[:-1], num_heads, d_k)",
         "per_token = np.swapaxes(X.reshape(*X.shape[:-1], d_k, num_heads), -1, -2)")]),
    "split_heads/wrong-axes-swapped": ("split_heads", [
        ("np.swapaxes(per_token, -2, -3)", "np.swapaxes(per_token, -1, -3)")]),
    "concat_heads/reshape-without-transpose": ("concat_heads", [
        ("return per_token.reshape(*per_token.shape[:-2], num_heads * d_k)",
         "return H.reshape(*H.shape[:-3], H.shape[-2], num_heads * d_k)")]),
    "concat_heads/heads-in-reverse-order": ("concat_heads", [
        ("per_token = np.swapaxes(H, -3, -2)",
         "per_token = np.swapaxes(np.flip(H, axis=-3), -3, -2)")]),
    "concat_heads/width-as-d_k-h": ("concat_heads", [
        ("per_token = np.swapaxes(H, -3, -2)", "per_token = np.moveaxis(H, -3, -1)")]),
    "output_projection/W_o-transposed": ("output_projection", [
        ("return C @ W_o", "return C @ W_o.T")]),
    "output_projection/not-applied": ("output_projection", [("return C @ W_o", "return C")]),
    "multi_head_attention/no-output-projection": ("multi_head_attention", [
        ("output = output_projection(concat_heads(heads), W_o)",
         "output = concat_heads(heads)")]),
    "multi_head_attention/projection-matrices-mixed-up": ("multi_head_attention", [
        ("K = split_heads(X @ W_k, num_heads)", "K = split_heads(X @ W_q, num_heads)")]),
    "multi_head_attention/scaled-by-sqrt-d_model": ("multi_head_attention", [
        ("heads, weights = attention(Q, K, V, mask)",
         "scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(X.shape[-1])\n"
         "    if mask is not None:\n"
         "        scores = np.where(mask, scores, -np.inf)\n"
         "    weights = softmax(scores, axis=-1)\n"
         "    heads = weights @ V")]),
    "multi_head_attention/scaled-by-num-heads": ("multi_head_attention", [
        ("heads, weights = attention(Q, K, V, mask)",
         "scores = Q @ np.swapaxes(K, -1, -2) / num_heads\n"
         "    if mask is not None:\n"
         "        scores = np.where(mask, scores, -np.inf)\n"
         "    weights = softmax(scores, axis=-1)\n"
         "    heads = weights @ V")]),
    "multi_head_attention/mask-ignored": ("multi_head_attention", [
        ("heads, weights = attention(Q, K, V, mask)", "heads, weights = attention(Q, K, V)")]),
    "multi_head_attention/mask-transposed": ("multi_head_attention", [
        ("mask = np.asarray(mask, dtype=bool)[..., None, :, :]",
         "mask = np.swapaxes(np.asarray(mask, dtype=bool), -1, -2)[..., None, :, :]")]),
    "multi_head_attention/mask-without-head-axis": ("multi_head_attention", [
        ("mask = np.asarray(mask, dtype=bool)[..., None, :, :]",
         "mask = np.asarray(mask, dtype=bool)")]),
    "multi_head_attention/weights-of-one-head": ("multi_head_attention", [
        ("return output, weights", "return output, weights[..., -1, :, :]")]),
}
ALL = {m.id: m for mistakes in CATALOGUE.values() for m in mistakes}
COMPOSITES = {f.name for f in EXERCISE.functions if f.own_pieces}


def with_own_pieces(test, function):
    """A 0-point check of another function that is built from the pieces: it runs the
    student's own pieces (the public checks, and the hidden "own pieces" one), so a wrong
    piece may show there as the composite's mistake too."""
    part = test.name.split(":")[0]
    return part != function and part in COMPOSITES and test.max_score == 0


def test_every_catalogued_mistake_has_a_submission_here():
    assert set(EDITS) == set(ALL)


def wrong_answers(reference_answers, mistake_id):
    function, edits = EDITS[mistake_id]
    source = reference_body(function)
    for old, new in edits:
        assert old in source, (mistake_id, old)
        source = source.replace(old, new, 1)
    return dict(reference_answers, **{f"answer_{function}": source})


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("mistake_id", sorted(EDITS))
def test_each_mistake_is_named_as_itself(reference_answers, mistake_id, language):
    function = EDITS[mistake_id][0]
    assert_named_only(wrong_answers(reference_answers, mistake_id), function, mistake_id,
                      language)


# Other ways of writing a catalogued mistake: id -> [(function, edits)]
ALSO = {
    # axis=0 written in: the wrong axis on the 2-D checks and on the 3-D ones alike, where
    # axis=-1 written in (EDITS) is wrong only on a check that asks for another axis
    "softmax/wrong-axis": [("softmax", [("axis=axis", "axis=0"), ("axis=axis", "axis=0")])],
}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("mistake_id, function, edits",
                         [(m, f, e) for m, ways in ALSO.items() for f, e in ways])
def test_each_way_of_writing_a_mistake_is_named_as_it(reference_answers, mistake_id, function,
                                                      edits, language):
    answers = edited(reference_answers, function, edits)
    assert_named_only(answers, function, mistake_id, language)
    named = {tag for result in self_check(answers, language) for tag in result.tags
             if result.check.function == function}
    assert named == {mistake_id}


def assert_named_only(answers, function, mistake_id, language):
    """Graded, ``answers`` name ``mistake_id`` and nothing else for ``function``."""
    mistake = ALL[mistake_id]
    result = grade_answers(answers, seed=17, language=language)
    named = {tag for test in result.tests if not with_own_pieces(test, function)
             for tag in test.tags if not tag.startswith("general/")}
    assert named == {mistake_id}
    tagged = [t for t in result.tests if mistake_id in t.tags
              and not with_own_pieces(t, function)]
    assert tagged and all(t.name.startswith(function + ":") and t.status == "failed"
                          for t in tagged)
    assert all(mistake.text(language) in t.output for t in tagged)
    assert result.parts[function] < sum(
        t.max_score for t in result.tests if t.name.startswith(function + ":"))


# Mistakes any function can make, named by the checks themselves:
# id -> (function, edits); a public check catches each of them too
GENERAL = {
    "general/list-returned": ("dot_product", [
        ("return np.sum(u * v, axis=-1)", "return np.sum(u * v, axis=-1).tolist()")]),
    "general/input-modified-in-place": ("softmax", [
        ("shifted = x - np.max(x, axis=axis, keepdims=True)",
         "x -= np.max(x, axis=axis, keepdims=True)\n    shifted = x")]),
    "general/float32-became-float64": ("softmax", [
        ("x = np.asarray(x)", "x = np.asarray(x, dtype=np.float64)")]),
}
GENERAL_WORDS = {  # a phrase of each message, in each language
    "general/list-returned": {"zh": "Python 列表", "en": "Python list"},
    "general/input-modified-in-place": {"zh": "原地修改", "en": "in place"},
    "general/float32-became-float64": {"zh": "dtype 是 float64，应该是 float32",
                                       "en": "dtype float64, expected float32"},
}


def edited(reference_answers, function, edits):
    source = reference_body(function)
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new, 1)
    return dict(reference_answers, **{f"answer_{function}": source})


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("mistake_id", sorted(GENERAL))
def test_general_mistakes_are_named_by_grader_and_self_check(reference_answers, mistake_id,
                                                             language):
    function, edits = GENERAL[mistake_id]
    answers = edited(reference_answers, function, edits)
    words = GENERAL_WORDS[mistake_id][language]
    graded = grade_answers(answers, seed=17, language=language)
    tests = [t for t in graded.tests if not with_own_pieces(t, function)]
    tagged = [t for t in tests if mistake_id in t.tags]
    assert tagged and all(t.name.startswith(function + ":") and t.status == "failed"
                          and words in t.output for t in tagged)
    # .tolist() of a single dot product is a Python float, which is float64 too.
    also = {"general/float32-became-float64"} if mistake_id == "general/list-returned" else set()
    assert {tag for t in tests for tag in t.tags} - also == {mistake_id}
    assert graded.parts[function] < sum(POINTS[function])
    checked = [r for r in self_check(answers, language) if mistake_id in r.tags
               and r.check.function not in COMPOSITES - {function}]
    assert checked
    assert all(r.check.function == function and words in r.message for r in checked)


def test_a_correct_submission_gets_no_diagnosis(reference_answers):
    result = grade_answers(reference_answers, seed=17)
    assert result.score == 100
    assert not any(test.tags for test in result.tests)


# ------------------------------------------------------------ the student's self-check
# (its tests: tests/selfcheck/test_fingerprints.py, tests/exercises/mha/test_public_checks.py)

def self_check(answers, language="zh"):
    namespace = {"__name__": "__student__"}
    run_cells([(cell, answers[cell]) for cell in ANSWER_ORDER if cell in answers], namespace)
    with speaking(language):
        return runner.public_results(InProcessStudent(namespace), checks=PUBLIC.CHECKS,
                                     namer=runner.namer_for(PUBLIC))
