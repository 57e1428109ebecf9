"""Every check, public and hidden, as a pytest test of one submission.

    MHAKIT_SUBMISSION=path/to/mha.ipynb pytest autograder/pytest_checks.py [--mhakit-seed N]

The submission's code runs in the same isolated child process as with ``mhakit grade``;
each test is one check, and its failure message is the check's feedback.
"""

import os

import numpy as np
import pytest

from autograder.grader.grading import ordered_checks, reference_functions
from autograder.selfcheck.notebook import graded_cells
from autograder.selfcheck.runner import NOT_IMPLEMENTED, PASSED, run_check
from autograder.sandbox import IsolatedStudent

CHECKS = ordered_checks()


@pytest.fixture(scope="module")
def student():
    path = os.environ.get("MHAKIT_SUBMISSION")
    if not path:
        pytest.fail("set MHAKIT_SUBMISSION to the notebook to check")
    with IsolatedStudent(graded_cells(path), reference_functions()) as handle:
        yield handle


@pytest.fixture(scope="module")
def seed():
    return int(os.environ.get("MHAKIT_SEED", np.random.SeedSequence().entropy % 2**63))


@pytest.mark.parametrize("index,chk", CHECKS, ids=[c.name for _, c in CHECKS])
def test_check(student, seed, index, chk):
    result = run_check(chk, student, np.random.default_rng([seed, index]))
    if result.status == NOT_IMPLEMENTED:
        pytest.fail(f"not yet implemented: {result.message}")
    assert result.status == PASSED, result.message
