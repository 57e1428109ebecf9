"""No feedback text, in either language, holds a hidden input, an expected value, or a
line of the hidden checks' code: the student's output minus a shown difference would
be the answer, and the hidden inputs would let anyone fit them."""

import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

import solutions
from autograder import cell_outputs, hidden_checks, mistakes
from autograder.feedback import feedback_html, feedback_markdown
from autograder.grading import PARTS, ordered_checks, prepared_for

from .conftest import grade_answers
from .test_diagnosis import EDITS, GENERAL, edited

SEED = 23
# Token types that are not code; f-strings have their own types from Python 3.12.
NOT_CODE = {getattr(tokenize, name) for name in (
    "STRING", "COMMENT", "NL", "NEWLINE", "INDENT", "DEDENT", "FSTRING_START",
    "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)


def hidden_numbers():
    """Every hidden input and expected value, rounded to 4 significant digits."""
    plans, _ = prepared_for(SEED)
    found = set()
    for (_, chk), calls in zip(ordered_checks(), plans):
        if chk.tier != "hidden":
            continue
        for call in calls:
            if call.variable:
                continue
            with np.errstate(all="ignore"):
                expected = getattr(solutions, call.name)(*call.args, **call.kwargs)
            for array in _arrays((call.args, call.kwargs, expected)):
                if array.dtype.kind == "f":
                    values = array[np.isfinite(array)].ravel()
                    found.update(f"{v:.4g}" for v in values if abs(v) >= 1e-3)
    return found


def leaked_numbers(text, hidden):
    """Numbers in ``text`` precise enough to be read off a hidden array."""
    def significant_digits(token):
        return len(re.sub(r"\D", "", token.split("e")[0]).lstrip("0"))

    return {t for t in NUMBER.findall(text)
            if significant_digits(t) >= 4 and f"{float(t):.4g}" in hidden}


def code_lines(module):
    """The lines of a module's code without its strings, comments and spaces."""
    source = Path(module.__file__).read_text(encoding="utf-8")
    lines = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in NOT_CODE:
            continue
        lines.setdefault(token.start[0], []).append(token.string)
    return {"".join(parts) for parts in lines.values() if len("".join(parts)) >= 20}


def feedback_texts(result):
    texts = [feedback_markdown("student", result), feedback_html("student", result)]
    for part in PARTS:
        for output in cell_outputs.test_cell_outputs(part, 10, result):
            texts += [output.get("text", ""), output.get("evalue", ""),
                      "\n".join(output.get("traceback", [])),
                      output.get("data", {}).get("text/plain", "")]
    return "\n".join(texts)


@pytest.fixture(scope="module")
def every_feedback(reference_answers):
    """The feedback on each wrong submission of the corpus, in both languages."""
    submissions = [edited(reference_answers, function, edits)
                   for function, edits in EDITS.values()]
    submissions += [edited(reference_answers, function, edits)
                    for function, edits, _ in GENERAL.values()]
    return [feedback_texts(grade_answers(answers, seed=SEED, language=language))
            for answers in submissions for language in ("zh", "en")]


def test_the_detectors_find_what_they_look_for():
    hidden = hidden_numbers()
    assert len(hidden) > 1000
    plans, _ = prepared_for(SEED)
    an_input = next(call.args[0] for (_, chk), calls in zip(ordered_checks(), plans)
                    for call in calls if chk.tier == "hidden" and call.name == "softmax")
    shown = repr(float(an_input.ravel()[-1]))
    assert leaked_numbers(f"x[-1] = {shown}", hidden) == {shown}
    assert leaked_numbers("largest relative error 0.53, 50% off, 1/3", hidden) == set()
    lines = code_lines(hidden_checks)
    assert "expected=getattr(solutions,name)(*args,**kwargs)" in lines


def test_no_feedback_holds_a_hidden_number(every_feedback):
    hidden = hidden_numbers()
    for text in every_feedback:
        assert leaked_numbers(text, hidden) == set()
    # The texts did say what went wrong: the corpus is all wrong submissions.
    assert all("✗" in text for text in every_feedback)


def test_no_feedback_holds_the_hidden_checks_code(every_feedback):
    lines = code_lines(hidden_checks) | code_lines(mistakes)
    for text in every_feedback:
        unspaced = "".join(text.split())
        assert [line for line in lines if line in unspaced] == []
        assert "def " not in text and "BEGIN HIDDEN" not in text
