"""mhakit/sandbox/shared_inputs.py: a batch's inputs in memory files. The read-only
ones cannot be written at all; a write into the writable ones, the grader sees itself."""

import mmap
import os

import numpy as np
import pytest

from mhakit.sandbox.shared_inputs import SEALED, WRITABLE, InputLayout
from mhakit.sandbox.student import PlannedCall


def test_read_only_inputs_cannot_be_written_or_mapped_for_writing():
    layout = InputLayout([PlannedCall("softmax", (np.arange(6.0),), readonly=True)])
    inputs = layout.open()
    try:
        fd = inputs.fd(SEALED)
        with pytest.raises(PermissionError):
            mmap.mmap(fd, 48, access=mmap.ACCESS_WRITE)
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"\0" * 8, 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        view = np.frombuffer(mmap.mmap(fd, 48, access=mmap.ACCESS_READ), np.float64)
        with pytest.raises(ValueError):
            view.flags.writeable = True
        assert not inputs.changed(0)
    finally:
        inputs.close()


def test_the_grader_sees_a_write_into_the_writable_inputs_itself():
    calls = [PlannedCall("softmax", (np.arange(6.0),)), PlannedCall("softmax", (np.ones(3),))]
    inputs = InputLayout(calls).open()
    try:
        fd = inputs.fd(WRITABLE)
        assert not inputs.changed(0) and not inputs.changed(1)
        shared = mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_WRITE)
        np.frombuffer(shared, np.float64, 6)[2] = -1.0  # the first call's array, in place
        assert inputs.changed(0) and not inputs.changed(1)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 8)  # nor can the file shrink under the grader
    finally:
        inputs.close()
