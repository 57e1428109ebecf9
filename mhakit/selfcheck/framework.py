"""The checks' small framework: a registry, failures, comparisons and the student handle.

This package ships to students (as ``mhakit_student``) and must run with numpy alone, so
it imports nothing but numpy and the standard library, and only relatively.

A check reaches the student's functions through a *student handle* whose ``call``
takes arrays and returns plain values (arrays, tuples, lists, numbers). The self-check
uses an in-process handle; the instructor's grader uses an isolated one that runs the
student's code in another process. The checks cannot tell the difference.
"""

import contextlib
import contextvars
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .wording import pick, say

PUBLIC, HIDDEN = "public", "hidden"


class CheckFailed(AssertionError):
    """A check found a mistake; the message is the student's feedback. ``tags`` name
    the mistake for scripts and the class report, as "<function>/<what went wrong>"."""

    def __init__(self, message="", tags=()):
        super().__init__(message)
        self.tags = tuple(tags)


class NotImplementedYet(Exception):
    """The function is missing or still raises NotImplementedError."""


class NotDefinedYet(NotImplementedYet):
    """Not written yet is not what the self-check found: the function (or a function of
    the exercise that it calls, ``missing``) is not defined where the check looks, the
    cell that defines it has not run. The grader's handles never raise it: what it says
    is advice for the notebook's kernel (and for selfcheck.py, on the saved file)."""

    def __init__(self, message="", missing=""):
        super().__init__(message)
        self.missing = missing


class StudentRaised(CheckFailed):
    """The student's function raised an exception other than NotImplementedError."""


@dataclass
class Check:
    function: str
    name: str
    points: float
    tier: str
    run: Callable = field(repr=False)
    name_zh: str = ""  # the Chinese of ``name``; ``name`` itself stays the stable id

    def title(self, chosen=None):
        """The check's name in the feedback's language."""
        return pick((f"{self.function}: {self.name_zh}" if self.name_zh else self.name,
                     self.name), chosen)


class Checks(list):
    """An exercise's checks, in the order they are added."""

    def add(self, function, name, points=0.0, tier=PUBLIC, zh=""):
        """Add ``run(student, rng)`` as a check of ``function`` (a decorator).

        The full name starts with the function (``"<function>: rows sum to 1"``); it is
        how results.json names the test, in both languages, and what seeds its hidden
        inputs. ``zh`` is the Chinese for the feedback.
        """
        def register(run):
            self.append(Check(function, f"{function}: {name}", float(points), tier, run, zh))
            return run
        return register

    def of(self, function=None, tier=None):
        return [c for c in self
                if (function is None or c.function == function) and (tier is None or c.tier == tier)]


# ---------------------------------------------------------------- student handles

def to_plain(value):
    """What a check may see of a returned value: copies of arrays, tuples, lists, numbers."""
    if isinstance(value, tuple):
        return tuple(to_plain(v) for v in value)
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.copy()
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    return f"<an object of type {type(value).__name__}>"


