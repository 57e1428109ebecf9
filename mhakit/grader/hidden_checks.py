"""Hidden checks: the student's functions against the reference on fresh random inputs.

Every function of an exercise gets the same four checks, fed by the exercise's case
generators: values on random non-square inputs, edge cases, float32 in and out, and
inputs left unchanged (also when read-only). Only the first two can be passed by correct
numbers alone; the last two pay only when the numbers are right too, so a right dtype or
an untouched input earns nothing by itself.

Each call swaps the student's *other* contract functions for stand-ins that return the
reference result, so one broken piece costs that piece's points only. Functions built
from the others (``Function.own_pieces``) also get a 0-point check with the student's own
pieces, for feedback. The quiz's questions are checked against its key.
"""

from functools import partial

import numpy as np

from ..selfcheck.failed_call import RAISED
from ..selfcheck.fingerprints import with_mistake
from ..selfcheck.framework import (HIDDEN, Checks, CheckFailed, StudentRaised, expect_array,
                                   expect_inputs_unchanged, kind_with_length, tolerance_for)
from ..selfcheck.structure import diagnose as diagnose_structure, safely, structures_of
from ..selfcheck.wording import language, pick, say, shapes_of
from ..sandbox import deliver
from ..sandbox.sanitize import numbers_of, shown_against, student_text
from .diagnosis import examine, kept_from_results
from .memo import Memo, content_key
from .planning import PlanningStudent


def _as_float32(value):
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(np.float32)
    return value


def compare(student, exercise, name, args, kwargs, stand_ins=True, check_dtype=False,
            readonly=False):
    """Shape, dtype and values of one call against the reference; a wrong value is
    compared with the exercise's catalogue of common mistakes, which may name it, and
    else with the right value's structure (selfcheck/structure.py).

    What the returned value chose, its shape or its length, is shown only in the call's
    public numbers (sanitize.shape_text), and a failure to read it only sanitised: a
    submission could otherwise write its hidden inputs into its own feedback."""
    dtype = np.result_type(*[a for a in args if isinstance(a, np.ndarray)])
    tolerance = tolerance_for(dtype)
    options = dict(stand_ins=stand_ins, readonly=readonly)
    try:
        got = student.call(name, *args, **options, **kwargs)
    except StudentRaised as failure:
        expected = _expected(student, exercise, name, args, kwargs)
        raise _named(failure, _structural(student, exercise, name, args, kwargs, expected,
                                          tolerance, options, RAISED)) from None
    expected = _expected(student, exercise, name, args, kwargs)
    structural = partial(_structural, student, exercise, name, args, kwargs, expected,
                         tolerance, options)
    shapes = shapes_of([a for a in args if isinstance(a, np.ndarray)])
    show = shown_against(args, kwargs, expected)
    returns = exercise.function(name).returns
    try:
        try:
            _expect(got, expected, returns, shapes, dict(tolerance, check_dtype=check_dtype),
                    show)
        except CheckFailed as failure:
            if failure.tags:
                raise
            mistake, ruled_out = examine(exercise, name, args, kwargs, got, tolerance)
            named = _named(failure, structural(got) if mistake is None else mistake)
            named.ruled_out = ruled_out  # see runner.consistent
            raise named from None
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - numpy's words about a value the child chose
        raise CheckFailed(say("unchecked", error=student_text(
            f"{type(error).__name__}: {error}", numbers_of(args, kwargs, expected)))) from None


def _expected(student, exercise, name, args, kwargs):
    """The reference's result on the call just made: the planned one's when the replay
    answered it from the plan, else the reference run now on the grader's ``args``."""
    planned = student.expected() if hasattr(student, "expected") else None
    return planned if planned is not None else exercise.reference[name](*args, **kwargs)


def _named(failure, mistake):
    """``failure`` with the mistake (catalogued or structural) it was recognised as."""
    if mistake is None:
        return failure
    named = CheckFailed(with_mistake(failure, mistake.text(language()), language()),
                        tags=(mistake.id,))
    named.unnamed = str(failure)
    return named


def _structural(student, exercise, name, args, kwargs, expected, tolerance, options, got):
    """The structural diagnosis of a wrong (or raising) call on the grader's inputs."""
    return safely(diagnose_structure, structures_of(exercise.shipped).get(name), args,
                  kwargs, got, expected, tolerance, _call_again(student, exercise, name,
                                                                options),
                  kept_from_results(exercise, name))


def _call_again(student, exercise, name, options):
    """The student's function on a batch item that the grader cut from its own inputs,
    with the right result there: the reference on that item, as a check's planned call
    (its stand-ins answered from the reference's own calls on the item)."""
    live = getattr(student, "live", student)

    def call(args, kwargs):
        planned = _PLANNED_AGAIN.get(
            content_key(exercise.name, name, args, kwargs, sorted(options.items())),
            lambda: _planned(exercise, name, args, kwargs, options))
        if not hasattr(live, "run_calls"):
            return live.call(name, *args, **options, **kwargs), planned.expected
        return deliver(planned, live.run_calls([planned])[0]), planned.expected
    return call


