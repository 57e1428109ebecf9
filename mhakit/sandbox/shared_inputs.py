"""A batch's input arrays, in memory files that the grader reads back itself.

Each call's arrays are copied into one of two memory files: a writable one, which the
child maps shared, so that any write into an input lands where the grader can see it,
and one sealed against writing (F_SEAL_WRITE) for the calls whose inputs are read-only,
which no process can map for writing. After each call the grader compares that call's
part of the writable file with its own copy: the verdict "inputs unchanged" is its own.

Where the system has no memfd_create (macOS), an unlinked temporary file stands in and
read-only inputs are read-only only by numpy's flag.
"""

import fcntl
import os
import tempfile

import numpy as np

WRITABLE, SEALED = 0, 1
ALIGN = 64


class InputLayout:
    """Where each call's arrays go; built once per batch and reused for every submission."""

    def __init__(self, calls):
        self.blobs = (bytearray(), bytearray())
        self.regions = []  # per call: [(offset, length)] in the writable file
        self.specs = []    # per call: (args spec, kwargs spec)
        self._shared = []  # every array's spec, to number the files that are sent
        for call in calls:
            regions = []
            target = SEALED if call.readonly else WRITABLE
            args = self._place(list(call.args), target, regions)
            kwargs = {k: self._place(v, target, regions) for k, v in call.kwargs.items()}
            self.specs.append((args, kwargs))
            self.regions.append(regions if target == WRITABLE else [])
        # Only the files that hold something are made and sent (most batches have no
        # read-only input); an array names its file by its place among them.
        self.kinds = [kind for kind in (WRITABLE, SEALED) if self.blobs[kind]]
        for spec in self._shared:
            spec["f"] = self.kinds.index(spec["f"])
        self.writable = [kind == WRITABLE for kind in self.kinds]

    def _place(self, value, target, regions):
        if isinstance(value, (tuple, list)):
            return {"t": type(value).__name__,
                    "items": [self._place(v, target, regions) for v in value]}
        if isinstance(value, np.ndarray):
            blob = self.blobs[target]
            blob.extend(b"\0" * (-len(blob) % ALIGN))
            offset = len(blob)
            blob.extend(np.ascontiguousarray(value).tobytes())
            if value.size:
                regions.append((offset, value.nbytes))
            self._shared.append({"t": "shared", "f": target, "o": offset,
                                 "d": value.dtype.str, "s": list(value.shape)})
            return self._shared[-1]
        if isinstance(value, (np.generic,)):
            value = value.item()
        return {"t": "py", "v": value}

    def open(self):
        return OpenInputs(self)


class OpenInputs:
    """The memory files of one batch for one child; ``changed(i)`` is the grader's verdict."""

    def __init__(self, layout):
        self.layout = layout
        self.fds = [memory_file(bytes(layout.blobs[kind]), sealed=kind == SEALED)
                    for kind in layout.kinds]

    def fd(self, kind):
        return self.fds[self.layout.kinds.index(kind)]

    def changed(self, index):
        """Whether call ``index`` left any of its inputs different from what was sent.
        A file the child managed to shrink counts as changed."""
        blob = self.layout.blobs[WRITABLE]
        for offset, length in self.layout.regions[index]:
            try:
                now = os.pread(self.fd(WRITABLE), length, offset)
            except OSError:
                return True
            if now != blob[offset:offset + length]:
                return True
        return False

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def memory_file(data, sealed):
    """A file descriptor of an anonymous file holding ``data``. Its size is sealed, and
    with ``sealed`` its contents too."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("mhakit-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    else:
        fd, path = tempfile.mkstemp(prefix="mhakit-inputs-")
        os.unlink(path)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if hasattr(fcntl, "F_ADD_SEALS"):
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals | (fcntl.F_SEAL_WRITE if sealed else 0))
    return fd
