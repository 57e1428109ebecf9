"""Which of the child's calls of another contract function the grader answers.

While one function is graded, each function that the reference itself calls is a
stand-in in the child. The grader answers a stand-in only from what it recorded when it
planned the check: the reference's own calls, on the inputs the grader chose. A call
that means the same as a recorded one gets its answer: its arguments match within
tolerance, passed by keyword or by position, with an axis counted from either end, with
a mask that broadcasts to the same array. A call of a function that works item by item
(the exercise's ``Items``) on a slice of a recorded call, such as one head or one batch
item, gets the same slice of the recorded answer. Any other call runs the student's own
function. So the grader never computes the reference on arguments that the child
names, and a stand-in tells the student's code nothing that a correct implementation of
the function being graded would not compute anyway.
"""

import itertools
import math

import numpy as np

from .child.runtime import bind

# Intermediate values of a correct function may differ from the reference's in the
# last bits (einsum, another order of sums), so arguments match within tolerance.
MATCH_TOLERANCE = {np.dtype(np.float32): (2e-4, 1e-5)}
FLOAT64_TOLERANCE = (1e-6, 1e-9)
# Where the reference masks a score with -inf, -1e9 (or any score this low) gives the
# same normalised weights, so it matches too.
VERY_NEGATIVE = -1e4
# A slice takes each loop axis whole, at one item, or at one item kept with length 1:
# 3 ** axes ways. A recorded call with more loop axes than this is answered only whole.
MAX_LOOP_AXES = 4
WHOLE, TAKE, KEEP = "whole", "take", "keep"


def recorded_answer(name, args, kwargs, answers, params, function=None):
    """(True, value) for the first recorded call of ``name`` that these arguments mean,
    whole or a slice of it; (False, None) when none does, and the student's own function
    must run. ``function``, the exercise's Function of that name, says what its
    arguments mean (its axes, how it works item by item); without it, they must match
    the recorded ones one by one."""
    wanted = bind(params, args, kwargs)
    if wanted is None:
        return False, None
    names = [p[0] for p in params]
    got = dict(zip(names, wanted))
    for recorded_name, recorded_args, recorded_kwargs, value in answers:
        if recorded_name != name:
            continue
        recorded = bind(params, recorded_args, recorded_kwargs)
        if recorded is None:
            continue
        found, answer = RecordedCall(dict(zip(names, recorded)), value, function).answer(got)
        if found:
            return True, answer
    return False, None