_PLANNED_AGAIN = Memo()  # the same items are cut for every student who fails there


def _planned(exercise, name, args, kwargs, options):
    planner = PlanningStudent(exercise.reference)
    planner.call(name, *args, **options, **kwargs)
    return planner.calls[-1]


def _expect(got, expected, returns, shapes, tol, show):
    if len(returns) > 1:
        if not isinstance(got, (tuple, list)) or len(got) != len(returns):
            raise CheckFailed(say("expected-pair-for-inputs", shapes=shapes, first=returns[0],
                                  second=returns[1], kind=kind_with_length(got, show)))
        for g, e, part in zip(got, expected, returns):
            expect_array(g, e, say("for-inputs", part=part, shapes=shapes), show=show, **tol)
    else:
        expect_array(got, expected, say("for-inputs", part=say("the-result"), shapes=shapes),
                     show=show, **tol)


def _register(checks, exercise, function, cases):
    name = function.name
    values, edge, float32, inputs = function.points

    @checks.add(name, "matches the reference on random inputs", values, HIDDEN,
                zh="随机输入上与参考答案一致")
    def _values(student, rng):
        for args, kwargs in cases(rng, edge=False):
            compare(student, exercise, name, args, kwargs)

    @checks.add(name, "edge cases", edge, HIDDEN, zh="边界情况")
    def _edge(student, rng):
        for args, kwargs in cases(rng, edge=True):
            compare(student, exercise, name, args, kwargs)

    @checks.add(name, "float32 in, float32 out", float32, HIDDEN,
                zh="输入 float32，输出也是 float32")
    def _float32(student, rng):
        for args, kwargs in cases(rng, edge=False):
            compare(student, exercise, name, tuple(_as_float32(a) for a in args), kwargs,
                    check_dtype=True)

    @checks.add(name, "leaves its inputs unchanged, also when they are read-only", inputs,
                HIDDEN, zh="不修改输入，输入只读时也能算")
    def _inputs(student, rng):
        # Every random case, so that this check too pays only for correct values; one
        # read-only call is enough, as any write into a read-only input raises.
        for number, (args, kwargs) in enumerate(cases(rng, edge=False)):
            compare(student, exercise, name, args, kwargs)
            expect_inputs_unchanged(student, name)
            if number == 0:
                compare(student, exercise, name, args, kwargs, readonly=True)

    if function.own_pieces:
        @checks.add(name, "also right with your own pieces (no points: feedback only)", 0,
                    HIDDEN, zh="换成你自己写的各个函数也对（不计分，只作反馈）")
        def _own_pieces(student, rng):
            for args, kwargs in cases(rng, edge=False):
                compare(student, exercise, name, args, kwargs, stand_ins=False)


# ----------------------------------------------------------- the quiz

def right_answer(answer, key, tolerance):
    """Whether ``answer`` is the key: a letter, a number within ``tolerance``, or a tuple
    of numbers within 0.5 each."""
    if isinstance(key, str):
        return isinstance(answer, str) and answer.strip().upper() == key
    if isinstance(key, tuple):
        return (isinstance(answer, (tuple, list)) and len(answer) == len(key)
                and all(_right_number(a, k, 0.5) for a, k in zip(answer, key)))
    return _right_number(answer, key, tolerance)


def _right_number(answer, key, tolerance):
    return (isinstance(answer, (int, float, np.integer, np.floating))
            and not isinstance(answer, bool) and abs(float(answer) - key) <= tolerance)


def _register_question(checks, quiz, number, variable):
    tolerance = getattr(quiz, "NUMBER_TOLERANCE", 0.01)

    @checks.add("quiz", f"question {number}", quiz.POINTS[variable], HIDDEN,
                zh=f"第 {number} 题")
    def _question(student, _rng):
        explanation = pick(quiz.EXPLANATIONS[variable])
        if not right_answer(student.variable(variable), quiz.KEY[variable], tolerance):
            raise CheckFailed(say("quiz-wrong", explanation=explanation))
        return explanation


def hidden_checks(exercise):
    """The exercise's hidden checks, four per function (and one more for feedback where
    a function is built from the others), then the quiz's questions."""
    checks = Checks()
    cases = exercise.content("cases").CASES
    for function in exercise.functions:
        _register(checks, exercise, function, cases[function.name])
    if exercise.quiz is not None:
        for number, variable in enumerate(exercise.quiz.KEY, start=1):
            _register_question(checks, exercise.quiz, number, variable)
    total = sum(check.points for check in checks)
    if total != exercise.total:
        raise ValueError(f"the hidden checks of {exercise.name} are worth {total:g} points; "
                         f"its contract says {exercise.total:g}")
    return checks
