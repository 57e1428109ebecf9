"""The grader's handle on a submission whose code runs in a confined child process.

The grading process never runs student code. It starts one child per submission
(``process.py``), hands it the code cells, and then calls the student's functions with
plain arrays. Everything the child sends is data: JSON, and the raw bytes of arrays of
plain numeric dtypes.
"""

import inspect
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..public.framework import CheckFailed, NotImplementedYet, StudentRaised, short
from ..public.notebook import PREAMBLE
from ..public.wording import say
from .child.runtime import call_material, decode, encode, pack, seal_id, xor_stream
from .limits import Limits
from .process import ChildGone, ChildProcess


@dataclass
class PlannedCall:
    """One request to the student's code: a function call, or reading a variable."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    readonly: bool = False
    stand_ins: bool = False
    variable: bool = False
    # (function, args, kwargs, value): the reference's own calls of the stand-ins, which
    # the child gets sealed (see child_runtime), sparing it a round trip for each.
    answers: list = field(default_factory=list, compare=False)


@dataclass
class Outcome:
    """What one planned call came to, as the child (or its crash) reported it."""

    status: str  # returned, missing, not_implemented, raised, crashed
    value: object = None
    error: str = ""
    inputs_changed: bool = False


def deliver(call, outcome):
    """The value of a call, or the exception a live call would have raised."""
    if call.variable:
        return outcome.value if outcome.status == "returned" else None
    if outcome.status == "missing":
        raise NotImplementedYet(say("not-defined", name=call.name))
    if outcome.status == "not_implemented":
        raise NotImplementedYet(say("not-implemented", name=call.name))
    if outcome.status == "raised":  # the student's text: sanitised and bounded (sanitize.py)
        from .sanitize import numbers_of, student_text
        raise StudentRaised(say("raised", name=call.name, error=student_text(
            outcome.error, numbers_of(call.args, call.kwargs))))
    if outcome.status == "crashed":
        raise CheckFailed(outcome.error)
    return outcome.value


class IsolatedStudent:
    """The grader's handle on a submission whose code lives in a child process.

    ``reference`` maps function names to the trusted reference functions; a call with
    ``stand_ins=True`` swaps every other contract function in the child for a stand-in
    that asks this process for the reference result, valid for that call only.

    ``run_calls`` sends many calls at once and the child answers them one after another,
    so a submission costs one round trip instead of one per call; ``call`` is a batch of one.
    """

    def __init__(self, cells, reference, limits=None):
        self.cells = cells
        self.reference = reference
        self.limits = limits or Limits()
        self.inputs_changed = False
        self.load_errors = {}
        self.crashes = []
        self.crashed = {}
        self.child = None
        self._layers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.child is not None:
            self.child.close()
            self.child = None

    @property
    def layers(self):
        return list(self._layers)

    def _deadline(self):
        return time.monotonic() + self.limits.call_seconds

    def _ensure_child(self):
        if self.child is not None:
            return
        if len(self.crashes) > self.limits.max_restarts:
            raise CheckFailed(say("crashed-too-often", last=self.crashes[-1]))
        self.child = ChildProcess(self.limits)
        self._layers = self.child.layers
        try:
            self.child.send({"op": "load", "preamble": PREAMBLE, "cells": self.cells})
            header, _ = self.child.receive(self._deadline())
        except ChildGone as gone:
            self._lost(say("gone-while-loading", gone=gone))
            raise CheckFailed(self.crashes[-1]) from None
        self.load_errors = {str(k): str(v) for k, v in (header.get("errors") or {}).items()}

    def _lost(self, reason):
        self.crashes.append(reason)
        self.close()

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        planned = PlannedCall(name, args, kwargs, readonly, stand_ins)
        outcome = self.run_calls([planned])[0]
        self.inputs_changed = outcome.inputs_changed
        return deliver(planned, outcome)

    def variable(self, name):
        planned = PlannedCall(name, variable=True)
        return deliver(planned, self.run_calls([planned])[0])

    def run_calls(self, calls, encoded=None):
        """An Outcome per call, in order. A crash costs the call that caused it; the
        calls after it go to a fresh child, except those of a function that crashed.
        ``encoded``, the same calls as EncodedCalls, spares encoding them again."""
        encoded = encoded or EncodedCalls(calls, self.reference)
        outcomes = [None] * len(calls)
        position = 0
        while position < len(calls):
            todo = []
            for index in range(position, len(calls)):
                call = calls[index]
                if not call.variable and (call.name, call.stand_ins) in self.crashed:
                    reason = self.crashed[call.name, call.stand_ins]
                    outcomes[index] = Outcome("crashed", error=say("not-run-again",
                                                                   name=call.name, gone=reason))
                else:
                    todo.append(index)
            if not todo:
                break
            try:
                self._ensure_child()
            except CheckFailed as failure:
                for index in todo:
                    outcomes[index] = Outcome("crashed", error=str(failure))
                break
            position = self._run_batch(calls, encoded, todo, outcomes)
        return outcomes

    def _run_batch(self, calls, encoded, todo, outcomes):
        """Send the calls at ``todo``; fill ``outcomes``. Returns where to go on from:
        past the end when all answered, just past the call that lost the child otherwise."""
        current = todo[0]
        try:
            self.child.send_bytes(encoded.message(todo))
            for index in todo:
                current = index
                header, returned = self._serve_until_done(encoded.allowed[index])
                outcomes[index] = _outcome(header, returned)
        except ChildGone as gone:
            call = calls[current]
            if call.variable:
                self._lost(say("gone", gone=gone))
            else:
                # Only this function is skipped from now on; the others get a fresh child.
                self.crashed[call.name, call.stand_ins] = str(gone)
                self._lost(f"{call.name}: " + say("gone", gone=gone))
            outcomes[current] = Outcome("crashed", error=self.crashes[-1])
            return current + 1
        return len(calls)

    def _serve_until_done(self, allowed):
        """Read the reply to the current call, answering its stand-ins' questions on the way."""
        while True:
            header, arrays = self.child.receive(self._deadline())
            if header.get("op") == "done":
                return header, arrays
            if header.get("op") != "reference":
                raise ChildGone(say("gone-protocol"))
            self._answer_reference(header, arrays, allowed)

    def _answer_reference(self, header, arrays, allowed):
        # Only the functions that are stand-ins in the call being answered right now.
        name = header.get("name")
        if name not in allowed:
            self.child.send({"ok": False, "error": "no reference result is available here"})
            return
        try:
            args = _decode_safely(header.get("args"), arrays)
            kwargs = {str(k): _decode_safely(v, arrays)
                      for k, v in (header.get("kwargs") or {}).items()}
            value = self.reference[name](*args, **kwargs)
        except Exception as error:  # bad arguments from the student's code
            self.child.send({"ok": False, "error": f"{name}: {short(str(error))}"})
            return
        out = []
        self.child.send({"ok": True, "value": encode(value, out)}, out)


