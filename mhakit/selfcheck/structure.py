"""Naming a mistake from the structure of a wrong result, when no catalogued one matches.

The catalogue names the mistakes it lists. Any other wrong result is compared with the
right one, on the failing call's own inputs, for a pattern a student can act on: every
entry off by one factor (and which of the call's sizes it equals), the right values in
the wrong places, normalised along another axis, wrong only where a mask decides, right
for each batch item alone. A diagnosis names sizes, axes and shapes of the inputs, never
a number of the inputs or of the right result, so the grader may show it for hidden
inputs too.

The rule every class keeps, and a new class's author with it: **a diagnosis claims
only what its evidence proves.** A class names a cause only when its test rules out the
right behaviour and the other classes' explanations: "sums to 1 along another axis" only
when the result does *not* sum to 1 along the right one. Where the evidence fits several
causes, the class states what it observed ("right for one item, wrong with the batch
axes") and lists what can cause it, without picking one; and where several classes fit
the same wrong result, the feedback lists them all (``structure/one-of(a|b)``) and says
it cannot tell which. A class that another one implies (every reordering is a
reshuffle) gives way to it. tests/exercises/mha/test_precision.py holds the rule: on a
corpus of mistakes nobody catalogued, no diagnosis names a cause that is not the true one.

What an exercise knows about its functions (their sizes, their batch axes, the regions
a mask decides) is in its shipped package's ``structure.py``, as ``STRUCTURE``
({function: Structure}); without one, the classes that need none of it still apply.
numpy and the standard library only: this ships to students.
"""

import importlib
import itertools
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .failed_call import RAISED
from .framework import all_close, tolerance_for as _tolerance_of_dtype
from .wording import LANGUAGES, TEXTS, pick


@dataclass(frozen=True)
class Diagnosis:
    id: str  # "structure/<class>", for results.json and the class report
    zh: str
    en: str
    # proven on its own evidence, so that a class implying it does not make it give way
    stands_alone: bool = field(default=False, compare=False)

    def text(self, language):
        return pick((self.zh, self.en), language)


@dataclass(frozen=True)
class Region:
    """A part of a call's results that only a mask decides, such as the rows whose mask
    allows nothing. ``where`` holds a boolean array per result, of its shape; ``zh`` and
    ``en`` say where, with ``{found}`` for what the wrong result has there."""

    id: str
    zh: str
    en: str
    where: tuple


@dataclass(frozen=True)
class Structure:
    """What the engine may know of one function. Each is a function of (args, kwargs).

    ``sizes``: [(symbol, value)], the sizes a constant factor may equal ("d_k", 4);
    ``divisor``: {symbol: power} the right result is divided by ({"d_k": 0.5} for √d_k);
    ``core``: (ranks of the positional args, {keyword: rank}, ranks of the results),
    the trailing axes one item has (None: not an array to cut), or None for no batch;
    ``axes``: per result, the names of its core axes;
    ``regions``: (args, kwargs, expected) -> [Region];
    ``parts``: the names of the results, for a function that returns several.
    """

    sizes: object = None
    divisor: dict | None = None
    core: object = None
    axes: object = None
    regions: object = None
    parts: tuple = ()


def structures_of(shipped):
    """The ``STRUCTURE`` table of an exercise's shipped package, or {} without one."""
    if shipped is None or not (Path(shipped.__file__).parent / "structure.py").exists():
        return {}
    return importlib.import_module(f"{shipped.__name__}.structure").STRUCTURE


def tolerance_for(expected):
    """The comparison's tolerance for a right result of this dtype."""
    arrays = expected if isinstance(expected, tuple) else (expected,)
    single = any(np.asarray(a).dtype == np.float32 for a in arrays)
    return _tolerance_of_dtype(np.float32 if single else np.float64)


def both(id, key, **fields):
    """A Diagnosis from the engine's texts; a field may be a {language: text} dict."""
    texts = words(key, **fields)
    return Diagnosis(id, *(texts[language] for language in LANGUAGES))


