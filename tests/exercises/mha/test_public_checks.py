"""The mha exercise's public checks (shipped/checks.py and its fingerprints.json): which of
the catalogued mistakes the student's self-check catches, and names, before any grading."""

import pytest

from autograder.selfcheck.wording import say, speaking
from tests.grader.test_diagnosis import EDITS, self_check, wrong_answers
from tests.selfcheck.test_fingerprints import SHIPPED, shipped_fingerprints  # noqa: F401

# The catalogued mistakes that the public checks' small fixed inputs cannot see, so that only
# the grader names them: multi_head_attention's three pass every public check, and
# W_o transposed raises on the public check's non-square W_o (a function that raised has
# no output to recognise). Every other catalogued mistake, the self-check names.
ONLY_THE_GRADER_NAMES = {
    "multi_head_attention/no-output-projection": "passes",
    "multi_head_attention/scaled-by-num-heads": "passes",
    "multi_head_attention/scaled-by-sqrt-d_model": "passes",
    "output_projection/W_o-transposed": "raises",
}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("mistake_id", sorted(EDITS))
def test_the_self_check_names_what_its_checks_catch_from_fingerprints_alone(
        shipped_fingerprints, reference_answers, mistake_id, language):
    results = self_check(wrong_answers(reference_answers, mistake_id), language)
    function = EDITS[mistake_id][0]
    # Caught with a wrong value; a function that raised has no output to recognise.
    with speaking(language):
        raised = say("raised", name=function, error="")
    caught = [r for r in results if r.status == "failed" and r.check.function == function
              and raised not in r.message]
    named = {tag for r in results for tag in r.tags if not tag.startswith("general/")}
    assert named <= {mistake_id}  # never a wrong name
    if mistake_id in ONLY_THE_GRADER_NAMES:  # no public check sees it: nothing is named
        assert caught == [] and named == set(), [r.message for r in caught]
        failed = [r for r in results if r.status == "failed"]
        if ONLY_THE_GRADER_NAMES[mistake_id] == "passes":
            assert failed == [], [r.message for r in failed]
        else:
            assert failed and all(r.check.function == function and raised in r.message
                                  for r in failed), [r.message for r in failed]
    else:  # a public check sees the mistake: it is named there, with its hint
        assert caught and named == {mistake_id}, [r.message for r in results
                                                  if r.check.function == function]
        hint = SHIPPED["hints"][mistake_id][language]
        assert all(hint in r.message for r in results if mistake_id in r.tags)


def test_the_self_check_names_most_mistakes(shipped_fingerprints, reference_answers):
    named = {mistake_id for mistake_id in EDITS
             if any(mistake_id in r.tags
                    for r in self_check(wrong_answers(reference_answers, mistake_id)))}
    # The rest pass the public checks' small fixed inputs (W_o transposed needs a square
    # W_o), and only the grader names them.
    expected = set(EDITS) - set(ONLY_THE_GRADER_NAMES)
    assert set(ONLY_THE_GRADER_NAMES) < set(EDITS)  # no name mistyped
    assert named == expected, sorted(named ^ expected)
