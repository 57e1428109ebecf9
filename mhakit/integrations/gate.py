"""The checks every grading door makes once, before it touches any submission.

The doors are ``nbgrader autograde`` on the command line, formgrader's Autograde button
(both through ``BoundedNotebookReader``, which nbgrader builds before its first
submission) and ``mhakit grade``. A refusal here has changed nothing yet: no autograded
folder is removed and no grade is written, so the grades of an earlier run stay as they
were. Each check gives one line that names the cause and the fix.
"""

import logging
from pathlib import Path

log = logging.getLogger(__name__)

BUILD_FIRST = "run `mhakit build` in the course folder first (it registers the assignments)"


def refusal_before_grading(*, allow_unconfined=False, allow_shared=False, course=None,
                           db_url=None, assignment=None, warn=log.warning):
    """Why no submission may be graded, in one line, or None when grading may start.

    ``course``: the course folder the run writes into, whose privacy is checked with the
    kit's answers (None: the answers alone). ``db_url`` and ``assignment``: the gradebook
    that the grades go to and the assignment it must hold (nbgrader's doors). An exposure
    that does not refuse (nobody else has an account here, or ``allow_shared``) is said
    through ``warn``."""
    return (missing_from_gradebook(db_url, assignment) or confinement_refusal(allow_unconfined)
            or privacy_refusal(course, allow_shared, warn))


def confinement_refusal(allow_unconfined=False):
    """Why nothing here can hide the course from student code, or None. The course's
    exercises load first, so that the probe child tries to read their references too."""
    from ..exercise import course_exercises
    from ..sandbox.confinement import refusal

    course_exercises()
    return refusal(allow_unconfined)


def privacy_refusal(course, allow_shared, warn):
    """The privacy check's line when it refuses; its warning said through ``warn``."""
    from .privacy import course_exposure

    exposure = course_exposure(course, allow_shared=allow_shared)
    if exposure is None:
        return None
    if exposure.refuses:
        return (f"{exposure.line}; refusing to grade (`--allow-shared`, or nbgrader's "
                "c.BoundedNotebookReader.allow_shared = True, grades anyway)")
    warn("mha-kit: WARNING: %s", exposure.line)
    return None


def missing_from_gradebook(db_url, assignment):
    """Why nbgrader would fail every student of ``assignment`` in the gradebook at
    ``db_url`` (a fresh clone has the release but no gradebook.db), or None."""
    if db_url is None or not assignment:
        return None
    from nbgrader.api import Gradebook, MissingEntry

    sqlite_file = db_url.removeprefix("sqlite:///") if db_url.startswith("sqlite:///") else None
    if sqlite_file and not Path(sqlite_file).is_file():  # opening it would make an empty one
        return f"there is no gradebook ({sqlite_file}): {BUILD_FIRST}"
    with Gradebook(db_url) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            return f"the gradebook has no assignment {assignment}: {BUILD_FIRST}"
    return None
