"""Grading a submission in one batch of calls: plan them, run them, replay.

The checks are plain Python that call ``student.call(...)`` one at a time. Asking the
child one call at a time cost a round trip each, about 170 per submission, plus one per
stand-in call. Instead:

1. **Plan**: each check runs once against ``PlanningStudent``, which records every call
   and answers with the reference's result, so the check goes on to its last call. It
   also records the reference's own calls of the other functions: the only questions
   the child's stand-ins may have answered, whole or in slices (see sandbox/stand_ins.py).
2. **Run**: the child gets every check's recorded calls in one batch, a single message,
   and answers them one after another. So it holds every check's inputs at once, which
   gains it nothing: a stand-in answers only the reference's own recorded calls, each
   sealed by its exact arguments, and the grader compares every answer with the
   reference on inputs that it chose itself. The one way such a batch could help is a
   sealed answer that is also another check's question; ``batch_groups`` starts a new
   batch there.
3. **Replay**: each check runs again, with the same random inputs, against
   ``ReplayingStudent``, which hands out the child's answers in order. When a check asks
   for a call that was not planned (its inputs came from a wrong answer of the student),
   that call goes to the child live, without stand-ins. So a check sees what it would
   have seen live. A check that passed on the reference's results when it was planned,
   and got those very results again (bit for bit), passes without a replay: it is plain
   Python, and would come to the same verdict.
"""

import types

import numpy as np

from ..selfcheck.framework import StudentRaised, showing, to_plain
from ..phases import COMPARING, phase
from ..selfcheck.wording import speaking
from ..sandbox import PlannedCall, deliver, seal_ids
from ..sandbox.sanitize import shown_against
from ..sandbox.stand_ins import bytes_of
from .memo import read_only