def words(key, **fields):
    """{language: text} of one of the engine's texts, to fill another one's field."""
    return {language: spaced(pick(TEXTS[key], language).format(**{
        k: (v[language] if isinstance(v, dict) else v) for k, v in fields.items()}))
        for language in LANGUAGES}


def spaced(text):
    """A space between Chinese and the Latin letters, digits and symbols set in it, as
    the feedback writes them ("沿 h 轴"), wherever a filled-in field left none."""
    text = re.sub(r"([\u4e00-\u9fff])([A-Za-z0-9√(.])", r"\1 \2", text)
    return re.sub(r"([A-Za-z0-9)])([\u4e00-\u9fff])", r"\1 \2", text)


# ------------------------------------------------------------------ the diagnosis

def diagnose(structure, args, kwargs, got, expected, tolerance=None, call_again=None,
             by_results=None):
    """The Diagnosis of a wrong ``got`` (a result, or RAISED) against ``expected``, or None.

    ``call_again(args, kwargs)`` calls the student's function once more on inputs cut
    from these and returns (its result, the right result or None); it is called at most
    three times. With None for the right result, the item of ``expected`` is used.
    ``by_results`` stands in for ``from_results``, the part that needs no further call
    (the grader keeps what it gives, for the next submission with the same result)."""
    structure = structure or Structure()
    tolerance = tolerance or tolerance_for(expected)
    settled, found = (by_results or from_results)(structure, args, kwargs, got, expected,
                                                  tolerance)
    if settled or call_again is None or structure.core is None:
        return found
    rights = _rights(expected)
    return _by_batch_items(structure, args, kwargs, got, rights, tolerance, call_again)


def from_results(structure, args, kwargs, got, expected, tolerance):
    """(settled, Diagnosis or None) from the result and the right one alone: settled
    when nothing is wrong, or when a class explains it; else calling the function again
    may still tell (``diagnose``)."""
    pair = isinstance(expected, tuple)
    rights = _rights(expected)
    results = None if got is RAISED else _as_arrays(got, len(rights))
    if results is not None and all(close(g, r, tolerance) for g, r in zip(results, rights)):
        return True, None  # nothing wrong to explain
    if results is not None:
        region = _by_region(structure, args, kwargs, results, rights, expected, tolerance)
        found = [region] if region else []
        found += _by_one_result(structure, args, kwargs, results, rights, tolerance, pair)
        if found:
            return True, found[0] if len(found) == 1 else _one_of(found)
    return False, None


def _rights(expected):
    return tuple(np.asarray(e) for e in (expected if isinstance(expected, tuple) else
                                         (expected,)))


def _as_arrays(got, count):
    values = got if count > 1 else (got,)
    if count > 1 and (not isinstance(got, (tuple, list)) or len(got) != count):
        return None
    try:
        return tuple(np.asarray(v, dtype=np.float64) for v in values)
    except (TypeError, ValueError):
        return None


def close(got, right, tolerance):
    return got.shape == right.shape and all_close(got, right, **tolerance)


def _by_one_result(structure, args, kwargs, results, rights, tolerance, pair):
    """[Diagnosis]: every class that explains one of the wrong results (each class with
    the first result it explains), less those another one implies. Several that remain
    are all shown, since the evidence cannot tell them apart."""
    names = _axis_names(structure, args, kwargs, rights)
    wrong = [(index, got, right.astype(np.float64))
             for index, (got, right) in enumerate(zip(results, rights))
             if not close(got, right, tolerance) and np.all(np.isfinite(right))]
    classes = (lambda got, right, names: _axes_moved(got, right, names, tolerance),
               lambda got, right, names: _normalised_elsewhere(got, right, names, tolerance),
               lambda got, right, names: _constant_factor(structure, args, kwargs, got,
                                                          right, tolerance),
               lambda got, right, names: _rows_scaled(got, right, names, tolerance),
               lambda got, right, names: _values_reordered(got, right, tolerance))
    found = []
    for explain in classes:
        for index, got, right in wrong:
            diagnosis = explain(got, right, names[index])
            if diagnosis:
                found.append((index, diagnosis))
                break
    return [_of_part(diagnosis, index, structure.parts) if pair else diagnosis
            for index, diagnosis in _without_implied(found)]


