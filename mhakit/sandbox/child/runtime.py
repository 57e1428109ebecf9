"""The program that runs inside the grading child process, next to the student's code.

The parent passes this file's text to ``python -I -S -c`` (or the zygote loads it), so
the child never imports the grader; it imports numpy and the standard library only. The
parent trusts nothing it says: it accepts only JSON and arrays of plain numeric dtypes,
decides every verdict itself, and answers a stand-in only when the reference itself
would have asked the same question, or one whose answer is a slice of that one's.

Protocol, over one Unix socket: every message is a JSON header frame, then, if the
header lists arrays, one frame holding their raw bytes; a frame is an 8-byte big-endian
length and its bytes. A batch's inputs arrive instead in memory files whose descriptors
ride on the batch's first byte: one the child may write (the parent reads it back to see
whether a call changed its inputs) and one sealed against writing (read-only inputs).

A batch that the zygote holds decoded already (see preload) is named by its key instead.

A batch's replies are held back and sent together, a function's run of calls or a few
milliseconds' worth at a time, since a message each would cost both processes more than
most calls do. So that the parent still knows which call did not answer when the child
hangs or dies, the child writes the number of the call it starts into one more memory
file, the batch's progress: a claim like any other, which the parent uses only to blame
a call that never answered.
"""

import __future__  # noqa: F401 - imported once, in the zygote, for the inert IPython
import _thread
import builtins
import hashlib
import importlib.machinery
import json
import math
import mmap
import os
import re
import shlex  # noqa: F401 - as __future__: for the inert IPython's magics
import socket
import struct
import sys
import time
import types

if __name__ == "__main__" and len(sys.argv) > 3:
    sys.path.insert(0, sys.argv[3])  # the folder that holds numpy and nothing else

import numpy


def _own_copy(module):
    return types.SimpleNamespace(**vars(module))


# Student code shares this process and may patch numpy, the standard library or the
# builtins for its own use. What the runtime calls it reaches through copies of them made
# here, before any student code runs (in the zygote, once for every child), and never
# through the modules themselves: a patch changes the student's own environment, as it
# would in a kernel, and not how the runtime reads requests and writes replies. (This
# must come before the first def: a function keeps the builtins its module had then.)
# A dict serves, as Python allows; mypy expects the module.
__builtins__ = dict(vars(builtins))  # type: ignore[assignment]
np, json, struct, os, socket, mmap, math, hashlib, types = map(_own_copy, (
    numpy, json, struct, os, socket, mmap, math, hashlib, types))
_BUILTINS = vars(builtins)  # the real ones, which the student's code shares
# And as they were before student code ran: set by Child.load, so only in a child. The
# grader imports this module too, and its builtins are never swapped (other threads).
_CLEAN_BUILTINS = None


def _unpatched(function, *args):
    """``function(*args)`` for a function of the standard library written in Python (json's,
    socket.recv_fds), which finds the builtins in the real module: run with the builtins
    as they were before student code ran, then the student's own, patched, put back."""
    try:
        if _CLEAN_BUILTINS is None or _BUILTINS == _CLEAN_BUILTINS:
            return function(*args)
    except BaseException:  # noqa: BLE001 - a replaced builtin whose == raised: patched
        pass
    patched = dict(_BUILTINS)
    _BUILTINS.clear()
    _BUILTINS.update(_CLEAN_BUILTINS)
    try:
        return function(*args)
    finally:
        _BUILTINS.clear()
        _BUILTINS.update(patched)


MAX_FRAME = 256 * 1024 * 1024
# Held-back replies go out before a call starts once this long has passed since the last
# send (so a call's deadline at the parent starts at most this much early), and whenever
# they reach FLUSH_BYTES.
FLUSH_SECONDS, FLUSH_BYTES = 0.005, 1 << 20
_monotonic = time.monotonic  # bound here: student code may replace time.monotonic


