"""What the structural diagnoses (the self-check's structure.py) know of each function:
the sizes a wrong factor may equal, the axes one item has, the names of the axes, and
the regions a mask decides. Sizes are read from the call's own shapes, never from its
values, so a diagnosis shows nothing the feedback does not show already.
"""

import numpy as np

from mhakit.selfcheck.structure import Region, Structure

PAIR = ("output", "weights")


def _mask(args, kwargs, position):
    mask = kwargs.get("mask", args[position] if len(args) > position else None)
    return None if mask is None else np.asarray(mask, dtype=bool)


def _over_rows(rows, shape):
    """A (..., T, 1) choice of rows, spread over every entry of those rows of ``shape``."""
    return np.broadcast_to(rows, shape[:-1] + (1,)).repeat(shape[-1], axis=-1)


def _per_head(mask, heads):
    return mask[..., None, :, :] if heads else mask


def _rows_without_key(mask, shapes, heads):
    """Per result (output, weights), where a query's mask row allows no key at all."""
    empty = ~np.any(mask, axis=-1, keepdims=True)  # (..., T_q, 1)
    output, weights = shapes
    return _over_rows(empty, output), np.broadcast_to(_per_head(empty, heads), weights)


def _blocked(mask, shapes, heads):
    """Per result, what the blocked keys decide: their weights, and the rows of the output
    whose query has a blocked key."""
    output, weights = shapes
    rows = np.any(~mask, axis=-1, keepdims=True)
    return _over_rows(rows, output), np.broadcast_to(_per_head(~mask, heads), weights)


NO_KEY = ("除了掩码一个位置都不许看的那些行，其余都对；这些行{found}，应该全是 0：先找出一个"
          "位置都不能看的行，再把这些行的权重和输出设为 0。",
          "Right everywhere except in the rows whose mask allows no key at all: there the "
          "result {found}, and such rows should be all zeros: find the rows with no allowed "
          "key and set their weights and output to 0.")
BLOCKED = ("除了被掩码挡住的位置，其余都对；被挡住的位置{found}：那里的权重应该正好是 0。",
           "Right everywhere except where the mask blocks a key: there the result {found}; a "
           "blocked key's weight should be exactly 0.")


def _mask_regions(mask, expected, heads=False):
    """The mask's regions; ``heads``: the results have a head axis the mask has not."""
    if not isinstance(mask, np.ndarray):  # the call gave no mask
        return []
    shapes = tuple(np.shape(e) for e in expected)
    return [Region("structure/wrong-where-mask-allows-nothing", *NO_KEY,
                   _rows_without_key(mask, shapes, heads)),
            Region("structure/wrong-at-masked-entries", *BLOCKED,
                   _blocked(mask, shapes, heads))]


def _shape(value):
    return np.shape(value)


def _softmax_core(args, kwargs):
    axis = kwargs.get("axis", args[1] if len(args) > 1 else -1)
    if not isinstance(axis, int) or axis >= 0:
        return None  # a positive axis would mean another axis on one item
    return (-axis, None), {}, (-axis,)


def _multi_head_sizes(args, kwargs):
    d_model, num_heads = _shape(args[0])[-1], args[5]
    return [("d_k", d_model // num_heads), ("num_heads", num_heads), ("d_model", d_model),
            ("T", _shape(args[0])[-2])]


STRUCTURE = {
    "dot_product": Structure(
        sizes=lambda a, k: [("d", _shape(a[0])[-1])],
        core=lambda a, k: ((1, 1), {}, (0,)),
        axes=lambda a, k: ((),)),
    "attention_scores": Structure(
        sizes=lambda a, k: [("d_k", _shape(a[0])[-1]), ("T_k", _shape(a[1])[-2]),
                            ("T_q", _shape(a[0])[-2])],
        divisor={"d_k": 0.5},
        core=lambda a, k: ((2, 2), {}, (2,)),
        axes=lambda a, k: (("T_q", "T_k"),)),
    "softmax": Structure(
        sizes=lambda a, k: [("n", _shape(a[0])[k.get("axis", -1)])],
        core=_softmax_core),
    "attention": Structure(
        sizes=lambda a, k: [("d_k", _shape(a[0])[-1]), ("T_k", _shape(a[1])[-2]),
                            ("T_q", _shape(a[0])[-2]), ("d_v", _shape(a[2])[-1])],
        core=lambda a, k: ((2, 2, 2, 2), {"mask": 2}, (2, 2)),
        axes=lambda a, k: (("T_q", "d_v"), ("T_q", "T_k")),
        regions=lambda a, k, expected: _mask_regions(_mask(a, k, 3), expected),
        parts=PAIR),
    "split_heads": Structure(
        sizes=lambda a, k: [("num_heads", a[1]), ("d_k", _shape(a[0])[-1] // a[1])],
        core=lambda a, k: ((2, None), {}, (3,)),
        axes=lambda a, k: (("h", "T", "d_k"),)),
    "concat_heads": Structure(
        sizes=lambda a, k: [("h", _shape(a[0])[-3]), ("d_k", _shape(a[0])[-1])],
        core=lambda a, k: ((3,), {}, (2,)),
        axes=lambda a, k: (("T", "h·d_k"),)),
    "output_projection": Structure(
        sizes=lambda a, k: [("h·d_k", _shape(a[0])[-1]), ("d_model", _shape(a[1])[-1])],
        core=lambda a, k: ((2, 2), {}, (2,)),
        axes=lambda a, k: (("T", "d_model"),)),
    "multi_head_attention": Structure(
        sizes=_multi_head_sizes,
        core=lambda a, k: ((2, 2, 2, 2, 2, None, 2), {"mask": 2}, (2, 3)),
        axes=lambda a, k: (("T", "d_model"), ("h", "T_q", "T_k")),
        regions=lambda a, k, expected: _mask_regions(_mask(a, k, 6), expected, True),
        parts=PAIR),
}
