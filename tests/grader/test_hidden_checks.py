"""mhakit/grader/hidden_checks.py: each function's checks pay for correct values, keep
points for a kept dtype and untouched inputs, and the quiz pays for the key's answers."""

import pytest

from tests.conftest import grade_answers
from tests.grader.test_grading import FULL, parts
from tests.mha_exercise import EXERCISE, POINTS, QUIZ_EXPLANATIONS, QUIZ_POINTS, WRONG_ANSWER


def wrapped(answers, function, wrapper_body):
    """The reference, with ``function`` wrapped: ``out`` is the reference's result."""
    extra = (f"_real_{function} = {function}\n"
             f"def {function}(*args, **kwargs):\n"
             f"    out = _real_{function}(*args, **kwargs)\n"
             + "".join(f"    {line}\n" for line in wrapper_body.splitlines()))
    return dict(answers, zz_wrapper=extra)


FAKES = {
    "zeros": "return tuple(np.zeros_like(o) for o in out) if isinstance(out, tuple) "
             "else np.zeros_like(out)",
    "uniform": "return tuple(np.full_like(o, 1.0 / max(o.shape[-1], 1)) for o in out) "
               "if isinstance(out, tuple) else np.full_like(out, 1.0 / max(np.shape(out)[-1:] or [1]))",
    "random": "rng = np.random.default_rng()\n"
              "return tuple(rng.random(np.shape(o)).astype(o.dtype) for o in out) "
              "if isinstance(out, tuple) else rng.random(np.shape(out)).astype(np.asarray(out).dtype)",
}


@pytest.mark.parametrize("fake", FAKES)
@pytest.mark.parametrize("function", EXERCISE.function_names)
def test_right_shaped_fakes_score_zero_for_their_function_only(reference_answers, function, fake):
    result = grade_answers(wrapped(reference_answers, function, FAKES[fake]))
    assert parts(result)[function] == 0
    assert result.score == 100 - FULL[function]


@pytest.mark.parametrize("function", ["attention_scores", "softmax", "attention",
                                      "output_projection", "multi_head_attention"])
def test_float32_turned_float64_loses_some_points_not_all(reference_answers, function):
    body = ("return tuple(np.asarray(o, dtype=np.float64) for o in out) "
            "if isinstance(out, tuple) else np.asarray(out, dtype=np.float64)")
    got = parts(grade_answers(wrapped(reference_answers, function, body)))[function]
    assert 0 < got < FULL[function]
    assert got == FULL[function] - POINTS[function][2]


@pytest.mark.parametrize("function", EXERCISE.function_names)
def test_modifying_an_input_in_place_loses_some_points_not_all(reference_answers, function):
    # Copy the result first: split_heads may return a view of its input.
    body = ("out = tuple(np.array(o) for o in out) if isinstance(out, tuple) else np.array(out)\n"
            "if isinstance(args[0], np.ndarray) and args[0].flags.writeable:\n"
            "    args[0][...] = 0\n"
            "return out")
    got = parts(grade_answers(wrapped(reference_answers, function, body)))[function]
    assert got == FULL[function] - POINTS[function][3]


def test_a_broken_softmax_costs_softmax_points_only(reference_answers):
    answers = dict(reference_answers, answer_softmax=(
        "def softmax(x, axis=-1):\n    return np.exp(x) / np.sum(np.exp(x))\n"))
    result = grade_answers(answers)
    assert parts(result)["softmax"] == 0
    assert parts(result)["attention"] == FULL["attention"]
    assert parts(result)["multi_head_attention"] == FULL["multi_head_attention"]
    own = [t for t in result.tests if "own pieces" in t.name]
    assert own and all(t.status == "failed" for t in own)  # feedback, 0 points


def test_the_quiz_pays_for_the_right_answers_only(reference_answers):
    wrong = dict(reference_answers, answer_quiz_1=f'quiz_1 = "{WRONG_ANSWER}"')
    for language, verdict in (("zh", "不对。"), ("en", "not correct. ")):
        graded = grade_answers(wrong, language=language)
        assert parts(graded)["quiz"] == FULL["quiz"] - QUIZ_POINTS["quiz_1"]
        explained = next(t for t in graded.tests if t.name == "quiz: question 1")
        assert explained.output == verdict + QUIZ_EXPLANATIONS["quiz_1"][language]
    forgiving = dict(reference_answers, answer_quiz_1='quiz_1 = " b "',
                     answer_quiz_5="quiz_5 = [4 * 768 ** 2, 4 * 768 ** 2]",
                     answer_quiz_6="quiz_6 = math.sqrt(128)")
    assert parts(grade_answers(forgiving))["quiz"] == FULL["quiz"]
    near_miss = dict(reference_answers, answer_quiz_6="quiz_6 = 11.4",
                     answer_quiz_5="quiz_5 = (4 * 768 ** 2, 12 * 4 * 768 ** 2)")
    assert parts(grade_answers(near_miss))["quiz"] == FULL["quiz"] - 4