# A class here gives way to the classes it is implied by, on the same result: every
# permutation or reversal of the axes reorders the values, a normalised result with its
# axes swapped sums to 1 along another axis, and a factor common to every entry, or one
# sum for the whole array, is a factor per row too.
IMPLIED_BY = {
    "structure/values-reordered": {"structure/axes-swapped", "structure/axes-permuted",
                                   "structure/axis-reversed"},
    "structure/normalised-along-another-axis": {"structure/axes-swapped",
                                                "structure/axes-permuted"},
    "structure/each-row-off-by-a-factor": {"structure/constant-factor",
                                           "structure/unexplained-factor",
                                           "structure/normalised-over-whole-array"},
}


# A factor that equals a size names its scaling step; one that equals none is only what
# was seen, with what can cause it (an earlier step off alike everywhere, too).
FACTOR_CLASSES = ("structure/constant-factor", "structure/unexplained-factor")


def _without_implied(found):
    """[(result index, Diagnosis)] less what another entry implies. A result of a pair
    that is only off by a constant factor, beside another result that something else
    explains, follows from it (weights scaled by c scale the output by c)."""
    kept = [(index, d) for index, d in found
            if d.stands_alone or not any(other.id in IMPLIED_BY.get(d.id, ())
                                         and where == index for where, other in found)]
    if len({index for index, _ in kept}) > 1:
        kept = [(index, d) for index, d in kept if d.id not in FACTOR_CLASSES
                or not any(where != index for where, _ in kept)]
    return kept


def _one_of(found):
    """Several explanations of one wrong result, listed without picking one."""
    tag = "structure/one-of(" + "|".join(d.id.removeprefix("structure/") for d in found) + ")"
    texts = []
    for language in LANGUAGES:
        listed = " ".join(f"({number}) {d.text(language)}"
                          for number, d in enumerate(found, 1))
        texts.append(spaced(pick(TEXTS["structure-one-of"], language).format(listed=listed)))
    return Diagnosis(tag, *texts)


def _of_part(found, index, parts):
    """A pair's diagnosis says which of its results it is about."""
    part = ({language: parts[index] for language in LANGUAGES} if index < len(parts)
            else words("structure-result-number", number=index + 1))
    return Diagnosis(found.id, *(pick(TEXTS["structure-of-part"], language).format(
        part=part[language], text=found.text(language)) for language in LANGUAGES))


def _axis_names(structure, args, kwargs, rights):
    """Per result, a name for each of its axes: the exercise's names for the core axes,
    B (or B1, B2...) for the batch axes before them; None where they are not known."""
    try:
        cores = structure.axes(args, kwargs) if structure.axes else None
    except Exception:  # noqa: BLE001 - unusual inputs: no names, numbers instead
        cores = None
    names = []
    for index, right in enumerate(rights):
        core = tuple(cores[index]) if cores and index < len(cores) else None
        lead = right.ndim - len(core) if core is not None else -1
        if lead < 0:
            names.append(None)
            continue
        batch = ("B",) if lead == 1 else tuple(f"B{i + 1}" for i in range(lead))
        names.append(batch + core)
    return names


# ------------------------------------------------------------------ constant factor

def _constant_factor(structure, args, kwargs, got, right, tolerance):
    factor = _common_factor(got, right, tolerance)
    if factor is None:
        return None
    candidates = _factor_candidates(structure, args, kwargs)
    slack = 1e-3 if tolerance["rtol"] > 1e-5 else 1e-6
    matching = [phrase for value, phrase in candidates
                if math.isclose(factor, value, rel_tol=slack)]
    big = np.abs(right) > 1e-3 * np.max(np.abs(right))
    if not matching and len(np.unique(np.round(right[big], 9))) < 2:
        return None  # one number (or all alike) fits any factor: only a size is news
    if not matching:
        known = ", ".join(symbol for symbol, _ in _sizes(structure, args, kwargs))
        key = "structure-factor-unknown" if known else "structure-factor-unnamed"
        return both("structure/unexplained-factor", key, sizes=known)
    if len(matching) == 1:
        return both("structure/constant-factor", "structure-factor", phrase=matching[0])
    joined = {language: pick(TEXTS["structure-or"], language).join(
        phrase[language] for phrase in matching[:3]) for language in LANGUAGES}
    return both("structure/constant-factor", "structure-factor-ambiguous", phrases=joined)


