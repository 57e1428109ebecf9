"""Points pay for correct values only, and each mistake costs its own function's points."""

import pytest

import solutions
from tests.mha_exercise import POINTS, QUIZ_POINTS
from autograder.sandbox import Limits

from tests.conftest import grade_answers

FULL = {name: float(sum(p)) for name, p in POINTS.items()}
FULL["quiz"] = float(sum(QUIZ_POINTS.values()))


def parts(result):
    return result["extra_data"]["parts"]


def test_the_reference_scores_100(reference_answers):
    result = grade_answers(reference_answers)
    assert result["score"] == 100
    assert parts(result) == FULL
    assert all(t["score"] == t["max_score"] for t in result["tests"])


def test_the_untouched_release_scores_0():
    result = grade_answers({})
    assert result["score"] == 0
    assert {t["status"] for t in result["tests"]} == {"not yet implemented", "failed"}


@pytest.mark.parametrize("function", list(solutions.FUNCTIONS) + ["quiz"])
def test_each_unimplemented_part_costs_exactly_its_points(reference_answers, function):
    removed = (lambda cell: cell.startswith("answer_quiz_")) if function == "quiz" else (
        lambda cell: cell == f"answer_{function}")
    answers = {cell: source for cell, source in reference_answers.items() if not removed(cell)}
    result = grade_answers(answers)
    assert result["score"] == 100 - FULL[function]
    assert parts(result)[function] == 0


INLINED_ATTENTION = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "    scores = attention_scores(Q, K)\n"
    "    if mask is None:\n"
    "        weights = softmax(scores, axis=-1)\n"
    "    else:\n"
    "        allowed = np.asarray(mask, dtype=bool)[..., None, :, :]\n"
    "        scores = np.where(allowed, scores, -1e9)\n"
    "        scores = np.where(np.any(allowed, axis=-1, keepdims=True), scores, 0.0)\n"
    "        weights = np.where(allowed, softmax(scores, axis=-1), 0.0)\n"
    "    return output_projection(concat_heads(weights @ V), W_o), weights\n")


def test_a_broken_softmax_costs_nothing_where_attention_is_done_inline(reference_answers):
    # The reference's multi_head_attention reaches softmax through attention; a student's
    # that does attention's work itself meets the same recorded softmax call.
    answers = dict(reference_answers, answer_multi_head_attention=INLINED_ATTENTION,
                   answer_softmax="def softmax(x, axis=-1):\n    return np.exp(x) / 3\n")
    result = grade_answers(answers)
    assert parts(result)["softmax"] == 0
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"]


LOOPING_OVER_HEADS = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    flat = X.reshape(-1, *X.shape[-2:])\n"
    "    T = X.shape[-2]\n"
    "    masks = None if mask is None else np.broadcast_to(mask, (len(flat), T, T))\n"
    "    outputs, weights = [], []\n"
    "    for b, x in enumerate(flat):\n"
    "        Q, K, V = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "        heads = [attention(Q[h], K[h], V[h], None if masks is None else masks[b])\n"
    "                 for h in range(num_heads)]\n"
    "        joined = concat_heads(np.stack([o for o, _ in heads]))\n"
    "        outputs.append(output_projection(joined, W_o))\n"
    "        weights.append(np.stack([w for _, w in heads]))\n"
    "    return (np.stack(outputs).reshape(X.shape),\n"
    "            np.stack(weights).reshape(X.shape[:-2] + (num_heads, T, T)))\n")


def test_a_loop_over_batch_items_and_heads_keeps_its_points(reference_answers):
    # Each slice's calls are not the reference's, so they run the student's own pieces,
    # all through stand-ins that ask the grader: far more messages than the reference's.
    answers = dict(reference_answers, answer_multi_head_attention=LOOPING_OVER_HEADS)
    result = grade_answers(answers)
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"], [
        t["output"] for t in result["tests"] if t["name"].startswith("multi_head")]
    assert not result["extra_data"]["crashes"]


def _count_stand_in_questions(monkeypatch):
    """Every question the child's stand-ins asked: (function, whether it was answered)."""
    from autograder.sandbox import student

    asked, original = [], student.recorded_answer

    def counting(name, *rest):
        found, value = original(name, *rest)
        asked.append((name, found))
        return found, value

    monkeypatch.setattr(student, "recorded_answer", counting)
    return asked


def test_stand_ins_answer_the_calls_the_reference_makes_from_sealed_answers(
        reference_answers, monkeypatch):
    asked = _count_stand_in_questions(monkeypatch)
    assert grade_answers(reference_answers, seed=3)["score"] == 100
    assert asked == []  # every stand-in call was the reference's own, to the last bit


def test_a_minus_1e30_mask_still_matches_the_references_minus_inf(reference_answers,
                                                                 monkeypatch):
    asked = _count_stand_in_questions(monkeypatch)
    source = reference_answers["answer_attention"]
    assert "-np.inf" in source
    answers = dict(reference_answers, answer_attention=source.replace("-np.inf", "-1e30"))
    result = grade_answers(answers, seed=3)
    assert parts(result)["attention"] == FULL["attention"]
    assert ("softmax", True) in asked and ("softmax", False) not in asked


