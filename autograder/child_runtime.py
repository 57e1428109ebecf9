"""The program that runs inside the grading child process, next to the student's code.

The parent passes this file's text to ``python -I -S -c``, so the child never imports
the ``autograder`` package; it imports numpy and the standard library only. The parent
trusts nothing it says: it accepts only JSON and arrays of plain numeric dtypes, and
compares results itself.

Protocol: every message is a JSON header frame, then, if the header lists arrays, one
frame holding their raw bytes; a frame is an 8-byte big-endian length and its bytes.
"""

import json
import math
import os
import re
import struct
import sys
import types

if __name__ == "__main__" and len(sys.argv) > 3:
    sys.path.insert(0, sys.argv[3])  # the folder that holds numpy and nothing else

import numpy as np  # noqa: E402

MAX_FRAME = 256 * 1024 * 1024


def read_exact(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the parent closed the pipe")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    (size,) = struct.unpack(">Q", read_exact(fd, 8))
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return read_exact(fd, size)


# An array crosses as its dtype and shape (in the JSON header) and its raw bytes. Only
# plain numeric dtypes are accepted, so nothing that arrives can hold Python objects.
PLAIN_DTYPE = re.compile(r"^[<>|=]?[biufc][1-9][0-9]?$")


def pack(header, arrays=()):
    """The bytes of one message: a JSON header frame, then one frame with every array."""
    header = dict(header, arrays=[[a.dtype.str, list(a.shape)] for a in arrays])
    message = frame(json.dumps(header).encode("utf-8"))
    if arrays:
        message += frame(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays))
    return message


def unpack_arrays(layout, data):
    """Rebuild the arrays a header announces; ValueError for anything malformed."""
    if not isinstance(layout, list) or len(layout) > 100_000:
        raise ValueError("bad array layout")
    arrays, offset = [], 0
    for item in layout:
        dtype_name, shape = item
        if not isinstance(dtype_name, str) or not PLAIN_DTYPE.match(dtype_name):
            raise ValueError("not a plain numeric dtype")
        if not isinstance(shape, list) or len(shape) > 32 or not all(
                type(n) is int and n >= 0 for n in shape):
            raise ValueError("bad shape")
        dtype = np.dtype(dtype_name)
        size = math.prod(shape) * dtype.itemsize
        if offset + size > len(data):
            raise ValueError("truncated array data")
        chunk = data[offset:offset + size]
        arrays.append(np.frombuffer(chunk, dtype=dtype).reshape(shape).copy())
        offset += size
    if offset != len(data):
        raise ValueError("extra array data")
    return arrays


def frame(data):
    return struct.pack(">Q", len(data)) + data


def send(fd, header, arrays=()):
    data = pack(header, arrays)
    while data:
        data = data[os.write(fd, data):]


def receive(fd):
    header = json.loads(read_frame(fd).decode("utf-8"))
    layout = header.get("arrays") or []
    return header, unpack_arrays(layout, read_frame(fd) if layout else b"")


def encode(value, arrays):
    """A JSON description of ``value``; arrays go to the ``arrays`` list by index.

    Types are read with ``type()``, which no object can fake, and subclasses are
    turned into plain values without calling any of their methods.
    """
    kind = type(value)
    if kind in (tuple, list):
        return {"t": kind.__name__, "items": [encode(v, arrays) for v in value]}
    if issubclass(kind, (np.ndarray, np.generic)):
        array = np.asarray(value) if issubclass(kind, np.generic) else value.view(np.ndarray)
        if array.dtype.hasobject or array.dtype.kind not in "biufc":
            return {"t": "other", "type": f"an array of dtype {array.dtype}"}
        arrays.append(array.copy())
        return {"t": "array" if issubclass(kind, np.ndarray) else "scalar", "i": len(arrays) - 1}
    if value is None or kind in (bool, int, float, str):
        if kind is int and abs(value) > 2 ** 62:
            return {"t": "other", "type": "a very large int"}
        return {"t": "py", "v": value}
    return {"t": "other", "type": f"an object of type {kind.__name__}"}