def _common_factor(got, right, tolerance):
    """c when got is c times right everywhere (c not 0 or 1), else None."""
    if got.shape != right.shape or not np.all(np.isfinite(got)):
        return None
    scale = np.max(np.abs(right), initial=0.0)
    big = np.abs(right) > 1e-3 * scale
    if scale == 0 or not np.any(big):
        return None
    factor = float(np.median(got[big] / right[big]))
    if abs(factor) < 1e-12 or math.isclose(factor, 1.0, rel_tol=1e-9):
        return None
    return factor if all_close(got, factor * right, **tolerance) else None


def _sizes(structure, args, kwargs):
    try:
        sizes = structure.sizes(args, kwargs) if structure.sizes else []
    except Exception:  # noqa: BLE001 - unusual inputs: no sizes to name
        return []
    return [(symbol, float(value)) for symbol, value in sizes if value and value != 1]


def _factor_candidates(structure, args, kwargs):
    """[(value, {language: phrase})]: each way the call's sizes give a factor, those the
    same for every input only once (dividing by √d_k twice is dividing by d_k)."""
    sizes = _sizes(structure, args, kwargs)
    values = dict(sizes)
    divisor = {s: p for s, p in (structure.divisor or {}).items() if s in values}
    found, seen = [], set()

    def add(powers, key, **fields):
        powers = {s: p for s, p in powers.items() if p}
        signature = tuple(sorted(powers.items()))
        if not powers or signature in seen:  # no powers: the factor 1, the right result
            return
        seen.add(signature)
        found.append((math.prod(values[s] ** p for s, p in powers.items()),
                      words(key, **fields)))

    if divisor:
        add(divisor, "structure-phrase-missing", right=_symbol(divisor))
    for symbol, _ in sizes:
        for power in (0.5, 1):
            name = _symbol({symbol: power})
            add({symbol: power}, "structure-phrase-times", size=name)
            add({symbol: -power}, "structure-phrase-over", size=name)
    for symbol, _ in sizes if divisor else ():
        for power in (0.5, 1):
            name, right = _symbol({symbol: power}), _symbol(divisor)
            add(_times(divisor, {symbol: -power}), "structure-phrase-over-instead",
                size=name, right=right)
            add(_times(divisor, {symbol: power}), "structure-phrase-times-instead",
                size=name, right=right)
    found.append((-1.0, words("structure-phrase-sign")))
    return found


def _times(a, b):
    keys = set(a) | set(b)
    return {k: a.get(k, 0) + b.get(k, 0) for k in keys}


def _symbol(powers):
    (symbol, power), = powers.items()
    return f"√{symbol}" if power == 0.5 else symbol


# ------------------------------------------------------------------ values moved

def _axes_moved(got, right, names, tolerance):
    """The right values with the axes permuted, or one axis reversed."""
    if got.size != right.size or right.ndim < 1:
        return None
    labels = names or tuple(str(i) for i in range(right.ndim))
    if got.shape == right.shape:
        for axis in range(right.ndim):
            if right.shape[axis] > 1 and close(got, np.flip(right, axis), tolerance):
                return both("structure/axis-reversed", "structure-reversed",
                            axis=_axis_label(axis, right.ndim, names))
    if right.ndim > 5:  # 720 orders and more: too many to try
        return None
    orders = sorted(itertools.permutations(range(right.ndim)),
                    key=lambda order: sum(i != a for i, a in enumerate(order)))
    for order in orders[1:]:
        moved = np.transpose(right, order)
        if moved.shape == got.shape and close(got, moved, tolerance):
            return _permuted(order, labels, names)
    return None