class EncodedCalls:
    """Calls encoded once for the child: a request each, sharing one list of arrays.

    Every submission of a batch gets the same calls, so the grader builds this once per
    seed. It holds the sealed answers for the stand-ins (see child_runtime).
    """

    def __init__(self, calls, reference):
        self.params = {name: parameters_of(function) for name, function in reference.items()}
        self.arrays, self.requests, self.allowed = [], [], []
        for call in calls:
            others = [n for n in reference if n != call.name] if call.stand_ins else []
            self.allowed.append(others)
            self.requests.append(self._request(call, others))
        self._whole = None

    def _request(self, call, others):
        if call.variable:
            return {"op": "variable", "name": call.name}
        sealed = [self._seal(answer) for answer in call.answers if answer[0] in others]
        return {"op": "call", "name": call.name, "readonly": call.readonly, "stand_ins": others,
                "args": encode(list(call.args), self.arrays),
                "kwargs": {k: encode(v, self.arrays) for k, v in call.kwargs.items()},
                "sealed": [entry for entry in sealed if entry is not None]}

    def _seal(self, answer):
        name, args, kwargs, value = answer
        material = call_material(name, self.params[name], args, kwargs)
        if material is None:
            return None
        parts = []
        spec = encode(value, parts)
        plain = b"".join(np.ascontiguousarray(a).tobytes() for a in parts)
        self.arrays.append(np.frombuffer(xor_stream(material, plain), np.uint8))
        return {"id": seal_id(material), "value": spec, "i": len(self.arrays) - 1,
                "layout": [[a.dtype.str, list(a.shape)] for a in parts]}

    def message(self, todo):
        """The batch request for the calls at ``todo`` (all of them, usually: cached)."""
        if len(todo) == len(self.requests) and self._whole is not None:
            return self._whole
        header = {"op": "batch", "calls": [self.requests[i] for i in todo], "params": self.params}
        data = pack(header, self.arrays)
        if len(todo) == len(self.requests):
            self._whole = data
        return data


@lru_cache(maxsize=None)
def parameters_of(function):
    """[name, has a default, default] per parameter, as the child binds a call with them."""
    return [[p.name, p.default is not p.empty, None if p.default is p.empty else p.default]
            for p in inspect.signature(function).parameters.values()]


def _outcome(header, returned):
    status = header.get("status")
    if status not in ("returned", "missing", "not_implemented", "raised"):
        raise ChildGone(say("gone-protocol"))
    return Outcome(status, value=_decode_safely(header.get("value"), returned),
                   error=str(header.get("error")), inputs_changed=header.get("inputs_changed") is not False)


def _decode_safely(spec, arrays):
    """Decode a child's description; anything malformed becomes a harmless string."""
    try:
        if not isinstance(spec, dict):
            raise ValueError
        if spec.get("t") == "other":
            return f"<{short(str(spec.get('type')), 80)}>"
        value = decode(spec, arrays)
        if spec.get("t") == "py" and not isinstance(value, (type(None), bool, int, float, str)):
            raise ValueError
        return value
    except Exception:  # noqa: BLE001
        return "<a value the grader could not read>"