class InProcessStudent:
    """Calls functions that live in a namespace of this process (the self-check's view).

    ``parts``: the exercise's functions. A function missing from the namespace, or a call
    that stops at a NameError for one of ``parts`` (a composite whose piece is undefined),
    raises NotDefinedYet: the cell that defines it has not run. ``saved``: the namespace
    is the saved notebook's, run from top to bottom (selfcheck.py), where every cell did
    run, and the advice is another.
    """

    def __init__(self, namespace, parts=(), saved=False):
        self.namespace = namespace
        self.parts = frozenset(parts)
        self.saved = saved
        self.inputs_changed = False
        self.last_call = None

    def _not_defined(self, name, missing):
        """NotDefinedYet for ``name``, which is ``missing`` or calls it."""
        key = "in-saved" if self.saved else "run"
        if missing == name:
            return NotDefinedYet(say(f"not-{key}", name=name), missing)
        return NotDefinedYet(say(f"piece-not-{key}", name=name, missing=missing), missing)

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        if stand_ins:
            raise RuntimeError("reference stand-ins exist only on the instructor's side")
        self.last_call = None  # a call that raises leaves nothing to name
        func = self.namespace.get(name)
        if not callable(func):
            raise self._not_defined(name, name)
        before = (args, kwargs)
        args, kwargs = copy.deepcopy(before)
        if readonly:
            for a in list(args) + list(kwargs.values()):
                if isinstance(a, np.ndarray):
                    a.flags.writeable = False
        try:
            value = func(*args, **kwargs)
        except NotImplementedError:
            raise NotImplementedYet(say("not-implemented", name=name)) from None
        except NameError as error:
            missing = self._undefined_part(error)
            if missing is None:
                raise StudentRaised(say("raised", name=name, error=f"{type(error).__name__}: "
                                                                     f"{short(str(error))}")) from None
            raise self._not_defined(name, missing) from None
        except Exception as error:  # noqa: BLE001 - the student's mistake, as feedback
            raise StudentRaised(say("raised", name=name, error=f"{type(error).__name__}: "
                                                                 f"{short(str(error))}")) from None
        self.inputs_changed = not same_inputs(before, (args, kwargs))
        value = to_plain(value)
        self.last_call = (name, before[0], before[1], value)  # for naming a mistake
        return value

    def _undefined_part(self, error):
        """The exercise's function that ``error`` found undefined, or None: another
        name (a typo, a helper) and a local used before assignment are the code's."""
        missing = getattr(error, "name", None)
        if isinstance(error, UnboundLocalError) or missing not in self.parts:
            return None
        return None if callable(self.namespace.get(missing)) else missing

    def variable(self, name):
        """A variable's value, None when it is None or not a plain value; a name missing
        from the namespace raises NotDefinedYet (the cell that sets it has not run)."""
        if name not in self.namespace:
            raise self._not_defined(name, name)
        value = self.namespace.get(name)
        return value if isinstance(value, (str, int, float, type(None))) else to_plain(value)


def same_inputs(before, after):
    """True when every input array came back unchanged. ``after`` may come from the
    grading child, which is not trusted: anything malformed counts as changed."""
    (args_b, kw_b), (args_a, kw_a) = before, after
    if (not isinstance(args_a, (list, tuple)) or len(args_a) != len(args_b)
            or not isinstance(kw_a, dict)):
        return False
    pairs = list(zip(args_b, args_a)) + [(kw_b[k], kw_a.get(k)) for k in kw_b]
    return all(not isinstance(b, np.ndarray) or
               (isinstance(a, np.ndarray) and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=b.dtype.kind in "fc"))
               for b, a in pairs)


def kind_of(value):
    """What a value is, for feedback. Never the text of a returned string: a function
    could return its hidden inputs as text, and the feedback would show them."""
    if isinstance(value, str):
        return say("a-string")
    return type(value).__name__


def as_it_is(kind, value):
    """How a shape or a length that the student's code chose is shown: as it is. The
    self-check shows the student's own shapes; the grader passes its own ``show``, which
    hides the numbers a submission could have chosen to carry hidden inputs."""
    return str(value)


_showing = contextvars.ContextVar("mhakit_showing", default=None)


@contextlib.contextmanager
def showing(make):
    """Inside the block, a comparison given no ``show`` of its own uses ``make(expected)``:
    the grader's way to hide chosen numbers in checks that it shares with the self-check."""
    token = _showing.set(make)
    try:
        yield
    finally:
        _showing.reset(token)


def _show_for(show, expected=None):
    if show is not None:
        return show
    make = _showing.get()
    return as_it_is if make is None else make(expected)


def kind_with_length(value, show=None):
    show = _show_for(show)
    if isinstance(value, (tuple, list)):
        return say("of-length", kind=kind_of(value), count=show("count", len(value)))
    return kind_of(value)


def short(text, limit=200):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------- comparisons

# How close a result must come to the right one, by the dtype it should have (float32
# keeps about 7 digits). The hidden checks, the public float32 checks and the structural
# diagnoses all compare with these, so that a result passes or fails the same everywhere.
TOLERANCE = {np.dtype(np.float64): dict(rtol=1e-6, atol=1e-9),
             np.dtype(np.float32): dict(rtol=2e-4, atol=1e-5)}


