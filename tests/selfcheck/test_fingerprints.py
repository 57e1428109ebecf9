"""mhakit/selfcheck/fingerprints.py: the self-check names a mistake from the shipped
fingerprints alone, as the grader names it from the wrong variants themselves."""

import json

import pytest

from mhakit.authoring.build import fingerprints_text
from tests.conftest import grade_answers
from tests.grader.test_diagnosis import EDITS, self_check, wrong_answers
from tests.mha_exercise import EXERCISE


SHIPPED = json.loads(EXERCISE.fingerprints_file.read_text(encoding="utf-8"))


@pytest.fixture
def shipped_fingerprints():
    """The exercise's committed fingerprints.json, which the release ships (and which
    tests/authoring/test_build.py holds to a fresh build)."""
    assert SHIPPED == json.loads(fingerprints_text(EXERCISE))


@pytest.mark.parametrize("mistake_id", sorted(EDITS))
def test_the_graders_public_checks_name_what_the_self_check_names(
        shipped_fingerprints, reference_answers, mistake_id):
    """One diagnosis on both sides: fingerprints in the student's copy, the variants
    they were made from in the grader, the same public check naming the same mistake."""
    answers = wrong_answers(reference_answers, mistake_id)
    in_self_check = {r.check.name: r.tags for r in self_check(answers, "en") if r.tags}
    graded = grade_answers(answers, seed=17, language="en")
    in_grader = {t.name: t.tags for t in graded.tests
                 if t.visibility == "visible" and t.tags}
    assert in_grader == in_self_check


def test_the_self_check_names_nothing_in_a_correct_submission(shipped_fingerprints,
                                                              reference_answers):
    results = self_check(reference_answers)
    assert all(r.status == "passed" and not r.tags for r in results)