def decode(spec, arrays):
    kind = spec["t"]
    if kind in ("tuple", "list"):
        items = [decode(s, arrays) for s in spec["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "array":
        return arrays[spec["i"]]
    if kind == "scalar":
        return arrays[spec["i"]][()]
    return spec.get("v")


def describe(error):
    """An exception as text, without calling anything the student defined on it."""
    try:
        text = str(error)[:300]
    except BaseException:  # noqa: BLE001 - a __str__ that raises
        text = "(no message)"
    return f"{type(error).__name__}: {text}"


class Guard:
    """Undo what student code did to the modules this runtime relies on.

    Student code may patch numpy, builtins, sys, json or this very module. Whenever
    the runtime itself works (reading requests, encoding results) it puts the
    modules' contents back as they were before any student code ran.
    """

    def __init__(self, modules):
        self.modules = modules
        self.clean_state = [dict(vars(m)) for m in modules]

    @staticmethod
    def _set(module, state):
        namespace = vars(module)
        # New names go, except submodules loaded since (numpy imports np.fft and others on
        # first use, and the import system would not set them on the package again).
        for key in [k for k in namespace if k not in state
                    and not isinstance(namespace[k], types.ModuleType)]:
            del namespace[key]
        namespace.update(state)

    def restore(self):
        for module, state in zip(self.modules, self.clean_state):
            self._set(module, state)

    def clean(self):
        """For a stand-in called from student code: clean now, the student's state after."""
        guard = self

        class Swap:
            def __enter__(self):
                self.student_state = [dict(vars(m)) for m in guard.modules]
                guard.restore()

            def __exit__(self, *exc):
                for module, state in zip(guard.modules, self.student_state):
                    guard._set(module, state)

        return Swap()


class Child:
    def __init__(self, rfd, wfd):
        import builtins

        self.rfd, self.wfd = rfd, wfd
        self.namespace = {"__name__": "__student__"}
        self.guard = Guard([builtins, sys, os, json, struct, math, re, np,
                            sys.modules[__name__]])

    def load(self, request):
        errors = {}
        exec(compile(request["preamble"], "<preamble>", "exec"), self.namespace)
        for cell_id, source in request["cells"]:
            try:
                exec(compile(source, f"<cell {cell_id}>", "exec"), self.namespace)
            except NotImplementedError:
                continue
            except BaseException as error:  # noqa: BLE001 - a cell may raise anything
                errors[cell_id] = describe(error)
            finally:
                self.guard.restore()
        send(self.wfd, {"op": "loaded", "errors": errors})

    def stand_in(self, name, token):
        """A function that asks the parent for the reference result of ``name``."""
        def ask_parent(*args, **kwargs):
            with self.guard.clean():
                arrays = []
                spec = {"args": encode(list(args), arrays),
                        "kwargs": {str(k): encode(v, arrays) for k, v in kwargs.items()}}
                send(self.wfd, dict(spec, op="reference", name=name, token=token), arrays)
                header, returned = receive(self.rfd)
            if not header.get("ok"):
                raise ValueError(header.get("error", "invalid arguments"))
            return decode(header["value"], returned)
        ask_parent.__name__ = name
        return ask_parent

    def call(self, request, arrays):
        """Run one call; reply with its status, its value and whether it changed its inputs."""
        args = decode(request["args"], arrays)
        kwargs = {k: decode(v, arrays) for k, v in request["kwargs"].items()}
        inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, np.ndarray)]
        originals = [a.copy() for a in inputs]
        if request.get("readonly"):
            for a in inputs:
                a.flags.writeable = False
        func = self.namespace.get(request["name"])
        saved = {n: self.namespace.get(n) for n in request.get("stand_ins", [])}
        for name in saved:
            self.namespace[name] = self.stand_in(name, request["token"])
        reply, out, value = {"op": "done"}, [], None
        try:
            if not callable(func):
                reply["status"] = "missing"
            else:
                value = func(*args, **kwargs)
                reply["status"] = "returned"
        except NotImplementedError:
            reply["status"] = "not_implemented"
        except BaseException as error:  # noqa: BLE001 - the student's exception is data
            reply.update(status="raised", error=describe(error))
        finally:
            self.guard.restore()
            self.namespace.update(saved)
        try:
            reply["inputs_changed"] = not all(
                a.shape == b.shape and np.array_equal(a, b, equal_nan=b.dtype.kind in "fc")
                for a, b in zip(inputs, originals))
            reply["value"] = encode(value, out)
        except BaseException as error:  # noqa: BLE001 - e.g. a list that holds itself
            out.clear()
            reply = {"op": "done", "status": "raised",
                     "error": f"the result could not be sent back ({type(error).__name__})"}
        send(self.wfd, reply, out)

    def batch(self, request, arrays):
        """Run many calls in order, one reply each, so the parent need not ask one by one."""
        for item in request["calls"]:
            if item.get("op") == "variable":
                self.variable(item)
            else:
                self.call(item, arrays)

    def variable(self, request):
        out = []
        try:
            spec = encode(self.namespace.get(request["name"]), out)
        except BaseException:  # noqa: BLE001
            out, spec = [], {"t": "other", "type": "a value that could not be sent"}
        send(self.wfd, {"op": "done", "status": "returned", "value": spec}, out)

    def serve(self):
        while True:
            request, arrays = receive(self.rfd)
            op = request.get("op")
            if op == "load":
                self.load(request)
            elif op == "call":
                self.call(request, arrays)
            elif op == "batch":
                self.batch(request, arrays)
            elif op == "variable":
                self.variable(request)
            else:
                return


if __name__ == "__main__":
    Child(int(sys.argv[1]), int(sys.argv[2])).serve()
