"""The grader's handle on a submission whose code runs in a confined child process.

The grading process never runs student code. It starts one child per submission
(``process.py``), hands it the code cells, and then calls the student's functions with
plain arrays. Everything the child sends is data: JSON, and the raw bytes of arrays of
plain numeric dtypes.
"""

import hashlib
import inspect
import os
import struct
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..phases import CHILD_START, ROUND_TRIPS, TEARDOWN, phase
from ..selfcheck.framework import CheckFailed, NotImplementedYet, StudentRaised, short
from ..selfcheck.notebook import INERT_IPYTHON, PREAMBLE
from ..selfcheck.wording import say
from .child.runtime import call_material, decode, encode, pack, seal_id, xor_stream
from .limits import Limits
from .process import ENDINGS, MAX_REPLY, ChildGone, take_child
from .sanitize import numbers_of, student_text
from .shared_inputs import InputLayout, memory_file
from .stand_ins import recorded_answer, request_bytes


@dataclass
class PlannedCall:
    """One request to the student's code: a function call, or reading a variable."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    readonly: bool = False
    stand_ins: bool = False
    variable: bool = False
    # (function, args, kwargs, value): the reference's own calls of other contract
    # functions on this call's inputs, recorded when the check was planned. They, and
    # their slices, are the only answers a stand-in gives (see stand_ins.py).
    answers: list = field(default_factory=list, compare=False)
    reply_bytes: int = field(default=0, compare=False)  # the size of the reference's result
    # The reference's result itself, read-only: a check that makes this very call again
    # compares with it instead of running the reference once more.
    expected: object = field(default=None, compare=False, repr=False)


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
        raise StudentRaised(say("raised", name=call.name, error=student_text(
            outcome.error, numbers_of(call.args, call.kwargs))))
    if outcome.status == "crashed":
        raise CheckFailed(outcome.error)
    return outcome.value


class IsolatedStudent:
    """The grader's handle on a submission whose code lives in a child process.

    ``reference`` maps function names to the trusted reference functions. In a call with
    ``stand_ins=True``, each function that the reference itself calls becomes a stand-in
    in the child, which the grader answers from the reference's own calls on this
    call's inputs only (see stand_ins.py). ``functions``, the exercise's Function
    entries, say which other calls mean one of those (an axis from the end, a slice).
    ``warm`` names modules the cells import that the child should find imported.

    ``run_calls`` sends one batch of calls at once and the child answers them one after
    another; ``call`` is a batch of one. A call has ``limits.call_seconds`` of wall clock
    for all its messages, and the submission ``limits.submission_seconds`` in all.
    """

    def __init__(self, cells, reference, limits=None, functions=(), warm=()):
        self.cells = cells
        self.reference = reference
        self.params = {name: parameters_of(function) for name, function in reference.items()}
        self.functions = {function.name: function for function in functions}
        self.warm = tuple(warm)  # modules the cells import that the child should have ready
        self.limits = limits or Limits()
        self.inputs_changed = False
        self.load_errors = {}
        self.crashes = []
        self.crashed = {}
        self.child = None
        self._layers, self._mode = [], None
        self._ends = None  # when the submission's wall clock runs out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.child is not None:
            with phase(TEARDOWN):
                ENDINGS.end(self.child)
            self.child = None

    @property
    def layers(self):
        return list(self._layers)

    @property
    def confinement(self):
        """The mode that confined the child (see confinement.py); None if none started."""
        return self._mode

    def _deadline(self, seconds=None):
        """(deadline, message if it is missed) for the next call, or ``seconds`` for the
        next cell of the load."""
        seconds = seconds or self.limits.call_seconds
        call_ends = time.monotonic() + seconds
        if self._ends is not None and self._ends < call_ends:
            submission = f"{self.limits.submission_seconds:g}"
            return self._ends, say("gone-submission-too-slow", seconds=submission)
        return call_ends, say("gone-too-slow", seconds=f"{seconds:g}")

    def _out_of_time(self):
        return self._ends is not None and time.monotonic() >= self._ends

    def _ensure_child(self):
        if self.child is not None:
            return
        with phase(CHILD_START):
            self._start_child()

    def _start_child(self):
        if self._ends is None:
            self._ends = time.monotonic() + self.limits.submission_seconds
        if self._out_of_time():
            seconds = f"{self.limits.submission_seconds:g}"
            raise CheckFailed(say("gone", gone=say("gone-submission-too-slow", seconds=seconds)))
        if len(self.crashes) > self.limits.max_restarts:
            raise CheckFailed(say("crashed-too-often", last=self.crashes[-1]))
        self.child = take_child(self.limits, self.warm)
        self._layers, self._mode = self.child.layers, self.child.mode
        deadline, too_slow = self._deadline(self.limits.cell_seconds)
        try:
            self.child.send({"op": "load", "preamble": PREAMBLE, "kernel": INERT_IPYTHON,
                             "cells": self.cells}, deadline=deadline)
            # One message after each cell but the last: a cell's own time starts there.
            # More than that is no load of these cells, and the submission's limit holds.
            for _ in range(len(self.cells)):
                header, _ = self.child.receive(deadline, limit=0, too_slow=too_slow)
                if header.get("op") != "cell":
                    break
                deadline, too_slow = self._deadline(self.limits.cell_seconds)
            else:
                header, _ = self.child.receive(deadline, limit=0, too_slow=too_slow)
            if header.get("op") != "loaded":
                raise ChildGone(say("gone-protocol"))
        except ChildGone as gone:
            self._lost(say("gone-while-loading", gone=gone))
            raise CheckFailed(self.crashes[-1]) from None
        # The child's text: kept only for the cells the grader sent, sanitised.
        errors = header.get("errors") if isinstance(header.get("errors"), dict) else {}
        self.load_errors = {cell_id: student_text(str(errors[cell_id]))
                            for cell_id, _ in self.cells if cell_id in errors}

    def _lost(self, reason):
        self.crashes.append(reason)
        self.close()

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        # A call that no check planned gets no stand-ins: there is no recorded answer for
        # it, and the grader computes none on inputs it did not choose.
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
        ``encoded``, the same calls as an EncodedBatch, spares encoding them again."""
        encoded = encoded or EncodedBatch(calls, self.reference)
        outcomes = [None] * len(calls)
        lost_at = {}  # (function, stand-ins) -> the call of this batch that lost a child
        position = 0
        while position < len(calls):
            todo = []
            for index in range(position, len(calls)):
                call = calls[index]
                key = (call.name, call.stand_ins)
                if outcomes[index] is not None:  # the call that lost the last child
                    continue
                # A function's calls after its crash are not run again; those before it,
                # whose answers the child held back when it was lost, are asked again.
                if not call.variable and key in self.crashed and index > lost_at.get(key, -1):
                    reason = self.crashed[key]
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
            position = self._run_batch(calls, encoded, todo, outcomes, lost_at)
        return outcomes

    def _run_batch(self, calls, encoded, todo, outcomes, lost_at):
        """Send the calls at ``todo``; fill ``outcomes``. Returns where to go on from:
        past the end when all answered, else the first call whose answer was lost with
        the child (the call that lost it is answered as crashed, in ``lost_at``)."""
        with phase(ROUND_TRIPS):
            return self._send_batch(calls, encoded, todo, outcomes, lost_at)

    def _send_batch(self, calls, encoded, todo, outcomes, lost_at):
        waiting = 0  # the place in ``todo`` of the call whose answer is awaited
        inputs = encoded.inputs.open()
        progress = BatchProgress()
        try:
            deadline, _ = self._deadline()
            self.child.send_bytes(self._batch_message(encoded, todo), deadline,
                                  inputs.fds + [progress.fd])
            for waiting, index in enumerate(todo):
                header, returned = self._serve_until_done(calls[index])
                outcomes[index] = _outcome(header, returned)
                outcomes[index].inputs_changed = inputs.changed(index)
        except ChildGone as gone:
            # The child holds answers back (see child/runtime.py): the call that hung or
            # died may be a later one than the one awaited. Its claim is believed only
            # then, within the calls not answered yet, and it can blame only this
            # submission's own calls. An answer that came and was refused is the
            # awaited call's.
            claimed = progress.claimed() if gone.silent else -1
            culprit = todo[claimed] if waiting <= claimed < len(todo) else todo[waiting]
            call = calls[culprit]
            if call.variable:
                self._lost(say("gone", gone=gone))
            else:
                # Only this function is skipped from now on; the others get a fresh child.
                self.crashed[call.name, call.stand_ins] = str(gone)
                lost_at[call.name, call.stand_ins] = culprit
                self._lost(f"{call.name}: " + say("gone", gone=gone))
            outcomes[culprit] = Outcome("crashed", error=self.crashes[-1])
            return todo[waiting] if culprit != todo[waiting] else culprit + 1
        finally:
            inputs.close()
            progress.close()
        return len(calls)

    def _batch_message(self, encoded, todo):
        """The batch request: only its key when the child's zygote decoded it before the
        fork; else the whole of it, and the zygote decodes it for the children to come."""
        if not encoded.shared:  # a call of its own (a diagnosis): sent as it is
            return encoded.message(todo)
        if encoded.key in self.child.preloaded:
            whole = len(todo) == len(encoded.requests)
            return pack({"op": "batch", "preloaded": encoded.key,
                         "todo": None if whole else list(todo)})
        encoded.times_sent += 1
        if encoded.times_sent > 1:  # not a plan of one notebook's own (nbgrader's seeds)
            self.child.preload_for_later(encoded.key, encoded.whole_message())
        return encoded.message(todo)

    def _serve_until_done(self, call):
        """Read the reply to ``call``, answering its stand-ins on the way. Every message
        counts against the call's one deadline."""
        deadline, too_slow = self._deadline()
        reply_limit = min(MAX_REPLY, max(1 << 20, 64 * call.reply_bytes))
        request_limits = {name: request_bytes(call.answers, name) for name in stand_in_names(call)}

        def limit(header):
            if header.get("op") == "reference":
                return request_limits.get(header.get("name"), 0)
            return reply_limit

        for _ in range(MAX_STAND_IN_REQUESTS + 1):
            header, arrays = self.child.receive(deadline, limit=limit, too_slow=too_slow)
            if header.get("op") == "done":
                return header, arrays
            if header.get("op") != "reference":
                raise ChildGone(say("gone-protocol"))
            self._answer_stand_in(call, header, arrays, deadline)
        raise ChildGone(say("gone-protocol") + f" (> {MAX_STAND_IN_REQUESTS} stand-in calls)")

    def _answer_stand_in(self, call, header, arrays, deadline):
        name = header.get("name")
        found, value = False, None
        if name in self.params:
            args = _decode_safely(header.get("args"), arrays)
            kwargs = header.get("kwargs")
            kwargs = ({str(k): _decode_safely(v, arrays) for k, v in kwargs.items()}
                      if isinstance(kwargs, dict) else None)
            found, value = recorded_answer(name, args, kwargs, call.answers, self.params[name],
                                           self.functions.get(name))
        if not found:
            self.child.send({"ok": False}, deadline=deadline)
            return
        out = []
        self.child.send({"ok": True, "value": encode(value, out)}, out, deadline=deadline)