class RecordedCall:
    """One call the reference made, with its answer, and the calls that mean it.

    Its loop shape is the broadcast of its looped arguments' loop dims, to which every
    looped argument and returned array is aligned from the right, as numpy aligns them.
    An index holds one entry per loop axis: None (the whole axis), an int (one item,
    the axis taken away) or a length-1 slice (one item, the axis kept).
    """

    def __init__(self, arguments, value, function):
        self.arguments, self.value = arguments, value
        self.axes = dict(getattr(function, "axes", ()) or ())
        items = getattr(function, "items", None)
        # A looped parameter that the reference passed no array (mask=None) is compared
        # as any other argument.
        self.looped = {} if items is None else {
            name: core for name, core in items.args if isinstance(arguments.get(name), np.ndarray)}
        self.masks = {} if items is None else dict(items.masks)
        self.core_at = "" if items is None else items.core_at
        self.shifts = items is not None and items.same_when_shifted
        self.returned = self._returned(items)
        self.loop_shape = self._loop_shape()

    def _returned(self, items):
        """[(returned array, its core dims)], or None when the answer is not such arrays."""
        if items is None:
            return None
        value = self.value
        arrays = list(value) if isinstance(value, (tuple, list)) else [value]
        if len(arrays) != len(items.returns) or not all(
                isinstance(a, np.ndarray) for a in arrays):
            return None
        return list(zip(arrays, items.returns))

    def _loop_axes(self, array, core):
        if self.core_at:
            at = _axis(self.arguments.get(self.core_at), array.ndim)
            return [k for k in range(array.ndim) if k != at]
        return list(range(max(0, array.ndim - core)))

    def _loop_shape(self):
        """The loop shape that slices index; () when this call is answered only whole."""
        if not self.looped or self.returned is None:
            return ()
        arrays = [(self.arguments[name], core) for name, core in self.looped.items()]
        if self.core_at and any(_axis(self.arguments.get(self.core_at), array.ndim) is None
                                for array, _ in arrays + self.returned):
            return ()  # axis=None: the whole array is one item
        try:
            shape = np.broadcast_shapes(*[self._loop_dims(array, core) for array, core in arrays])
        except ValueError:
            return ()
        if len(shape) > MAX_LOOP_AXES or any(
                self._loop_dims(array, core) != shape for array, core in self.returned):
            return ()
        return shape

    def _loop_dims(self, array, core):
        return tuple(array.shape[k] for k in self._loop_axes(array, core))

    def _key(self, array, core, index):
        """The numpy index that takes ``array``, a recorded argument or returned array,
        at ``index`` on its loop axes."""
        key = [slice(None)] * array.ndim
        if not index:
            return key
        axes = self._loop_axes(array, core)[-len(index):]
        for axis, pick in zip(axes, index[len(index) - len(axes):]):
            if pick is not None and array.shape[axis] == 1:
                # An axis the array broadcasts along holds one entry for every item.
                pick = 0 if isinstance(pick, int) else slice(0, 1)
            if pick is not None:
                key[axis] = pick
        return key

    def _take(self, array, core, index):
        return array[tuple(self._key(array, core, index))]

    def _target(self, name, index):
        """The shape that the mask ``name`` broadcasts against at ``index``; None when
        the parameter is no mask, or the answer tells no shape."""
        if name not in self.masks or self.returned is None:
            return None
        array, core = self.returned[self.masks[name]]
        return self._take(array, core, index).shape

    def answer(self, got):
        """(True, the answer) when the arguments ``got`` (by parameter) mean this call or
        a slice of it; (False, None) otherwise."""
        for name, want in self.arguments.items():
            if name not in self.looped and name not in self.axes and not _close(got[name], want):
                return False, None
        if not all(isinstance(got[name], np.ndarray) for name in self.looped):
            return False, None
        for index in self._indices(got):
            if all(self._same(name, got[name], index) for name in self.looped):
                return True, self._answer_at(index)
        return self._transposed(got)

    def _transposed(self, got):
        """A function whose items lie along one axis (core_at) means the same on its
        arrays with their axes reordered and the axis moved with them: a normalisation
        over the columns of a transposed array. (True, the recorded answer reordered
        alike)."""
        if not self.core_at or len(self.looped) != 1 or self.returned is None:
            return False, None
        (name,) = self.looped
        want, mine = self.arguments[name], got[name]
        axis = _axis(self.arguments[self.core_at], want.ndim)
        if axis is None or mine.ndim != want.ndim or want.ndim > MAX_LOOP_AXES + 1 or any(
                array.shape != want.shape for array, _ in self.returned):
            return False, None
        for order in itertools.permutations(range(want.ndim)):
            if (mine.shape == tuple(want.shape[k] for k in order)
                    and _axis(got[self.core_at], mine.ndim) == order.index(axis)
                    and self._close(mine, want.transpose(order), order.index(axis))):
                answer = [array.transpose(order) for array, _ in self.returned]
                return True, (tuple(answer) if isinstance(self.value, tuple) else
                              answer if isinstance(self.value, list) else answer[0])
        return False, None

    def _close(self, got, want, axis):
        if self.shifts and axis is not None:
            return _close_up_to_shift(got, want, axis)
        return _close_arrays(got, want)

    def _indices(self, got):
        """Each index at which ``got`` may be this call: first the whole call, then, for
        every way of slicing whose shapes and axes fit, every item. The items tried
        number at most the loop shape's size for each way that fits, so the bytes
        compared stay within a few times this call's own."""
        ways = [(WHOLE, TAKE) if size == 1 else (WHOLE, TAKE, KEEP) for size in self.loop_shape]
        for way in itertools.product(*ways):
            if not self._fits(got, tuple(_pick(w, 0) for w in way)):
                continue
            sliced = [k for k, w in enumerate(way) if w != WHOLE]
            for items in itertools.product(*(range(self.loop_shape[k]) for k in sliced)):
                index = [None] * len(way)
                for k, item in zip(sliced, items):
                    index[k] = _pick(way[k], item)
                yield tuple(index)

    def _fits(self, got, index):
        """Whether ``got`` has the shapes and axes of this call at ``index`` (any item)."""
        for name, core in self.looped.items():
            shape = self._take(self.arguments[name], core, index).shape
            target = self._target(name, index)
            if target is None and got[name].shape != shape:
                return False
            if target is not None and not _broadcasts(got[name].shape, target):
                return False
        return all(self._axis_fits(got, name, of, index) for name, of in self.axes.items())

    def _axis_fits(self, got, name, of, index):
        want, array = self.arguments[name], self.arguments.get(of)
        axis = _axis(want, array.ndim) if isinstance(array, np.ndarray) else None
        if axis is None:  # axis=None, or an array the reference was not given
            return _close(got[name], want)
        if isinstance(got[of], np.ndarray):
            mine = _axis(got[name], got[of].ndim)
        else:
            mine = None
        if of in self.looped:
            axis = self._sliced_axis(of, axis, index)
        return mine is not None and mine == axis

    def _sliced_axis(self, name, axis, index):
        """Where ``axis`` of the recorded argument ``name`` lies once it is taken at
        ``index``: the items taken away before it shift it left. None if it is gone."""
        key = self._key(self.arguments[name], self.looped[name], index)
        gone = [k for k, pick in enumerate(key) if isinstance(pick, int)]
        return None if axis in gone else axis - sum(k < axis for k in gone)

    def _same(self, name, got, index):
        want = self._take(self.arguments[name], self.looped[name], index)
        target = self._target(name, index)
        if target is None or want.dtype != bool or got.dtype != bool:
            if not self.shifts:
                return _close_arrays(got, want)
            axis = _axis(self.arguments.get(self.core_at), self.arguments[name].ndim)
            return self._close(got, want, None if axis is None else
                               self._sliced_axis(name, axis, index))
        # A mask means what it selects of the array it broadcasts against.
        return bool(np.array_equal(np.broadcast_to(got, target), np.broadcast_to(want, target)))

    def _answer_at(self, index):
        if all(pick is None for pick in index):
            return self.value
        sliced = [self._take(array, core, index) for array, core in self.returned]
        if isinstance(self.value, tuple):
            return tuple(sliced)
        return sliced if isinstance(self.value, list) else sliced[0]


