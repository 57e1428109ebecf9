"""Points pay for correct values only, and each mistake costs its own function's points."""

import json
import re
import subprocess
import sys

import pytest

from tests.mha_exercise import EXERCISE, POINTS, QUIZ_POINTS
from mhakit.sandbox import Limits

from tests.conftest import REPO, grade_answers

FULL = {name: float(sum(p)) for name, p in POINTS.items()}
FULL["quiz"] = float(sum(QUIZ_POINTS.values()))


def parts(result):
    return result.parts


def test_the_reference_scores_100(reference_answers):
    result = grade_answers(reference_answers)
    assert result.score == 100
    assert parts(result) == FULL
    assert all(t.score == t.max_score for t in result.tests)


def test_the_untouched_release_scores_0():
    result = grade_answers({})
    assert result.score == 0
    assert {t.status for t in result.tests} == {"not yet implemented", "failed"}


@pytest.mark.parametrize("function", list(EXERCISE.function_names) + ["quiz"])
def test_each_unimplemented_part_costs_exactly_its_points(reference_answers, function):
    removed = (lambda cell: cell.startswith("answer_quiz_")) if function == "quiz" else (
        lambda cell: cell == f"answer_{function}")
    answers = {cell: source for cell, source in reference_answers.items() if not removed(cell)}
    result = grade_answers(answers)
    assert result.score == 100 - FULL[function]
    assert parts(result)[function] == 0


def test_the_allclose_trick_earns_nothing(reference_answers):
    cheat = ("np.allclose = lambda *a, **k: True\n"
             "np.testing.assert_allclose = lambda *a, **k: None\n"
             "def softmax(x, axis=-1):\n    return np.ones_like(x) / np.shape(x)[axis]\n")
    result = grade_answers(dict(reference_answers, answer_softmax=cheat))
    assert parts(result)["softmax"] == 0
    assert result.score == 100 - FULL["softmax"]


def test_the_input_transformer_trick_earns_nothing(reference_answers):
    # The graded cells' get_ipython() is inert: a transformer added to it never runs, so
    # the cells after it are graded as they are, and the trick alone earns nothing.
    trick = "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n"
    assert grade_answers({"answer_dot_product": trick}).score == 0
    tricked = dict(reference_answers)
    tricked["answer_dot_product"] = trick + tricked["answer_dot_product"]
    result = grade_answers(tricked)
    assert result.score == 100 and not result.extra["load_errors"]


@pytest.mark.parametrize("language,words", [("zh", "结束了 Python 进程"),
                                            ("en", "ended the Python process")])
def test_a_crash_costs_only_the_crashing_function(reference_answers, language, words):
    crash = "import os\ndef softmax(x, axis=-1):\n    os._exit(3)\n"
    result = grade_answers(dict(reference_answers, answer_softmax=crash), language=language)
    assert parts(result)["softmax"] == 0
    assert result.score == 100 - FULL["softmax"]
    assert result.extra["crashes"]
    said = [t.output for t in result.tests if t.name.startswith("softmax:")]
    assert said and all(words in output for output in said), said


def test_an_endless_loop_times_out_and_costs_only_its_function(reference_answers):
    loop = "def dot_product(u, v):\n    while True:\n        pass\n"
    result = grade_answers(dict(reference_answers, answer_dot_product=loop),
                           limits=Limits(call_seconds=1.0, max_restarts=10))
    assert parts(result)["dot_product"] == 0
    assert result.score == 100 - FULL["dot_product"]
    assert any("运行超过了 1 秒" in t.output for t in result.tests)  # zh by default


# A grading in a process of its own: one process keeps a seed's plans (prepared_for's
# cache), so two gradings in this one would share their inputs whatever the seed drew.
GRADE_IN_A_FRESH_PROCESS = """
import hashlib, json, sys
import numpy as np
from mhakit.grader.grading import prepared_for
from tests.conftest import grade_answers
seed = int(sys.argv[1])
result = grade_answers(json.loads(sys.stdin.read()), seed=seed)
plans, _ = prepared_for(seed)
drawn = hashlib.sha256()
for value in (value for calls in plans for call in calls
              for value in (*call.args, *call.kwargs.values())):
    if isinstance(value, np.ndarray):
        drawn.update(repr((value.dtype.str, value.shape)).encode() + value.tobytes())
print(json.dumps({"seed": result.extra["seed"], "score": result.score,
                  "tests": [[t.name, t.score, t.output] for t in result.tests],
                  "inputs": drawn.hexdigest()}))
"""


