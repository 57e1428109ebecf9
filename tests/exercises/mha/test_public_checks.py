"""The mha exercise's public checks (shipped/checks.py, its fingerprints.json and
known_answers.json): every catalogued mistake fails one of them and is named there, before
any grading. (That a green self-check means full marks: tests/test_agreement.py.)"""

import pytest

from mhakit.selfcheck.wording import say, speaking
from tests.mha_exercise import EXERCISE
from tests.grader.test_diagnosis import EDITS, self_check, wrong_answers
from tests.selfcheck.test_fingerprints import SHIPPED, shipped_fingerprints  # noqa: F401

COMPOSITES = {function.name for function in EXERCISE.functions if function.own_pieces}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("mistake_id", sorted(EDITS))
def test_the_self_check_names_every_catalogued_mistake_from_fingerprints_alone(
        shipped_fingerprints, reference_answers, mistake_id, language):
    results = self_check(wrong_answers(reference_answers, mistake_id), language)
    function = EDITS[mistake_id][0]
    # Caught with a wrong value; a function that raised has no output to recognise.
    with speaking(language):
        raised = say("raised", name=function, error="")
    caught = [r for r in results if r.status == "failed" and r.check.function == function
              and raised not in r.message]
    assert caught, [r.message for r in results if r.check.function == function]
    assert {tag for r in results if r.check.function == function for tag in r.tags} == {
        mistake_id}
    # In the self-check a composite runs the student's own pieces, so a wrong piece may
    # show there as the composite's mistake too (no W_o in output_projection is no W_o
    # in multi_head_attention); any other function is never given a name, only told that
    # the student's piece it runs first is wrong, naming that piece.
    elsewhere = [(tag, r.message) for r in results
                 if r.check.function not in (function, *COMPOSITES) for tag in r.tags]
    assert all(tag == "general/piece-wrong" and function in message
               for tag, message in elsewhere), elsewhere
    hint = SHIPPED["hints"][mistake_id][language]
    assert all(hint in r.message for r in results if mistake_id in r.tags)