MAX_STAND_IN_REQUESTS = 256  # per call: room for loops over heads and batch items


def stand_in_names(call):
    """The functions that the reference itself calls in ``call``: the child's stand-ins."""
    if not call.stand_ins or call.variable:
        return []
    return list(dict.fromkeys(answer[0] for answer in call.answers))


def seal_ids(calls, reference):
    """(the ids of the questions ``calls`` ask, the ids of the answers they carry sealed):
    the same ids as the child would look them up by (see child/runtime.py)."""
    params = {name: parameters_of(function) for name, function in reference.items()}
    questions, seals = set(), set()
    for call in calls:
        if call.variable:
            continue
        asked = [(call.name, call.args, call.kwargs)]
        names = stand_in_names(call)
        for target, entries in ((questions, asked),
                                (seals, [a[:3] for a in call.answers if a[0] in names])):
            for name, args, kwargs in entries:
                material = call_material(name, params.get(name, []), args, kwargs)
                if material is not None:
                    target.add(seal_id(material))
    return questions, seals


class BatchProgress:
    """The memory file where the child writes which call of a batch it is running: a
    claim, read only when an answer never came (see child/runtime.py)."""

    def __init__(self):
        self.fd = memory_file(struct.pack("<q", -1), sealed=False)

    def claimed(self):
        try:
            return struct.unpack("<q", os.pread(self.fd, 8, 0))[0]
        except (OSError, struct.error):
            return -1

    def close(self):
        os.close(self.fd)


