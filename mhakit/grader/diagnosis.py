"""Naming a mistake: an exercise's catalogue of wrong variants, run on the failing inputs.

When a check finds wrong values, the grader runs the known wrong variants of that
function (the exercise's ``mistakes.CATALOGUE``) on the same inputs. If one of them gives
the student's output, the feedback names that mistake, with a hint, in the student's
language; its identifier goes into the test's ``tags`` in results.json, so that scripts
and the class report can count it. The variants stay on the instructor's side; the
self-check gets only their fingerprints (selfcheck/fingerprints.py).
"""

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..selfcheck.failed_call import RAISED
from ..selfcheck.fingerprints import first_named
from ..selfcheck.framework import all_close
from ..selfcheck.known_answers import by_call
from ..selfcheck.structure import from_results, structural_namer, structures_of
from ..selfcheck.wording import pick
from .memo import Memo, content_digest, content_key


@dataclass(frozen=True)
class Mistake:
    id: str
    variant: object  # a function, or a tuple of functions that are the same mistake
    zh: str
    en: str

    @property
    def variants(self):
        return self.variant if isinstance(self.variant, tuple) else (self.variant,)

    def text(self, language):
        return pick((self.zh, self.en), language)


def catalogue(exercise):
    """{function: [Mistake]} of the exercise; empty when it lists none."""
    if not (exercise.folder / "mistakes.py").exists():
        return {}
    return exercise.content("mistakes").CATALOGUE


_OUTPUTS = Memo()


def variant_outputs(exercise, function, args, kwargs):
    """[(mistake, its output on these inputs)] for each catalogued variant that applies,
    in the catalogue's order: what the grader compares and the build fingerprints. Kept
    for the next submission that fails on these very inputs (memo.py)."""
    return _OUTPUTS.get(content_key(exercise.name, function, args, kwargs),
                        lambda: list(_variant_outputs(exercise, function, args, kwargs)))


def _variant_outputs(exercise, function, args, kwargs):
    for mistake in catalogue(exercise).get(function, ()):
        for variant in mistake.variants:
            try:
                with np.errstate(all="ignore"):
                    wrong = variant(*args, **kwargs)
            except Exception:  # noqa: BLE001 - a variant that cannot apply to these inputs
                continue
            yield mistake, wrong


def diagnose(exercise, function, args, kwargs, got, tolerance):
    """The first catalogued mistake whose output on these inputs is ``got``; else None."""
    return examine(exercise, function, args, kwargs, got, tolerance)[0]


def examine(exercise, function, args, kwargs, got, tolerance):
    """(the first catalogued mistake whose output on these inputs is ``got``, or None;
    the ids of the mistakes that gave another output here: ``got`` rules them out)."""
    found, fitting, gave = None, set(), set()
    for mistake, wrong in variant_outputs(exercise, function, args, kwargs):
        gave.add(mistake.id)
        if _same_output(got, wrong, tolerance):
            fitting.add(mistake.id)
            found = found or mistake
    return found, frozenset(gave - fitting)


def name_by_variants(exercise, function, args, kwargs, got, language):
    """What fingerprints.name_mistake gives the self-check, from the variants themselves:
    (mistake id, hint in ``language``, ruled out), the first two None where none fits."""
    mistake, ruled_out = examine(exercise, function, args, kwargs, got,
                                 dict(rtol=1e-6, atol=1e-9))
    if mistake is None:
        return None, None, ruled_out
    return mistake.id, mistake.text(language), ruled_out


def namer(exercise):
    """``name_by_variants`` for one exercise, as the checks' runner takes it; where no
    variant matches, the structure of the wrong result against the known answer of the
    public call (never the reference on inputs the child may have chosen)."""
    return first_named(partial(name_by_variants, exercise),
                       structural_namer(structures_of(exercise.shipped),
                                        partial(by_call, exercise.shipped_folder),
                                        partial(kept_from_results, exercise)))


_EXPLAINED = Memo()


def kept_from_results(exercise, function):
    """structure.from_results for one of the exercise's functions, kept (memo.py) for
    the next submission whose result is the same on the same inputs, as every student
    with the same mistake has it in a class. It needs no call of the student's code:
    what it gives is a function of its arguments alone."""
    def by_results(structure, args, kwargs, got, expected, tolerance):
        def work_out():
            return from_results(structure, args, kwargs, got, expected, tolerance)

        if got is RAISED:  # nothing to read: nothing to keep
            return work_out()
        return _EXPLAINED.get(content_digest(exercise.name, function, args, kwargs, got,
                                             expected, sorted(tolerance.items())), work_out)
    return by_results


def _same_output(got, wrong, tolerance):
    if isinstance(wrong, tuple):
        return (isinstance(got, (tuple, list)) and len(got) == len(wrong)
                and all(_same_output(g, w, tolerance) for g, w in zip(got, wrong)))
    try:
        got, wrong = np.asarray(got, dtype=np.float64), np.asarray(wrong, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == wrong.shape and all_close(got, wrong, equal_nan=True, **tolerance)