def _permuted(order, labels, names):
    shown = "(" + ", ".join(labels[a] for a in order) + ")"
    wanted = "(" + ", ".join(labels) + ")"
    swapped = [i for i, a in enumerate(order) if i != a]
    if len(swapped) == 2:
        first, second = (_axis_label(a, len(order), names) for a in swapped)
        return both("structure/axes-swapped", "structure-swapped", got=shown, expected=wanted,
                    first=first, second=second)
    return both("structure/axes-permuted", "structure-permuted", got=shown, expected=wanted)


def _axis_label(axis, ndim, names):
    if names:
        return words("structure-named-axis", name=names[axis])
    return words("structure-numbered-axis", axis=axis, negative=axis - ndim)


def _values_reordered(got, right, tolerance):
    """Every right number is there, but elsewhere (a reshape that reads another order)."""
    if got.size != right.size or right.size < 2 or np.ptp(right) == 0:
        return None
    if all_close(np.ravel(got), np.ravel(right), **tolerance):
        return None  # the same order, only another shape: the shape's own message
    if not all_close(np.sort(got, axis=None), np.sort(right, axis=None), **tolerance):
        return None
    return both("structure/values-reordered", "structure-reordered")


# ------------------------------------------------------------------ normalisation

def _normalised_elsewhere(got, right, names, tolerance):
    """For a result that sums to 1 along an axis: the sums of ``got`` say which axis
    (or the whole array, or each row by its own factor) it was normalised by."""
    if got.shape != right.shape or right.ndim < 1:
        return None
    axes = _normalised_axes(right)
    if not axes or not np.all(np.isfinite(got)) or np.any(got < -tolerance["atol"]):
        return None
    if any(_sums_to_one(got, axis) for axis in axes):
        return None  # normalised along a right axis: some other mistake
    wanted = _axis_label(axes[-1], right.ndim, names)
    others = [a for a in range(got.ndim) if a not in axes and got.shape[a] > 1
              and _sums_to_one(got, a)]
    if others:
        found = both("structure/normalised-along-another-axis", "structure-other-axis",
                     got=_axis_label(others[0], right.ndim, names), expected=wanted)
        return replace(found, stands_alone=_renormalised(got, right, others[0], axes[-1],
                                                         tolerance))
    if right.size > right.shape[axes[-1]] and math.isclose(float(np.sum(got)), 1.0,
                                                          rel_tol=1e-6, abs_tol=1e-6):
        return both("structure/normalised-over-whole-array", "structure-whole", expected=wanted)
    return None


def _renormalised(got, right, other, wanted, tolerance):
    """Whether ``got`` is the right result's exponentials (up to a shift per slice along
    ``wanted``) normalised along ``other`` instead: then got / right is a factor per
    slice along ``wanted`` over one per slice along ``other``. Swapped axes give that
    only where the scores are symmetric, and there the evidence cannot tell the two apart.
    """
    if not (np.all(right > 0) and np.all(got > 0)):
        return False
    with np.errstate(all="ignore"):
        ratio = np.log(got) - np.log(right)
    rest = (ratio - np.mean(ratio, axis=wanted, keepdims=True)
            - np.mean(ratio, axis=other, keepdims=True)
            + np.mean(ratio, axis=(wanted, other), keepdims=True))
    return bool(np.all(np.isfinite(rest)) and np.max(np.abs(rest)) < 10 * tolerance["rtol"])


def _rows_scaled(got, right, names, tolerance):
    """For a result that sums to 1 along an axis: each row right up to its own factor."""
    if got.shape != right.shape or not np.all(np.isfinite(got)):
        return None
    axes = _normalised_axes(right)
    if axes and _each_row_scaled(got, right, axes[-1]):
        return both("structure/each-row-off-by-a-factor", "structure-row-factor",
                    axis=_axis_label(axes[-1], right.ndim, names))
    return None


