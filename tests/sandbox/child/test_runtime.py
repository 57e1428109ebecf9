"""What may cross from the child to the grader: JSON and arrays of plain numbers only
(mhakit/sandbox/child/runtime.py packs and reads them)."""

import json

import numpy as np
import pytest

from mhakit.sandbox.child.runtime import pack, unpack_arrays


def test_plain_arrays_cross_intact():
    arrays = [np.arange(6.0).reshape(2, 3), np.array([True, False]),
              np.ones((0, 4), np.int64), np.array(3 + 4j), np.arange(5, dtype=np.float32)[::2]]
    message = pack({"op": "x"}, arrays)
    header_size = int.from_bytes(message[:8], "big")
    header = json.loads(message[8:8 + header_size])
    data = message[8 + header_size + 8:]
    back = unpack_arrays(header["arrays"], data)
    for original, copy in zip(arrays, back):
        assert copy.dtype == original.dtype and np.array_equal(copy, original)
        assert copy.flags.writeable


@pytest.mark.parametrize("layout,data", [
    ([["|O", [1]]], b"\0" * 8),              # Python objects
    ([["|V8", [1]]], b"\0" * 8),             # structured or raw bytes
    ([["(2,)f8", [1]]], b"\0" * 16),         # a sub-array dtype
    ([["<f8", [2]]], b"\0" * 8),             # too few bytes
    ([["<f8", [1]]], b"\0" * 9),             # bytes left over
    ([["<f8", [-1]]], b""),                  # a negative length
    ([["<f8", "3"]], b"\0" * 24),            # a shape that is not a list
    ([["<f8"]], b""),                        # half an entry
    ("not a list", b""),
])
def test_anything_else_is_refused(layout, data):
    with pytest.raises((ValueError, TypeError)):
        unpack_arrays(layout, data)


def test_a_text_compiled_in_the_zygote_is_not_compiled_again_and_any_other_is():
    from mhakit.sandbox.child import runtime
    from mhakit.selfcheck.notebook import INERT_IPYTHON

    runtime.precompile(INERT_IPYTHON)
    # What the grader sends every child (a copy of the text, as it arrives) is that code.
    sent = "".join(list(INERT_IPYTHON))
    assert runtime.compiled(sent) is runtime.compiled(INERT_IPYTHON)
    edited = INERT_IPYTHON + "\nEDITED = True\n"  # another text: compiled for itself
    namespace = {}
    exec(runtime.compiled(edited), namespace)
    assert namespace["EDITED"] is True


def test_the_zygote_is_told_to_compile_what_every_child_is_sent():
    from mhakit.sandbox.process import INERT_IPYTHON_FILE
    from mhakit.selfcheck.notebook import INERT_IPYTHON

    with open(INERT_IPYTHON_FILE, encoding="utf-8") as handle:
        assert handle.read() == INERT_IPYTHON


def test_the_grader_never_swaps_its_own_builtins_for_the_childs_runtime(monkeypatch):
    import builtins

    from mhakit.sandbox.child import runtime

    # The grader imports the runtime to pack messages; its builtins may change after that
    # import, and another thread of it may be looking one up meanwhile.
    monkeypatch.setattr(builtins, "mhakit_added_later", 1, raising=False)
    assert runtime._unpatched(lambda: hasattr(builtins, "mhakit_added_later"))