class EncodedBatch:
    """One batch of calls (see planning.batch_groups), encoded once for the child: a
    request each, their inputs laid out for the memory files (see shared_inputs.py),
    and the recorded answers of their stand-ins, sealed by their exact arguments (see
    child/runtime.py).

    Every submission of a class gets the same calls, so the grader builds this once
    per batch and seed; only the memory files are made afresh for each child.
    """

    def __init__(self, calls, reference=None, shared=False):
        self.shared = shared  # sent to every submission's child: worth preloading
        self.times_sent = 0  # whole, to a child that did not hold it
        self.params = {name: parameters_of(f) for name, f in (reference or {}).items()}
        self.arrays = []  # the sealed answers' bytes
        self.inputs = InputLayout(calls)
        self.requests = [self._request(call, specs)
                         for call, specs in zip(calls, self.inputs.specs)]
        self._whole = None
        self._key = None

    @property
    def key(self):
        """Names this batch's whole message (a digest of its bytes)."""
        if self._key is None:
            self._key = hashlib.sha256(self.whole_message()).hexdigest()[:32]
        return self._key

    def whole_message(self):
        return self.message(range(len(self.requests)))

    def _request(self, call, specs):
        if call.variable:
            return {"op": "variable", "name": call.name}
        args, kwargs = specs
        names = stand_in_names(call)
        sealed = [self._seal(answer) for answer in call.answers if answer[0] in names]
        return {"op": "call", "name": call.name, "stand_ins": names, "args": args,
                "kwargs": kwargs, "sealed": [entry for entry in sealed if entry is not None]}

    def _seal(self, answer):
        name, args, kwargs, value = answer
        material = call_material(name, self.params.get(name, []), args, kwargs)
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
        header = {"op": "batch", "calls": [self.requests[i] for i in todo],
                  "files": self.inputs.writable, "params": self.params}
        data = pack(header, self.arrays)
        if len(todo) == len(self.requests):
            self._whole = data
        return data


@lru_cache(maxsize=None)
def parameters_of(function):
    """[name, has a default, default] per parameter, to bind a stand-in's arguments."""
    return [[p.name, p.default is not p.empty, None if p.default is p.empty else p.default]
            for p in inspect.signature(function).parameters.values()]


def _outcome(header, returned):
    status = header.get("status")
    if status not in ("returned", "missing", "not_implemented", "raised"):
        raise ChildGone(say("gone-protocol"))
    return Outcome(status, value=_decode_safely(header.get("value"), returned),
                   error=str(header.get("error"))[:1000])


def _decode_safely(spec, arrays):
    """Decode a child's description; anything malformed becomes a harmless string."""
    try:
        if not isinstance(spec, dict) or spec.get("t") == "shared":
            raise ValueError
        if spec.get("t") == "other":
            return f"<{short(str(spec.get('type')), 80)}>"
        value = decode(spec, arrays)
        if spec.get("t") == "py" and not isinstance(value, (type(None), bool, int, float, str)):
            raise ValueError
        return value
    except Exception:  # noqa: BLE001
        return "<a value the grader could not read>"
