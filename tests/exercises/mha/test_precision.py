"""A diagnosis claims only what its evidence proves (issue 25): on a corpus of mistakes
nobody catalogued, every tag the grader and the self-check give names a true cause, in
both languages; and the self-check agrees with the hidden grade on each of them.

A tag names causes: a catalogue id or a class names itself; "structure/one-of(a|b|c)"
lists structure/a, structure/b and structure/c without picking one, and is right when any
of them is. A tag of a pair's result names the same causes as the plain tag. The corpus
says, per mistake, which causes are true (tests/exercises/mha/precision_corpus.py).
"""

import re
from functools import lru_cache

import pytest

from mhakit.selfcheck.runner import PASSED
from tests.conftest import grade_answers
from tests.exercises.mha.precision_corpus import MISTAKES as CORPUS
from tests.exercises.mha.test_agreement import CODE_POINTS, UNLISTED, verdicts
from tests.grader.test_diagnosis import ALL, EDITS, self_check
from tests.grader.test_structural_diagnosis import MISTAKES
from tests.mha_exercise import POINTS, reference_body, sample_answers

LANGUAGES = ("zh", "en")
ONE_OF = re.compile(r"^structure/one-of\((?P<causes>[^()]*)\)$")


def causes(tag):
    """The causes a tag names: "structure/one-of(a|b)" -> {"structure/a", "structure/b"};
    any other tag names itself."""
    match = ONE_OF.match(tag)
    if match is None:
        return {tag}
    return {f"structure/{cause}" for cause in match["causes"].split("|") if cause}


def is_correct(tag, function, ok, wrong_function=None):
    """Whether ``tag``, given on a check of ``function``, names a true cause: any cause it
    lists is in OK, plainly or as "<function>:<tag>" (true on that function's checks).
    "A piece this check runs first is wrong" is true on any function but the wrong one,
    since each entry gets only ``wrong_function`` wrong."""
    if tag == "general/piece-wrong" and wrong_function is not None:
        return function != wrong_function
    return any(cause in ok or f"{function}:{cause}" in ok for cause in causes(tag))


def test_the_parse_of_tags():
    assert causes("structure/one-of(axes-swapped|constant-factor)") == {
        "structure/axes-swapped", "structure/constant-factor"}
    assert causes("structure/constant-factor") == {"structure/constant-factor"}
    assert causes("attention/mask-inverted") == {"attention/mask-inverted"}
    assert is_correct("structure/one-of(a|b)", "softmax", {"structure/b"})
    assert not is_correct("structure/one-of(a|b)", "softmax", {"structure/c"})
    assert is_correct("structure/a", "softmax", {"softmax:structure/a"})
    assert not is_correct("structure/a", "attention", {"softmax:structure/a"})
    assert is_correct("general/piece-wrong", "concat_heads", set(), "split_heads")
    assert not is_correct("general/piece-wrong", "split_heads", set(), "split_heads")


def answers_with(name):
    function, edits, _, _ = CORPUS[name]
    source = reference_body(function)
    for old, new in edits:
        assert old in source, (name, old)
        source = source.replace(old, new, 1)
    return dict(sample_answers()["alice_correct"], **{f"answer_{function}": source})


@lru_cache(maxsize=None)
def graded(name, language):
    return grade_answers(answers_with(name), seed=17, language=language)


def wrong_names(name, language):
    """Every tag of a non-passed hidden test or self-check result that names no true
    cause: (door, language, test, tag, message)."""
    wrong_function, _, ok, _ = CORPUS[name]
    wrong = []
    for test in graded(name, language).tests:
        if test.status == "passed":
            continue
        function = test.name.split(":")[0]
        wrong += [("grader", language, test.name, tag, test.output)
                  for tag in test.tags
                  if not is_correct(tag, function, ok, wrong_function)]
    for result in self_check(answers_with(name), language):
        if result.status == PASSED:
            continue
        function = result.check.function
        wrong += [("self-check", language, result.check.name,
                   tag, result.message)
                  for tag in result.tags if not is_correct(tag, function, ok, wrong_function)]
    return wrong


def test_the_corpus_is_large_and_covers_every_function():
    assert len(CORPUS) >= 40
    per_function = {function: 0 for function in POINTS}
    for function, *_ in CORPUS.values():
        per_function[function] += 1
    assert all(count >= 4 for count in per_function.values()), per_function
    assert per_function["attention"] >= 6 and per_function["multi_head_attention"] >= 6


def test_none_of_the_corpus_is_catalogued_or_already_tested():
    known = {(function, tuple(map(tuple, edits)))
             for function, edits, *_ in [*EDITS.values(), *UNLISTED.values(), *MISTAKES.values()]}
    assert not {(function, tuple(map(tuple, edits))) for function, edits, *_ in CORPUS.values()} & known
    # OK names only tags that exist: catalogue ids, structure/* classes, general/* checks.
    for _, _, ok, why in CORPUS.values():
        assert why
        for tag in ok:
            tag = tag.split(":", 1)[-1]
            assert tag in ALL or tag.startswith(("structure/", "general/")), tag


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_no_diagnosis_names_a_wrong_cause(name):
    wrong = [w for language in LANGUAGES for w in wrong_names(name, language)]
    assert not wrong, f"{name}: {len(wrong)} wrong name(s)\n" + "\n".join(
        f"  [{door}, {language}] {test}: {tag}\n      {message[:600]!r}"
        for door, language, test, tag, message in wrong)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_is_a_real_mistake_and_the_self_check_agrees(name):
    """Every entry loses points in the hidden grade, and the self-check is not green."""
    green, points = verdicts(answers_with(name))
    assert points < CODE_POINTS, f"{name}: the hidden grade does not catch it ({points})"
    assert green == (points == CODE_POINTS), (green, points)