def all_close(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``np.allclose``, the same answer for any input, in a fraction of its time where
    the numbers are finite: each comparison of a check or a diagnosis asks it, and
    numpy's own spends most of its time in checks of its arguments. Infinities and NaN
    go to numpy's own."""
    try:
        x, y = np.asarray(a), np.asarray(b)
        usual = (x.dtype.kind in "biuf" and y.dtype.kind in "biuf"
                 and 0 <= rtol < np.inf and 0 <= atol < np.inf)
    except (TypeError, ValueError):
        usual = False
    if usual:
        y = y.astype(np.result_type(y, 1.0), copy=False)  # as numpy: no integer overflow
        with np.errstate(all="ignore"):
            bound = atol + rtol * np.abs(y)
            within = (np.abs(x - y) <= bound).all()  # the method: np.all costs more than it
        if within and np.isfinite(bound).all():
            return True
        # Where every number is finite, numpy's test is this one: x == y is within too.
        if not within and np.isfinite(x).all() and np.isfinite(y).all():
            return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def tolerance_for(dtype):
    """The comparison's tolerance for results of ``dtype`` (float64's for any other)."""
    return TOLERANCE.get(np.dtype(dtype), TOLERANCE[np.dtype(np.float64)])


def expect_piece(got, expected, call, piece, name):
    """In a check of ``name``, the result of the student's own ``piece`` that it builds
    on: where that is wrong, the check cannot judge ``name``, and it says so instead of
    letting a mistake of ``name`` be named for what ``piece`` got wrong."""
    try:
        expect_array(got, expected, call)
    except CheckFailed:
        raise CheckFailed(say("piece-wrong", piece=piece, call=call, name=name),
                          tags=("general/piece-wrong",)) from None


def expect_array(got, expected, what, rtol=1e-6, atol=1e-8, check_dtype=False,
                 show=None):
    """Shape first, then dtype, then values, each with its own message.

    Messages describe the difference in summary only (shape, dtype, the largest
    error, the share of entries off): never an expected value, which would give the
    answer away on a hidden input. ``show(kind, value)`` writes what the returned value
    chose, its shape (kind "shape") or its length (kind "count"); see ``as_it_is`` and
    ``showing``.
    """
    expected = np.asarray(expected)
    show = _show_for(show, expected)
    if got is None:
        raise CheckFailed(say("returned-none", what=what))
    if isinstance(got, str):
        raise CheckFailed(say("not-an-array", what=what, kind=kind_of(got)))
    if isinstance(got, tuple):
        raise CheckFailed(say("tuple-not-array", what=what, count=show("count", len(got))))
    if isinstance(got, list):
        # A list with the right numbers is still the wrong type: the next step would
        # need `.shape` or broadcasting. The values are compared first, so a wrong list
        # gets the message about its numbers.
        as_array = np.asarray(got)
        if as_array.dtype.kind not in "biuf" or as_array.shape != expected.shape:
            got = as_array
        else:
            expect_array(as_array, expected, what, rtol, atol, check_dtype=False, show=show)
            raise CheckFailed(say("list-not-array", what=what), tags=("general/list-returned",))
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise CheckFailed(say("wrong-shape", what=what, got=show("shape", got.shape),
                              expected=expected.shape))
    if got.dtype.kind not in "biuf":
        raise CheckFailed(say("not-real", what=what, got=got.dtype))
    if check_dtype and got.dtype != expected.dtype:
        tag = (f"general/{expected.dtype}-became-{got.dtype}" if got.dtype.kind == "f"
               else "general/wrong-dtype")
        raise CheckFailed(say("wrong-dtype", what=what, got=got.dtype, expected=expected.dtype),
                          tags=(tag,))
    if not np.isfinite(got).all() and np.isfinite(expected).all():
        share = np.mean(~np.isfinite(got))
        raise CheckFailed(say("not-finite", what=what, share=f"{share:.0%}"))
    if (got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
            and not (got.dtype.kind == "f" and np.isnan(got).any())):
        return got  # the very numbers expected (a NaN is never close, even to itself)
    got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
    if all_close(got64, exp64, rtol=rtol, atol=atol):
        return got
    close = np.isclose(got64, exp64, rtol=rtol, atol=atol)
    if not np.all(close):
        error = np.abs(got64 - exp64) / np.maximum(np.abs(exp64), atol)
        raise CheckFailed(say("wrong-values", what=what, share=f"{np.mean(~close):.0%}",
                              error=f"{np.max(error):.2g}"))
    return got


def expect_pair(got, expected, names, show=None, **compare):
    """For functions that return two arrays, such as (output, weights)."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(say("not-a-pair", first=names[0], second=names[1],
                              kind=kind_with_length(got, show)))
    return tuple(expect_array(g, e, n, show=show, **compare)
                 for g, e, n in zip(got, expected, names))


def expect_inputs_unchanged(student, name):
    if student.inputs_changed:
        raise CheckFailed(say("input-modified", name=name),
                          tags=("general/input-modified-in-place",))
