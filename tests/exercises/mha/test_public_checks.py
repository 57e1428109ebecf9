"""The mha exercise's public checks (shipped/checks.py and its fingerprints.json): which of
the catalogued mistakes the student's self-check catches, and names, before any grading."""

import pytest

from autograder.selfcheck.wording import say, speaking
from tests.grader.test_diagnosis import EDITS, self_check, wrong_answers
from tests.selfcheck.test_fingerprints import SHIPPED, shipped_fingerprints  # noqa: F401


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
    if caught:  # a public check sees the mistake: it is named there
        assert named == {mistake_id}, [r.message for r in caught]
        hint = SHIPPED["hints"][mistake_id][language]
        assert all(hint in r.message for r in results if mistake_id in r.tags)


def test_the_self_check_names_most_mistakes(shipped_fingerprints, reference_answers):
    named = {mistake_id for mistake_id in EDITS
             if any(mistake_id in r.tags
                    for r in self_check(wrong_answers(reference_answers, mistake_id)))}
    # The rest pass the public checks' small fixed inputs (W_o transposed needs a square
    # W_o), and only the grader names them.
    assert len(named) >= 15, sorted(set(EDITS) - named)