class PlanningStudent:
    """Records the calls a check makes; answers with the reference, as a correct student would."""

    inputs_changed = False

    def __init__(self, reference):
        self.reference = reference
        self.calls = []

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        planned = PlannedCall(name, args, dict(kwargs), readonly, stand_ins)
        self.calls.append(planned)
        function = self.reference[name]
        if stand_ins:  # note the reference's own calls: their answers travel sealed
            function = _tracing(function, self.reference, planned.answers)
        try:
            value = to_plain(function(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 - a check that feeds invalid input on purpose
            raise StudentRaised(f"{name} raised {type(error).__name__}") from None
        planned.reply_bytes = bytes_of(value)
        planned.expected = read_only(to_plain(value))  # every submission shares the plan
        return value

    def variable(self, name):
        self.calls.append(PlannedCall(name, variable=True))


def _tracing(function, reference, answers):
    """``function`` with its calls of the other contract functions noted in ``answers``,
    and theirs in turn (a function built from pieces that are themselves built from
    pieces): a student's function that does a piece's work itself still meets the
    stand-ins of that piece's own pieces.

    A copy with its own globals, so that the reference module itself never changes.
    """
    def noting(name):
        def wrapper(*args, **kwargs):
            value = _tracing(reference[name], reference, answers)(*args, **kwargs)
            answers.append((name, args, kwargs, value))
            return value
        return wrapper

    namespace = dict(function.__globals__)
    namespace.update({name: noting(name) for name in reference if name != function.__name__})
    return types.FunctionType(function.__code__, namespace, function.__name__,
                              function.__defaults__, function.__closure__)


class ReplayingStudent:
    """Hands out the planned calls' outcomes; anything unplanned goes to ``live``."""

    def __init__(self, calls, outcomes, live):
        self.planned = list(zip(calls, outcomes))
        self.next = 0
        self.live = live
        self.inputs_changed = False
        self.last_call = None  # for naming a mistake, as in the self-check
        self.read = {}  # variable name -> the Outcome of reading it
        self.served = None  # the planned call that answered the last call, if one did

    def _take(self, wanted):
        for index in range(self.next, len(self.planned)):
            call, outcome = self.planned[index]
            if same_call(call, wanted):
                self.next = index + 1
                self.served = call
                return outcome
        return None

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        wanted = PlannedCall(name, args, kwargs, readonly, stand_ins)
        self.last_call = self.served = None  # a call that raises leaves nothing to name
        outcome = self._take(wanted)
        if outcome is None:
            value = self.live.call(name, *args, readonly=readonly, stand_ins=stand_ins, **kwargs)
            self.inputs_changed = self.live.inputs_changed
        else:
            self.inputs_changed = outcome.inputs_changed
            value = deliver(wanted, outcome)
        self.last_call = (name, args, kwargs, value)
        return value

    def expected(self):
        """The reference's result on the last call, when a planned call answered it (its
        arguments equal to this one's, so its result the same); else None."""
        return None if self.served is None else self.served.expected

    def variable(self, name):
        wanted = PlannedCall(name, variable=True)
        outcome = self._take(wanted) or self.read.get(name)
        if outcome is None:
            return self.live.variable(name)
        # Reading a variable runs no student code, so a second read of it in the same
        # check (the quiz's form check reads each answer twice, planning saw the first
        # read only) is the first read's value, without another round trip.
        self.read[name] = outcome
        return deliver(wanted, outcome)


def same_call(a, b):
    return (a.name == b.name and a.variable == b.variable and a.readonly == b.readonly
            and a.stand_ins == b.stand_ins and a.kwargs.keys() == b.kwargs.keys()
            and len(a.args) == len(b.args)
            and all(_same_value(x, y) for x, y in zip(a.args, b.args))
            and all(_same_value(a.kwargs[k], b.kwargs[k]) for k in a.kwargs))


def _same_value(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                and x.shape == y.shape
                # equal bytes are equal arrays; else NaNs count as equal, -0.0 as 0.0
                and (x.tobytes() == y.tobytes() or np.array_equal(x, y, equal_nan=True)))
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return (type(x) is type(y) and len(x) == len(y)
                and all(_same_value(u, v) for u, v in zip(x, y)))
    return type(x) is type(y) and x == y


class CheckPlan(list):
    """A check's calls, in order: [PlannedCall]. ``passes``: the check passed, with
    nothing to say, on the reference's own results."""

    passes = False


def plan(checks, reference, rng_for):
    """Every check's calls, as a correct submission would get them: [CheckPlan]."""
    from ..selfcheck.runner import PASSED, run_check

    plans = []
    for chk in checks:
        planner = PlanningStudent(reference)
        result = run_check(chk, planner, rng_for(chk))
        plans.append(CheckPlan(planner.calls))
        plans[-1].passes = result.status == PASSED and not result.message
    return plans


def as_planned(calls, outcomes):
    """Whether the child answered every call with the very result the reference gave when
    the check was planned: the same types, dtypes, shapes and bits, no input changed. A
    check is plain Python, so it then comes to the verdict it came to on the reference,
    and replaying it would only repeat that."""
    return all(not call.variable and call.expected is not None and outcome.status == "returned"
               and not outcome.inputs_changed and _identical(outcome.value, call.expected)
               for call, outcome in zip(calls, outcomes))


def _identical(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(_identical(u, v) for u, v in zip(x, y))
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    if isinstance(x, float):
        return x.hex() == y.hex()  # -0.0 is not 0.0 here, and NaN is NaN
    return x == y


def batch_groups(plans, reference):
    """[[position in ``plans``]]: the checks whose calls go to the child together, in
    order. That is all of them, unless a recorded answer that travels sealed in a batch
    would answer a question that another check of the batch asks (an exercise whose
    edge cases are fixed arrays might do that): then that check starts a new batch, so
    that no child holds the answer to a question while it is asked."""
    groups, asked, sealed = [], set(), set()
    for position, mine in enumerate(plans):
        questions, seals = seal_ids(mine, reference)
        if not groups or questions & sealed or seals & asked:
            groups.append([])
            asked, sealed = set(), set()
        groups[-1].append(position)
        asked |= questions
        sealed |= seals
    return groups


def run_planned(checks, plans, student, rng_for, batches=None, language="zh",
                exercise=None):
    """Run ``checks`` against the isolated ``student``; Results in order.

    ``plans`` comes from ``plan``; ``batches`` (optional) is [(positions, EncodedBatch of
    their calls)] as ``batch_groups`` groups them, usually one for every check.
    ``rng_for(check)`` gives a fresh generator with the same seed on every call, so that
    planning and replaying draw the same inputs. Each batch is replayed before the next
    one is sent. A wrong value is named from the ``exercise``'s catalogue of mistakes.
    """
    from ..exercise import current
    from ..selfcheck.runner import PASSED, Result, run_check
    from .diagnosis import namer

    exercise = exercise or current()
    name_mistake = namer(exercise)
    batches = batches or [(group, None) for group in batch_groups(plans, exercise.reference)]
    results = []
    # The child's crashes are described in the language too, and a shape it returns to
    # a public check shows only public numbers (see sandbox/sanitize.py).
    with speaking(language), showing(shown_against):
        for positions, batch in batches:
            calls = [call for position in positions for call in plans[position]]
            outcomes = iter(student.run_calls(calls, batch) if calls else [])
            with phase(COMPARING):  # live calls inside count as round trips
                for position in positions:
                    chk, mine = checks[position], plans[position]
                    answers = [next(outcomes) for _ in mine]
                    if getattr(mine, "passes", False) and as_planned(mine, answers):
                        results.append(Result(chk, PASSED))
                        continue
                    replay = ReplayingStudent(mine, answers, student)
                    results.append(run_check(chk, replay, rng_for(chk), name_mistake))
    return results
