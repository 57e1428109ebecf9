"""Every check, public and hidden, as a pytest test of one submission.

    MHAKIT_SUBMISSION=path/to/notebook.ipynb [MHAKIT_SEED=N] \
        pytest mhakit/integrations/pytest_checks.py

The submission's code runs in the same isolated child process as with ``mhakit grade``;
each test is one check, and its failure message is the check's feedback. The seed of
the hidden inputs is ``MHAKIT_SEED`` when it is set, else a fresh one. The checks are
those of the exercise that releases the notebook's folder (an assignment, as in
submitted/<student>/<assignment>/), else of the first that ``MHAKIT_EXERCISE`` names, as
``mhakit grade NOTEBOOK`` chooses.
"""

import numpy as np
import pytest

from mhakit.exercise import current, for_notebook
from mhakit.grader.diagnosis import namer
from mhakit.grader.grading import isolated_student, ordered_checks, seeded
from mhakit.selfcheck.notebook import graded_cells
from mhakit.selfcheck.notebook_file import one_line
from mhakit.selfcheck.runner import NOT_IMPLEMENTED, PASSED, run_check
from mhakit.settings import settings

EXERCISE = for_notebook(settings().submission) if settings().submission else current()
CHECKS = ordered_checks(EXERCISE)


def submission_cells():
    """The submission's graded cells, read while pytest collects this file: a missing or
    unreadable MHAKIT_SUBMISSION is one error that says why, not one per check."""
    path = settings().submission
    if not path:
        pytest.fail("set MHAKIT_SUBMISSION to the notebook to check", pytrace=False)
    try:
        return graded_cells(path, EXERCISE.kit_sources)
    except (OSError, ValueError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
    # Outside the except: pytest would print the reading error's chain above the reason.
    pytest.fail(f"MHAKIT_SUBMISSION={path} cannot be checked: {one_line(str(why))}",
                pytrace=False)


CELLS = submission_cells()


@pytest.fixture(scope="module")
def student():
    with isolated_student(CELLS, EXERCISE) as handle:
        yield handle


@pytest.fixture(scope="module")
def rng_for():
    seed = settings().seed
    return seeded(seed if seed is not None else np.random.SeedSequence().entropy % 2**63)


@pytest.mark.parametrize("chk", CHECKS, ids=[c.name for c in CHECKS])
def test_check(student, rng_for, chk):
    result = run_check(chk, student, rng_for(chk), namer(EXERCISE))
    if result.status == NOT_IMPLEMENTED:
        pytest.fail(f"not yet implemented: {result.message}")
    assert result.status == PASSED, result.message