def test_a_call_the_reference_never_makes_runs_the_students_own_function(reference_answers,
                                                                        monkeypatch):
    # softmax through the attention stand-in: Q = x, K = I gives weights softmax(x / √d).
    through_attention = (
        "def softmax(x, axis=-1):\n"
        "    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)\n"
        "    d = x.shape[-1]\n"
        "    eye = np.broadcast_to(np.eye(d), x.shape[:-1] + (d, d))\n"
        "    _, weights = attention(x[..., None, :] * np.sqrt(d), eye, eye)\n"
        "    return np.moveaxis(weights[..., 0, :], -1, axis)\n")
    asked = _count_stand_in_questions(monkeypatch)
    result = grade_answers(dict(reference_answers, answer_softmax=through_attention), seed=3)
    # While softmax is graded, nothing is a stand-in (the reference calls no other
    # function), so attention is the student's own, which calls this softmax again.
    assert parts(result)["softmax"] == 0
    assert parts(result)["attention"] == FULL["attention"]  # there softmax is a stand-in
    # and answers from its sealed table: this softmax's detour asked the grader nothing.
    assert asked == []


def test_the_allclose_trick_earns_nothing(reference_answers):
    cheat = ("np.allclose = lambda *a, **k: True\n"
             "np.testing.assert_allclose = lambda *a, **k: None\n"
             "def softmax(x, axis=-1):\n    return np.ones_like(x) / np.shape(x)[axis]\n")
    result = grade_answers(dict(reference_answers, answer_softmax=cheat))
    assert parts(result)["softmax"] == 0
    assert result["score"] == 100 - FULL["softmax"]


def test_the_input_transformer_trick_earns_nothing():
    trick = "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n"
    result = grade_answers({"answer_dot_product": trick})
    assert result["score"] == 0
    assert "answer_dot_product" in result["extra_data"]["load_errors"]


@pytest.mark.parametrize("language,words", [("zh", "结束了 Python 进程"),
                                            ("en", "ended the Python process")])
def test_a_crash_costs_only_the_crashing_function(reference_answers, language, words):
    crash = "import os\ndef softmax(x, axis=-1):\n    os._exit(3)\n"
    result = grade_answers(dict(reference_answers, answer_softmax=crash), language=language)
    assert parts(result)["softmax"] == 0
    assert result["score"] == 100 - FULL["softmax"]
    assert result["extra_data"]["crashes"]
    said = [t["output"] for t in result["tests"] if t["name"].startswith("softmax:")]
    assert said and all(words in output for output in said), said


def test_an_endless_loop_times_out_and_costs_only_its_function(reference_answers):
    loop = "def dot_product(u, v):\n    while True:\n        pass\n"
    result = grade_answers(dict(reference_answers, answer_dot_product=loop),
                           limits=Limits(call_seconds=1.0, max_restarts=10))
    assert parts(result)["dot_product"] == 0
    assert result["score"] == 100 - FULL["dot_product"]
    assert any("运行超过了 1 秒" in t["output"] for t in result["tests"])  # zh by default


def test_same_seed_same_result_and_a_fresh_seed_by_default(reference_answers):
    answers = dict(reference_answers, answer_softmax="def softmax(x, axis=-1):\n"
                   "    return np.exp(x) / np.sum(np.exp(x), axis=axis, keepdims=True)\n")
    first, second = grade_answers(answers, seed=42), grade_answers(answers, seed=42)
    assert first["extra_data"]["seed"] == 42
    assert [t["output"] for t in first["tests"]] == [t["output"] for t in second["tests"]]
    fresh = [grade_answers(answers, seed=None)["extra_data"]["seed"] for _ in range(2)]
    assert fresh[0] != fresh[1]


def test_results_follow_gradescopes_schema(reference_answers):
    result = grade_answers(reference_answers)
    assert set(result) >= {"score", "tests"}
    for test in result["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert test["name"].split(":")[0] in FULL
        assert test["visibility"] in ("visible", "after_published")
    extra = result["extra_data"]
    assert {"seed", "mhakit_version", "graders_hash", "isolation"} <= set(extra)
    assert extra["max_score"] == 100


def test_modules_imported_late_still_load_in_the_child(reference_answers):
    """numpy loads some submodules on first use, and students import the standard library:
    both must be found inside the jail, where the child has only Python and numpy."""
    late = ("import statistics, fractions\n"
            "def softmax(x, axis=-1):\n"
            "    np.fft.fft(np.ones(2)); np.polynomial.Polynomial([1, 2]); np.random.default_rng(0)\n"
            "    statistics.mean([1, 2]); fractions.Fraction(1, 3)\n"
            "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
            "    return e / np.sum(e, axis=axis, keepdims=True)\n")
    result = grade_answers(dict(reference_answers, answer_softmax=late))
    assert parts(result)["softmax"] == FULL["softmax"], [
        t["output"] for t in result["tests"] if t["name"].startswith("softmax")][:2]
    assert result["extra_data"]["load_errors"] == {}