def _normalised_axes(right):
    """The axes (longer than 1) along which the right result sums to 1. Where it sums to 1
    along several (uniform weights), the last is named, as numpy's axis=-1 would be: the
    right result alone cannot tell which the function normalises along."""
    return [a for a in range(right.ndim) if right.shape[a] > 1 and _sums_to_one(right, a)]


def _sums_to_one(x, axis):
    """x >= 0 and each slice along ``axis`` sums to 1 (or is all zeros: a row the mask
    empties), with at least one slice that sums to 1."""
    if np.any(x < -1e-9):
        return False
    sums = np.sum(x, axis=axis)
    empty = np.all(x == 0, axis=axis)
    return bool(np.any(~empty) and all_close(sums[~empty], 1.0, rtol=1e-5, atol=1e-6))


def _each_row_scaled(got, right, axis):
    """got is right times a factor that is the same along ``axis`` but differs between
    rows: the normalisation divides by another sum than the row's."""
    positive = right > 1e-12
    if not np.all(np.where(positive, True, np.abs(got) < 1e-12)):
        return False
    if not np.any(positive):
        return False
    ratio = got / np.where(positive, right, 1.0)
    low = np.min(np.where(positive, ratio, np.inf), axis=axis)
    high = np.max(np.where(positive, ratio, -np.inf), axis=axis)
    unused = np.isinf(low)  # a row the mask empties: nothing to compare
    # A row of equal numbers is proportional to anything constant, and a factor 0 is
    # no result at all: neither is evidence of a division by another sum.
    varied = (np.max(np.where(positive, right, -np.inf), axis=axis)
              - np.min(np.where(positive, right, np.inf), axis=axis)) > 1e-9
    if np.any(~unused & np.isclose(low, 0.0, atol=1e-12)) or not np.any(varied & ~unused):
        return False
    return bool(np.all(unused | np.isclose(low, high, rtol=1e-5, atol=1e-9)))


# ------------------------------------------------------------------ regions

def _by_region(structure, args, kwargs, results, rights, expected, tolerance):
    """Right everywhere except in one region that a mask decides."""
    if structure.regions is None or any(g.shape != r.shape for g, r in zip(results, rights)):
        return None
    try:
        regions = structure.regions(args, kwargs, expected)
    except Exception:  # noqa: BLE001 - inputs the regions do not apply to
        return None
    for region in regions:
        where = [np.broadcast_to(np.asarray(w, dtype=bool), r.shape)
                 for w, r in zip(region.where, rights)]
        inside = sum(int(np.sum(w)) for w in where)
        if inside == 0 or inside == sum(r.size for r in rights):
            continue
        if all(all_close(np.where(w, 0.0, g), np.where(w, 0.0, r), **tolerance)
               for g, r, w in zip(results, rights, where)):
            nan = any(np.any(np.isnan(g[w])) for g, w in zip(results, where))
            found = words("structure-found-nan" if nan else "structure-found-wrong")
            return Diagnosis(region.id, spaced(region.zh.format(found=found["zh"])),
                             region.en.format(found=found["en"]))
    return None


# ------------------------------------------------------------------ batch items

def _by_batch_items(structure, args, kwargs, got, rights, tolerance, call_again):
    """Right for the first and the last batch item alone (and maybe with one batch axis
    fewer), wrong or raising with all of them: three more calls at most."""
    try:
        cut = Cut(structure.core(args, kwargs), args, kwargs, rights)
    except (TypeError, ValueError):  # no batch axes, or inputs the cores do not fit
        return None
    found = words("structure-batch-raised" if got is RAISED else "structure-batch-wrong")
    shape = str(cut.batch)
    # One batch axis fewer first: code that numbers the axes from the front works there
    # and fails on a single item as it does on the whole.
    if len(cut.batch) > 1 and _right_again(cut, (0,), tolerance, call_again):
        return both("structure/wrong-with-more-batch-axes", "structure-more-batch-axes",
                    found=found, shape=shape, count=len(cut.batch))
    ends = list(dict.fromkeys([tuple(0 for _ in cut.batch),
                               tuple(n - 1 for n in cut.batch)]))
    if not all(_right_again(cut, index, tolerance, call_again) for index in ends):
        return None
    return both("structure/wrong-with-batch-axes", "structure-batch-axes", found=found,
                shape=shape)