def _graded_in_a_fresh_process(answers, seed):
    done = subprocess.run([sys.executable, "-c", GRADE_IN_A_FRESH_PROCESS, str(seed)],
                          input=json.dumps(answers), capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_same_seed_same_result_and_a_fresh_seed_by_default(reference_answers):
    answers = dict(reference_answers, answer_softmax="def softmax(x, axis=-1):\n"
                   "    return np.exp(x) / np.sum(np.exp(x), axis=axis, keepdims=True)\n")
    first, second, other = (_graded_in_a_fresh_process(answers, seed) for seed in (42, 42, 43))
    assert first["seed"] == 42
    assert any(name.startswith("softmax:") and score == 0 for name, score, _ in first["tests"])
    assert first["inputs"] == second["inputs"]  # drawn again, in another process: the same
    assert first["tests"] == second["tests"] and first["score"] == second["score"]
    assert other["inputs"] != first["inputs"]  # so the comparison can fail
    fresh = [grade_answers(answers, seed=None).extra["seed"] for _ in range(2)]
    assert fresh[0] != fresh[1]


def test_results_follow_gradescopes_schema(reference_answers):
    shaped = grade_answers(reference_answers).as_json()
    assert set(shaped) >= {"score", "tests"}
    for test in shaped["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert test["name"].split(":")[0] in FULL
        assert test["visibility"] in ("visible", "after_published")
    extra = shaped["extra_data"]
    assert {"seed", "mhakit_version", "graders_hash", "isolation", "status"} <= set(extra)
    assert extra["max_score"] == 100 and extra["status"] == "graded"


# ------------------------------------------------ the per-function summary

# The heading over the 0-point checks that failed, per language: (full points, lost points)
FREE_HEADINGS = {"en": ("earned all its points", "the mistake that cost"),
                 "zh": ("已得满分", "扣分的错误")}


@pytest.fixture(scope="module", params=["zh", "en"])
def wrong_split(request, reference_answers):
    """(language, the result of a notebook whose only mistake is its split_heads)."""
    from tests.mha_exercise import sample_answers

    wrong = sample_answers()["bob_partly_correct"]["answer_split_heads"]
    answers = dict(reference_answers, answer_split_heads=wrong)
    return request.param, grade_answers(answers, seed=17, language=request.param)


def _split_at_heading(summary, heading):
    lines = summary.splitlines()
    at = next(i for i, line in enumerate(lines) if heading in line)
    return lines[:at], lines[at], lines[at + 1:]


def test_a_function_with_full_points_says_why_its_failed_checks_cost_nothing(wrong_split):
    from mhakit.grader.grading import part_summary

    language, result = wrong_split
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"]
    assert parts(result)["split_heads"] == 0
    summary = part_summary(result, "multi_head_attention")
    above, heading, below = _split_at_heading(summary, FREE_HEADINGS[language][0])
    assert "split_heads" in heading  # the function that lost the points is named
    assert "attention" not in heading.replace("multi_head_attention", "")  # not the others
    assert not any("✗" in line for line in above)
    assert len(below) >= 3 and all(line.startswith("  ✗ ") and "[" not in line.split(" — ")[0]
                                   for line in below)


def test_a_failed_check_that_cost_points_stays_above_the_heading(wrong_split):
    from mhakit.grader.grading import part_summary

    language, result = wrong_split
    summary = part_summary(result, "split_heads")
    above, heading, below = _split_at_heading(summary, FREE_HEADINGS[language][1])
    costly = [line for line in above if line.startswith("✗ ")]
    assert len(costly) == 4 and all(re.search(r"\[0/[1-9]\]", line) for line in costly)
    assert below and all(line.startswith("  ✗ ") and "[" not in line.split(" — ")[0]
                         for line in below)
    other = FREE_HEADINGS["zh" if language == "en" else "en"]
    assert not any(words in summary for words in other)  # one language only


def test_a_function_whose_free_checks_pass_has_no_heading(wrong_split):
    from mhakit.grader.grading import part_summary

    language, result = wrong_split
    summary = part_summary(result, "attention")
    assert "✗" not in summary and not any(words in summary for words in FREE_HEADINGS[language])
    assert summary.count("\n") + 1 == sum(t.name.startswith("attention:")
                                          for t in result.tests)