class Channel:
    """The child's end of the socket. Reads with recvmsg, so that the descriptors the
    parent sends are kept (plain read() would drop them), in arrival order."""

    def __init__(self, rfd, wfd):
        self.socket = socket.socket(fileno=rfd)
        self.wfd = wfd
        self.fds = []
        self.held, self.held_bytes, self.sent_at = [], 0, _monotonic()
        # Student code may call stand-ins from several threads at once (a pool over the
        # heads): each request and its answer are one exchange on the socket, and replies
        # are written whole. Reentrant: ask() sends, and sending flushes.
        self.lock = _thread.RLock()

    def read_exact(self, size):
        chunks = []
        while size:
            chunk, fds, _, _ = _unpatched(socket.recv_fds, self.socket, min(size, 1 << 20), 4)
            self.fds += fds
            if not chunk:
                raise EOFError("the parent closed the socket")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def read_frame(self):
        (size,) = struct.unpack(">Q", self.read_exact(8))
        if size > MAX_FRAME:
            raise ValueError("frame too large")
        return self.read_exact(size)

    def receive(self):
        with self.lock:
            header = _unpatched(json.loads, self.read_frame().decode("utf-8"))
            layout = header.get("arrays") or []
            return header, unpack_arrays(layout, self.read_frame() if layout else b"")

    def send(self, header, arrays=()):
        """Send a message now, after the replies held back, in order."""
        with self.lock:
            self.hold(header, arrays)
            self.flush()

    def ask(self, header, arrays=()):
        """Send a request and read its answer, with no other thread's message between."""
        with self.lock:
            self.send(header, arrays)
            return self.receive()

    def hold(self, header, arrays=()):
        """A reply to send with the next ones (see FLUSH_SECONDS)."""
        message = pack(header, arrays)
        with self.lock:
            self.held.append(message)
            self.held_bytes += len(message)
            if self.held_bytes >= FLUSH_BYTES:
                self.flush()

    def flush(self):
        with self.lock:
            if not self.held:
                return
            data = b"".join(self.held)
            self.held, self.held_bytes = [], 0
            while data:
                data = data[os.write(self.wfd, data):]
            self.sent_at = _monotonic()

    def due(self):
        return bool(self.held) and _monotonic() - self.sent_at >= FLUSH_SECONDS

    def take_fds(self, count):
        taken, self.fds = self.fds[:count], self.fds[count:]
        if len(taken) != count:
            raise ValueError("the batch's memory files did not arrive")
        return taken


# An array crosses as its dtype and shape (in the JSON header) and its raw bytes. Only
# plain numeric dtypes are accepted, so nothing that arrives can hold Python objects.
PLAIN_DTYPE = re.compile(r"^[<>|=]?[biufc][1-9][0-9]?$")


def pack(header, arrays=()):
    """The bytes of one message: a JSON header frame, then one frame with every array."""
    header = dict(header, arrays=[[a.dtype.str, list(a.shape)] for a in arrays])
    message = frame(_unpatched(json.dumps, header).encode("utf-8"))
    if arrays:
        message += frame(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays))
    return message


def unpack_message(data):
    """(header, arrays) of one whole message as ``pack`` made it, from its bytes."""
    (size,) = struct.unpack_from(">Q", data, 0)
    header = _unpatched(json.loads, bytes(data[8:8 + size]).decode("utf-8"))
    layout, rest = header.get("arrays") or [], 8 + size
    if not layout:
        return header, []
    (length,) = struct.unpack_from(">Q", data, rest)
    return header, unpack_arrays(layout, bytes(data[rest + 8:rest + 8 + length]))


# Whole batches that the zygote decoded once, by their key (see preload): a child forked
# after that is sent the key, and neither reads nor parses the batch again (about 1.5 ms
# of a child's CPU, the JSON of 168 calls and their sealed answers).
PRELOADED: dict = {}
PRELOADED_KEPT = 8


def preload(key, data):
    """In the zygote: keep the batch message ``data`` decoded, for every child forked later."""
    PRELOADED[key] = unpack_message(data)
    while len(PRELOADED) > PRELOADED_KEPT:
        del PRELOADED[next(iter(PRELOADED))]


