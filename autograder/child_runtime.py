"""The program that runs inside the grading child process, next to the student's code.

The parent passes this file's text to ``python -I -c``, so the child never imports
the ``autograder`` package; it imports numpy and the standard library only. The parent
trusts nothing it says: it sends arrays as .npy bytes, reads arrays back with
``allow_pickle=False``, and compares results itself.

Protocol: every message is a JSON header frame followed by ``header["arrays"]`` frames
of .npy bytes; a frame is an 8-byte big-endian length and then its bytes.
"""

import io
import json
import os
import struct
import sys

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


def write_frame(fd, data):
    data = struct.pack(">Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def read_frame(fd):
    (size,) = struct.unpack(">Q", read_exact(fd, 8))
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return read_exact(fd, size)


def send(fd, header, arrays=()):
    header = dict(header, arrays=len(arrays))
    write_frame(fd, json.dumps(header).encode("utf-8"))
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        write_frame(fd, buffer.getvalue())


def receive(fd):
    header = json.loads(read_frame(fd).decode("utf-8"))
    arrays = [np.load(io.BytesIO(read_frame(fd)), allow_pickle=False)
              for _ in range(header.get("arrays", 0))]
    return header, arrays


def encode(value, arrays):
    """A JSON description of ``value``; arrays go to the ``arrays`` list by index."""
    if isinstance(value, (tuple, list)):
        return {"t": type(value).__name__, "items": [encode(v, arrays) for v in value]}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject or array.dtype.kind not in "biufc":
            return {"t": "other", "type": f"an array of dtype {array.dtype}"}
        arrays.append(np.array(array))  # a plain copy, whatever subclass came in
        return {"t": "array" if isinstance(value, np.ndarray) else "scalar", "i": len(arrays) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, int) and abs(value) > 2 ** 62:
            return {"t": "other", "type": "a very large int"}
        return {"t": "py", "v": value}
    return {"t": "other", "type": f"an object of type {type(value).__name__}"}


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


class Child:
    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.namespace = {"__name__": "__student__"}

    def load(self, request):
        errors = {}
        exec(compile(request["preamble"], "<preamble>", "exec"), self.namespace)
        for cell_id, source in request["cells"]:
            try:
                exec(compile(source, f"<cell {cell_id}>", "exec"), self.namespace)
            except NotImplementedError:
                continue
            except BaseException as error:  # noqa: BLE001 - a cell may raise anything
                errors[cell_id] = f"{type(error).__name__}: {str(error)[:300]}"
        send(self.wfd, {"op": "loaded", "errors": errors})

    def stand_in(self, name, token):
        """A function that asks the parent for the reference result of ``name``."""
        def ask_parent(*args, **kwargs):
            arrays = []
            spec = {"args": encode(list(args), arrays),
                    "kwargs": {k: encode(v, arrays) for k, v in kwargs.items()}}
            send(self.wfd, dict(spec, op="reference", name=name, token=token), arrays)
            header, returned = receive(self.rfd)
            if not header.get("ok"):
                raise ValueError(header.get("error", "invalid arguments"))
            return decode(header["value"], returned)
        ask_parent.__name__ = name
        return ask_parent

    def call(self, request, arrays):
        args = decode(request["args"], arrays)
        kwargs = {k: decode(v, arrays) for k, v in request["kwargs"].items()}
        if request.get("readonly"):
            for a in list(args) + list(kwargs.values()):
                if isinstance(a, np.ndarray):
                    a.flags.writeable = False
        func = self.namespace.get(request["name"])
        saved = {n: self.namespace.get(n) for n in request.get("stand_ins", [])}
        for name in saved:
            self.namespace[name] = self.stand_in(name, request["token"])
        reply, out = {"op": "done"}, []
        try:
            if not callable(func):
                reply["status"] = "missing"
            else:
                reply.update(status="returned", value=encode(func(*args, **kwargs), out))
        except NotImplementedError:
            reply["status"] = "not_implemented"
        except BaseException as error:  # noqa: BLE001 - the student's exception is data
            reply.update(status="raised", error=f"{type(error).__name__}: {str(error)[:300]}")
        finally:
            self.namespace.update(saved)
        reply["args_after"] = encode(list(args), out)
        reply["kwargs_after"] = {k: encode(v, out) for k, v in kwargs.items()}
        send(self.wfd, reply, out)

    def variable(self, request):
        out = []
        value = self.namespace.get(request["name"])
        send(self.wfd, {"op": "value", "value": encode(value, out)}, out)

    def serve(self):
        while True:
            request, arrays = receive(self.rfd)
            op = request.get("op")
            if op == "load":
                self.load(request)
            elif op == "call":
                self.call(request, arrays)
            elif op == "variable":
                self.variable(request)
            else:
                return


if __name__ == "__main__":
    Child(int(sys.argv[1]), int(sys.argv[2])).serve()