def _pick(way, item):
    return None if way == WHOLE else item if way == TAKE else slice(item, item + 1)


def _axis(value, ndim):
    """An axis counted from the start; None for what is no axis of an ndim-array."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return None
    return int(value) % ndim if -ndim <= value < ndim else None


def _broadcasts(shape, target):
    """Whether an array of ``shape`` broadcasts to ``target`` without growing it."""
    return len(shape) <= len(target) and all(
        size in (1, want) for size, want in zip(shape[::-1], target[::-1]))


def _close(got, want):
    if isinstance(want, np.ndarray):
        return _close_arrays(got, want)
    if isinstance(want, (tuple, list)):
        return (isinstance(got, (tuple, list)) and len(got) == len(want)
                and all(_close(g, w) for g, w in zip(got, want)))
    if want is None or isinstance(want, (bool, np.bool_)):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, np.integer)):
        return (isinstance(got, (int, np.integer)) and not isinstance(got, (bool, np.bool_))
                and int(got) == int(want))
    if isinstance(want, (float, np.floating)):
        return (isinstance(got, (int, float, np.integer, np.floating))
                and not isinstance(got, (bool, np.bool_))
                and math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12))
    return False


def _close_arrays(got, want):
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
        return False
    if got.shape != want.shape or (got.dtype == bool) != (want.dtype == bool):
        return False
    if want.dtype == bool:  # a mask broadcast otherwise is matched as one (Items.masks)
        return bool(np.array_equal(got, want))
    if got.dtype == want.dtype and got.tobytes() == want.tobytes():
        return True  # the usual case, and the cheap one
    rtol, atol = MATCH_TOLERANCE.get(want.dtype, FLOAT64_TOLERANCE)
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        close = np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w))
    close |= (g == w) | (np.isnan(g) & np.isnan(w)) | (np.isneginf(w) & (g <= VERY_NEGATIVE))
    return bool(close.all())


def _close_up_to_shift(got, want, axis):
    """Whether ``got`` is ``want`` with one number added to every entry of each item
    along ``axis`` (each item's own number), within the usual tolerance. The number is
    read off where ``want`` is finite; where it is -inf, ``got`` shifted back must be
    very negative. An item of ``want`` with no finite entry is met only exactly."""
    if (not isinstance(got, np.ndarray) or got.dtype.kind not in "iuf" or want.dtype.kind != "f"
            or got.shape != want.shape):
        return False
    if _close_arrays(got, want):
        return True
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.where(np.isfinite(w), g - w, -np.inf)
        shift = np.max(gap, axis=axis, keepdims=True) if g.size else gap
    if not np.isfinite(shift).all():
        return False
    return _close_arrays((g - shift).astype(want.dtype), want)


def request_bytes(answers, name):
    """The most array bytes a stand-in request for ``name`` may carry: a few times the
    largest recorded call's, so that nothing the child sends makes the grader allocate
    much (a mask may come broadcast to the whole shape it masks)."""
    sizes = [bytes_of(list(args) + list(kwargs.values()))
             for recorded, args, kwargs, _ in answers if recorded == name]
    return 8 * max(sizes, default=0) + (64 << 10)


def bytes_of(value):
    """The bytes of the arrays in ``value``, however nested."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(bytes_of(v) for v in value)
    return 0