def _right_again(cut, index, tolerance, call_again):
    args, kwargs = cut.inputs_at(index)
    try:
        value, right = call_again(args, kwargs)
    except Exception:  # noqa: BLE001 - it raises for one item too: not this class
        return False
    rights = cut.results_at(index) if right is None else (
        right if isinstance(right, tuple) else (right,))
    values = _as_arrays(value, len(rights))
    return values is not None and all(close(v, np.asarray(r), tolerance)
                                      for v, r in zip(values, rights))


class Cut:
    """The inputs and right results of one call, cut to one batch item (or along the
    first batch axes only). ``core`` is what ``Structure.core`` gives: the number of
    trailing axes that make one item, per input and per result; the batch axes are the
    leading ones, broadcast together, as numpy's generalised ufuncs read them."""

    def __init__(self, core, args, kwargs, rights):
        if core is None:
            raise ValueError("no batch axes here")
        arg_cores, kwarg_cores, result_cores = core
        self.args, self.kwargs, self.rights = args, kwargs, rights
        self.arg_cores = [arg_cores[i] if i < len(arg_cores) else None
                          for i in range(len(args))]
        self.kwarg_cores = {k: kwarg_cores.get(k) for k in kwargs}
        arrays = [(a, c) for a, c in list(zip(args, self.arg_cores))
                  + [(kwargs[k], c) for k, c in self.kwarg_cores.items()]
                  if c is not None and isinstance(a, np.ndarray)]
        if any(a.ndim < c for a, c in arrays):
            raise ValueError("an input has fewer axes than one item")
        leads = [a.shape[:a.ndim - c] for a, c in arrays]
        self.batch = tuple(int(n) for n in np.broadcast_shapes(*leads)) if leads else ()
        if not self.batch or len(result_cores) != len(rights) or any(
                r.shape[:r.ndim - c] != self.batch for r, c in zip(rights, result_cores)):
            raise ValueError("no batch axes here")

    def inputs_at(self, index):
        args = tuple(self._cut(a, c, index) for a, c in zip(self.args, self.arg_cores))
        kwargs = {k: self._cut(v, self.kwarg_cores[k], index) for k, v in self.kwargs.items()}
        return args, kwargs

    def _cut(self, value, core, index):
        if core is None or not isinstance(value, np.ndarray):
            return value
        start = len(self.batch) - (value.ndim - core)  # the batch axis of its axis 0
        picks = [0 if value.shape[axis - start] == 1 else index[axis]
                 for axis in range(start, len(index))]
        return np.array(value[tuple(picks)])

    def results_at(self, index):
        return tuple(np.array(r[index]) for r in self.rights)


# ------------------------------------------------------------------ as a namer

def structural_namer(structures, expected_for, by_results=None):
    """A namer (see runner.run_check) that diagnoses from structure, with the right
    result from ``expected_for(function, args, kwargs)`` (None: not known, no name).
    ``by_results(function)``, if given, is ``diagnose``'s ``by_results`` for it."""
    def name(function, args, kwargs, got, language, student=None):
        expected = expected_for(function, args, kwargs)
        if expected is None:
            return None
        again = None if student is None else _calling(student, function)
        found = safely(diagnose, structures.get(function), args, kwargs, got, expected,
                       call_again=again,
                       by_results=None if by_results is None else by_results(function))
        return None if found is None else (found.id, found.text(language))
    return name


def safely(diagnosis, *args, **kwargs):
    """A diagnosis, or None where it fails: naming a mistake is a help, and a result odd
    enough to trip it must still get its check's own message."""
    try:
        with np.errstate(all="ignore"):
            return diagnosis(*args, **kwargs)
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def _calling(student, function):
    def call(args, kwargs):
        return student.call(function, *args, **kwargs), None
    return call
