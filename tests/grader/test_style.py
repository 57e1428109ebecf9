"""autograder/grader/style.py: a style note costs nothing, and names the line it is about."""

import pytest

from tests.conftest import grade_answers


LOOPING_SPLIT = """def split_heads(X, num_heads):
    X = np.asarray(X)
    d_k = X.shape[-1] // num_heads
    heads = [X[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)]
    return np.stack(heads, axis=-3)
"""


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_loop_over_heads_costs_nothing_and_gets_a_note(reference_answers, language):
    from autograder.grader.grading import part_summary

    answers = dict(reference_answers, answer_split_heads=LOOPING_SPLIT)
    result = grade_answers(answers, seed=17, language=language)
    assert result["score"] == 100
    notes = result["extra_data"]["style"]
    assert list(notes) == ["split_heads"]
    assert ("line 4" in notes["split_heads"]) if language == "en" else ("第 4 行" in notes["split_heads"])
    assert notes["split_heads"] in part_summary(result, "split_heads")


def test_the_reference_gets_no_style_note(reference_answers):
    assert grade_answers(reference_answers, seed=17)["extra_data"]["style"] == {}