def preloaded(request):
    """The (header, arrays) of a batch that names a preloaded one: its calls at ``todo``
    (all of them when there is none)."""
    header, arrays = PRELOADED[request["preloaded"]]
    todo = request.get("todo")
    if todo is not None:
        header = dict(header, calls=[header["calls"][index] for index in todo])
    return header, arrays


def unpack_arrays(layout, data):
    """Rebuild the arrays a header announces; ValueError for anything malformed."""
    if not isinstance(layout, list) or len(layout) > 10_000:
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


def decode(spec, arrays, files=()):
    """The value a description stands for; "shared" arrays are views of ``files``."""
    kind = spec["t"]
    if kind in ("tuple", "list"):
        items = [decode(s, arrays, files) for s in spec["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "array":
        return arrays[spec["i"]]
    if kind == "scalar":
        return arrays[spec["i"]][()]
    if kind == "shared":
        return shared_array(spec, files)
    return spec.get("v")


def shared_array(spec, files):
    """An input array in place in one of the batch's memory files, not a copy: whatever
    the student's code writes into it, the parent sees."""
    dtype, shape = np.dtype(spec["d"]), tuple(spec["s"])
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    return np.frombuffer(files[spec["f"]], dtype, math.prod(shape), spec["o"]).reshape(shape)


def map_files(fds, writable):
    """Map the batch's memory files, each writable or not as the parent says (a sealed
    file cannot be mapped for writing anyway)."""
    mapped = []
    for fd, may_write in zip(fds, writable):
        try:
            size = os.fstat(fd).st_size
            access = mmap.ACCESS_WRITE if may_write else mmap.ACCESS_READ
            mapped.append(mmap.mmap(fd, size, access=access) if size else b"")
        finally:
            os.close(fd)
    return mapped


# ------------------------------------------------------------ sealed recorded answers
# A stand-in is answered only with the reference's own recorded calls on the parent's
# inputs. So that a correct function need not ask for each, the parent sends those
# answers along, sealed: each is XORed with a key stream drawn from the call's exact
# arguments and filed under a hash of them. Code that has not computed those very
# arguments can neither find nor read one, and every other call asks the parent, which
# matches by meaning (within tolerance, or a slice of a recorded call): a sealed answer
# reveals nothing that asking would not.

def bind(params, args, kwargs):
    """The call's argument values in parameter order, or None if it does not bind.
    ``params`` holds [name, has a default, default] per parameter."""
    names = [p[0] for p in params]
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        return None
    if len(args) > len(names) or any(k not in names for k in kwargs):
        return None
    values = dict(zip(names, args))
    if any(k in values for k in kwargs):
        return None
    values.update(kwargs)
    for name, has_default, default in params:
        if name not in values:
            if not has_default:
                return None
            values[name] = default
    return [values[n] for n in names]


def _canonical(value):
    kind = type(value)
    if kind is np.ndarray and value.dtype.kind in "biufc" and not value.dtype.hasobject:
        head = f"A{value.dtype.str}{value.shape}".encode()
        return head + b":" + np.ascontiguousarray(value).tobytes()
    if kind is bool or kind is np.bool_:
        return b"B1" if value else b"B0"
    if kind is int or issubclass(kind, np.integer):
        return b"I" + str(int(value)).encode()
    if kind is float or issubclass(kind, np.floating):
        return b"F" + float(value).hex().encode()
    if value is None:
        return b"N"
    return None


def call_material(name, params, args, kwargs):
    """Canonical bytes of a call, the same on both sides; None for what cannot be sealed."""
    values = bind(params, args, kwargs)
    if values is None:
        return None
    parts = [name.encode()] + [_canonical(v) for v in values]
    if any(part is None for part in parts):
        return None
    return b"".join(struct.pack(">Q", len(part)) + part for part in parts)


def seal_id(material):
    return hashlib.sha256(b"mhakit-id\0" + material).hexdigest()


def xor_stream(material, data):
    pad = hashlib.shake_256(b"mhakit-pad\0" + material).digest(len(data))
    return (np.frombuffer(data, np.uint8) ^ np.frombuffer(pad, np.uint8)).tobytes()


def describe(error):
    """An exception as text, without calling anything the student defined on it."""
    try:
        text = str(error)[:300]
    except BaseException:  # noqa: BLE001 - a __str__ that raises
        text = "(no message)"
    return f"{type(error).__name__}: {text}"


INERT_IPYTHON_NAME = "<IPython.display>"
# The inert IPython's text -> its code, compiled in the zygote for every child.
_COMPILED: dict = {}


def precompile(source):
    """Compile the inert IPython's ``source`` now, so that a child forked later that is
    sent the very same text runs this code instead of compiling it again."""
    _COMPILED[source] = compile(source, INERT_IPYTHON_NAME, "exec")


def compiled(source):
    code = _COMPILED.get(source)
    return code if code is not None else compile(source, INERT_IPYTHON_NAME, "exec")


def ipython_modules(source):
    """The inert IPython (the grader's selfcheck/inert_ipython.py, as ``source``), as the
    ``IPython.display`` module, also found as IPython.core.display and
    IPython.core.display_functions, where display's objects live in a kernel; every
    other module of IPython is answered by ``InertIPythonModules``."""
    display = types.ModuleType("IPython.display")
    exec(compiled(source), vars(display))
    package = types.ModuleType("IPython")
    package.__path__ = []
    package.display, package.get_ipython = display, display.get_ipython
    package.version_info = display.VERSION_INFO  # matplotlib asks for it
    package.__getattr__ = display.anything  # from IPython import embed
    core = InertIPythonModules.inert("IPython.core", display)
    core.display = core.display_functions = display
    package.core = core
    sys.modules.update({"IPython": package, "IPython.display": display, "IPython.core": core,
                        "IPython.core.display": display,
                        "IPython.core.display_functions": display})
    sys.meta_path.append(InertIPythonModules(display))
    return display


class InertIPythonModules:
    """``import IPython.<anything>``: IPython is built into the child, inert, so every
    module of it imports, and what a cell takes from one does nothing (see
    inert_ipython.anything), as the kernel's magics do here."""

    def __init__(self, display):
        self.display = display

    @staticmethod
    def inert(name, display):
        module = types.ModuleType(name)
        module.__path__ = []  # a package: its own submodules import too
        module.__getattr__ = display.anything
        return module

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("IPython."):
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return self.inert(spec.name, self.display)

    def exec_module(self, module):
        pass


class Child:
    def __init__(self, rfd, wfd):
        self.channel = Channel(rfd, wfd)
        self.namespace = {}  # the cells' own, once they are loaded
        self.params = {}  # each contract function's parameters, to bind sealed calls

    def load(self, request):
        """Run the cells in order, as a kernel would. After each but the last the parent
        hears "cell", since each cell has a time limit of its own, as in nbgrader."""
        errors = {}
        global _CLEAN_BUILTINS
        display = ipython_modules(request["kernel"])
        # As in a kernel: a module's namespace, the real builtins (a student's patch of
        # one reaches their own code; exec would otherwise give this module's copy), and
        # future imports that hold from their cell on.
        self.namespace = display.kernel_namespace()
        self.namespace.update(display.kernel_names(self.namespace, writes=True))
        sys.path.append(os.getcwd())  # the scratch folder: what %%writefile wrote imports
        compile_cell = display.CellCompiler()
        exec(compile(request["preamble"], "<preamble>", "exec"), self.namespace)
        _CLEAN_BUILTINS = dict(_BUILTINS)  # the kernel's names went to the namespace
        for index, (cell_id, source) in enumerate(request["cells"]):
            if index:
                self.channel.send({"op": "cell"})
            try:
                exec(compile_cell(source, f"<cell {cell_id}>"), self.namespace)
            except NotImplementedError:
                continue
            except BaseException as error:  # noqa: BLE001 - a cell may raise anything
                errors[cell_id] = describe(error)
        self.channel.send({"op": "loaded", "errors": errors})

    def stand_in(self, name, own, sealed):
        """In place of ``name`` while another function is graded. It gets only the
        answers to the very calls that the reference itself makes on the inputs the
        parent chose, or to slices of them: sealed, or from the parent, which matches
        by meaning. Any other call runs the student's own ``name``."""
        channel = self.channel

        def standing_in(*args, **kwargs):
            found = self.unseal(name, args, kwargs, sealed)
            if found is None:
                arrays = []
                spec = {"op": "reference", "name": name, "args": encode(list(args), arrays),
                        "kwargs": {str(k): encode(v, arrays) for k, v in kwargs.items()}}
                found = channel.ask(spec, arrays)
            header, returned = found
            if header.get("ok"):
                return decode(header["value"], returned)
            if not callable(own):
                raise NameError(f"name '{name}' is not defined")
            return own(*args, **kwargs)
        standing_in.__name__ = name
        return standing_in

    def unseal(self, name, args, kwargs, sealed):
        """A sealed answer for exactly these arguments, as (header, arrays); else None."""
        try:
            material = call_material(name, self.params.get(name, []), args, kwargs)
            entry = sealed.get(seal_id(material)) if material is not None else None
            if entry is None:
                return None
            spec, layout, data = entry
            return {"ok": True, "value": spec}, unpack_arrays(layout, xor_stream(material, data))
        except Exception:  # noqa: BLE001 - the parent can always answer instead
            return None

    def call(self, request, files, arrays):
        """Run one call; reply with its status and value. Whether it changed its inputs
        is for the parent to see in the memory file, not for the child to say."""
        args = decode(request["args"], (), files)
        kwargs = {k: decode(v, (), files) for k, v in request["kwargs"].items()}
        func = self.namespace.get(request["name"])
        sealed = {e["id"]: (e["value"], e["layout"], arrays[e["i"]].tobytes())
                  for e in request.get("sealed", [])}
        saved = {n: self.namespace.get(n) for n in request.get("stand_ins", [])}
        for name, own in saved.items():
            self.namespace[name] = self.stand_in(name, own, sealed)
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
            self.namespace.update(saved)
        try:
            reply["value"] = encode(value, out)
        except BaseException as error:  # noqa: BLE001 - e.g. a list that holds itself
            out.clear()
            reply = {"op": "done", "status": "raised",
                     "error": f"the result could not be sent back ({type(error).__name__})"}
        self.channel.hold(reply, out)

    def batch(self, request, arrays):
        """Run a batch of calls in order, one reply each, so that the parent need not
        ask one by one (the replies go out a few at a time, see Channel.hold). Their
        inputs are in the memory files that came with the batch, then its progress;
        the sealed answers, in its arrays."""
        self.params = request.get("params", {})
        writable = request.get("files", [])
        files = map_files(self.channel.take_fds(len(writable)), writable)
        progress = map_files(self.channel.take_fds(1), [True])[0]
        held_for = None
        for number, item in enumerate(request["calls"]):
            # Held replies are all of one function's calls: whatever student code writes
            # into the socket itself then lands among its own function's answers.
            function = (item.get("op"), item.get("name"), bool(item.get("stand_ins")))
            if function != held_for or self.channel.due():
                self.channel.flush()
                held_for = function
            struct.pack_into("<q", progress, 0, number)  # the parent's to read, if need be
            if item.get("op") == "variable":
                self.variable(item)
            else:
                self.call(item, files, arrays)
        self.channel.flush()

    def variable(self, request):
        out = []
        try:
            spec = encode(self.namespace.get(request["name"]), out)
        except BaseException:  # noqa: BLE001
            out, spec = [], {"t": "other", "type": "a value that could not be sent"}
        self.channel.hold({"op": "done", "status": "returned", "value": spec}, out)

    def serve(self):
        while True:
            request, arrays = self.channel.receive()
            op = request.get("op")
            if op == "load":
                self.load(request)
            elif op == "batch":
                if "preloaded" in request:
                    request, arrays = preloaded(request)
                self.batch(request, arrays)
            else:
                return


if __name__ == "__main__":
    Child(int(sys.argv[1]), int(sys.argv[2])).serve()
