"""The sandbox: where student code runs, and the grader's only way to reach it.

The grader imports this face and nothing else of the package. Inside it:

- ``student.py``: the grader's handle on a submission (calls, deadlines, verdicts);
- ``stand_ins.py``: which calls of the other functions the grader answers, and with what;
- ``shared_inputs.py``: the inputs in memory files that the grader reads back itself;
- ``process.py``: one confined child process, its pipes and deadlines;
- ``confinement.py``: which mode confines children here, chosen once by ``probe.py``;
- ``plan.py``: one child's plan, gathered from its layers (``child/layers/``, one file
  each), and the layers in plain words; ``uids.py``: the pool of uids children run as;
  ``student_site.py``: what a child reads; ``scratch.py``: its scratch folder;
- ``hidden.py``: what no child may read, as it is told (an exercise tells it when it
  loads) and as it finds it itself (the kit, the grader's folder);
- ``limits.py``: how much a submission may use;
- ``child/``: the only code that runs next to student code. It imports nothing of the
  grader's and trusts nothing it is sent beyond its own confinement plan.
"""

from .confinement import Unconfined, confined, jail_works
from .limits import Limits
from .student import EncodedBatch, IsolatedStudent, Outcome, PlannedCall, deliver, seal_ids

__all__ = ["EncodedBatch", "IsolatedStudent", "Limits", "Outcome", "PlannedCall", "deliver",
           "jail_works", "confined", "Unconfined", "seal_ids"]
