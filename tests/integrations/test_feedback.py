"""mhakit/integrations/feedback.py and every other text a student reads after grading.

No feedback text, in either language, holds a hidden input, an expected value, or a
line of the hidden checks' code: the student's output minus a shown difference would
be the answer, and the hidden inputs would let anyone fit them.

Not even when the submission itself tries to put them there (tests/attacks/on_feedback.py):
the feedback is searched for every encoding those attacks use, each candidate is decoded,
and the decoded numbers are compared with the real hidden numbers of the seed."""

import base64
import binascii
import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

from mhakit.exercises.mha import reference
from mhakit.integrations import cell_outputs
from mhakit.grader import diagnosis, hidden_checks
from mhakit.sandbox import sanitize
from mhakit.integrations.feedback import feedback_html, feedback_markdown
from mhakit.grader.grading import ordered_checks, prepared_for
from tests.mha_exercise import EXERCISE
from tests.attacks.corpus import ATTACKS  # noqa: F401 - first: it gathers on_feedback.py too
from tests.attacks.on_feedback import FEEDBACK_ATTACKS
from tests.conftest import grade_answers
from tests.exercises.mha.test_agreement import UNLISTED
from tests.grader.test_diagnosis import EDITS, GENERAL, edited
from tests.grader.test_structural_diagnosis import MISTAKES as UNNAMED
from tests.integrations.test_cli import mhakit

PARTS = EXERCISE.parts
mistakes = EXERCISE.content("mistakes")
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


def _values_of_tier(tier):
    plans, _ = prepared_for(SEED)
    found = []
    for chk, calls in zip(ordered_checks(), plans):
        if chk.tier != tier:
            continue
        for call in calls:
            if call.variable:
                continue
            try:  # a public check may call with invalid input on purpose
                with np.errstate(all="ignore"):
                    expected = getattr(reference, call.name)(*call.args, **call.kwargs)
            except ValueError:
                expected = None
            for array in _arrays((call.args, call.kwargs, expected)):
                if array.dtype.kind == "f":
                    values = array[np.isfinite(array)].ravel().astype(float)
                    found.extend(v for v in values if abs(v) >= 1e-3)
    return found


def hidden_values():
    """Every hidden input and expected value (of at least 1e-3 in size), as floats; not
    those that a public check uses too (1e4, say), which ship with the self-check."""
    public = {f"{v:.4g}" for v in _values_of_tier("public")}
    return [v for v in _values_of_tier("hidden") if f"{v:.4g}" not in public]


def hidden_numbers():
    """Every hidden input and expected value, rounded to 4 significant digits."""
    return {f"{v:.4g}" for v in hidden_values()}


def leaked_numbers(text, hidden):
    """Numbers in ``text`` precise enough to be read off a hidden array."""
    def significant_digits(token):
        return len(re.sub(r"\D", "", token.split("e")[0]).lstrip("0"))

    return {t for t in NUMBER.findall(text)
            if significant_digits(t) >= 4 and f"{float(t):.4g}" in hidden}


ENGLISH_DIGITS = "zero one two three four five six seven eight nine".split()
CHINESE_DIGITS = "零一二三四五六七八九"


def _numbers_in_bytes(raw):
    """What bytes may carry: float64 values, or numbers written as text."""
    values = list(np.frombuffer(raw[:len(raw) // 8 * 8], dtype=np.float64))
    values += [float(t) for t in NUMBER.findall(raw.decode("latin-1"))]
    return values


def _scaled(digits):
    """A string of digits as the numbers it could be, wherever its decimal point was."""
    return [int(digits) / 10 ** k for k in range(0, 10)] if digits else []


def decoded_candidates(text):
    """Every number that the attacks' encodings could have put in ``text``, decoded."""
    found = []
    for token in re.findall(r"[A-Za-z0-9+/]{12,}={0,2}", text):  # base64
        body = token.rstrip("=")
        try:
            found += _numbers_in_bytes(base64.b64decode(body[:len(body) // 4 * 4]))
        except (binascii.Error, ValueError):
            pass
    for token in re.findall(r"[0-9a-fA-F]{16,}", text):  # hex of bytes
        found += _numbers_in_bytes(bytes.fromhex(token[:len(token) // 2 * 2]))
    for token in re.findall(r"0x[0-9a-fA-F](?:\.[0-9a-fA-F]+)?p[-+]?[0-9]+", text):
        found.append(float.fromhex(token))  # float.hex
    for token in re.findall(r"(?<![0-9.])[0-9]{4,}(?![0-9.])", text):  # axes, lengths
        found += _scaled(token)
    for run in re.findall(r"(?:[-.0-9]\s+){4,}[-.0-9]", text):  # one digit per line
        found += [float(t) for t in NUMBER.findall("".join(run.split()))]
    words = r"(?:%s)" % "|".join(ENGLISH_DIGITS)
    for run in re.findall(rf"{words}(?:\s+{words}){{3,}}", text, flags=re.I):
        found += _scaled("".join(str(ENGLISH_DIGITS.index(w.lower())) for w in run.split())[:8])
    for run in re.findall(f"[{CHINESE_DIGITS}]{{4,}}", text):
        found += _scaled("".join(str(CHINESE_DIGITS.index(c)) for c in run)[:8])
    return found


def digits_of(value):
    """The significant digits of a value, as the digit-per-call attack writes them."""
    return f"{abs(value):.6f}".replace(".", "").lstrip("0")


def leaked_encoded(text, hidden, values=()):
    """The decoded candidates of ``text`` that are hidden numbers (to 4 digits), either
    sign; and the hidden ``values`` whose digits agree with at least 4 of those that
    ``text`` gives one at a time, by position ("leak 2 7": digit 2 is 7)."""
    leaks = set()
    for value in decoded_candidates(text):
        shown = f"{value:.4g}" if np.isfinite(value) else ""
        # Four significant digits, as leaked_numbers asks: a 3 or a 0.25 is in any text.
        if abs(value) >= 1e-3 and len(re.sub(r"\D", "", shown.split("e")[0]).strip("0")) >= 4:
            leaks.update({shown, f"{-value:.4g}"} & hidden)
    positions = {int(i): d for i, d in re.findall(r"leak ([0-9]+) ([0-9])", text)}
    if len(positions) >= 4:
        for value in values:
            digits = digits_of(value)
            if all(i < len(digits) and digits[i] == d for i, d in positions.items()):
                leaks.add(f"{value:.4g}")
    return leaks


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
                    for function, edits in GENERAL.values()]
    # Mistakes nobody catalogued: their structural diagnoses speak of the hidden inputs' sizes.
    submissions += [edited(reference_answers, *entry[:2]) for entry in UNNAMED.values()]
    submissions += [edited(reference_answers, *entry) for entry in UNLISTED.values()]
    return [feedback_texts(grade_answers(answers, seed=SEED, language=language))
            for answers in submissions for language in ("zh", "en")]


def test_the_detectors_find_what_they_look_for():
    hidden = hidden_numbers()
    assert len(hidden) > 1000
    plans, _ = prepared_for(SEED)
    an_input = next(call.args[0] for chk, calls in zip(ordered_checks(), plans)
                    for call in calls if chk.tier == "hidden" and call.name == "softmax")
    shown = repr(float(an_input.ravel()[-1]))
    assert leaked_numbers(f"x[-1] = {shown}", hidden) == {shown}
    assert leaked_numbers("largest relative error 0.53, 50% off, 1/3", hidden) == set()
    lines = code_lines(hidden_checks)
    assert "expected=_expected(student,exercise,name,args,kwargs)" in lines


def test_no_feedback_holds_a_hidden_number(every_feedback):
    hidden = hidden_numbers()
    for text in every_feedback:
        assert leaked_numbers(text, hidden) == set()
    # The texts did say what went wrong: the corpus is all wrong submissions.
    assert all("✗" in text for text in every_feedback)


def test_no_feedback_holds_the_hidden_checks_code(every_feedback):
    lines = code_lines(hidden_checks) | code_lines(diagnosis) | code_lines(mistakes)
    for text in every_feedback:
        unspaced = "".join(text.split())
        assert [line for line in lines if line in unspaced] == []
        assert "def " not in text and "BEGIN HIDDEN" not in text


def test_the_encoded_detectors_find_each_encoding():
    """Each decoder finds a hidden input written the way an attack writes it, and nothing
    in the kit's own wording."""
    hidden, values = hidden_numbers(), hidden_values()
    value = next(v for v in values if abs(v) > 0.1 and len(digits_of(v)) >= 6)
    raw = np.array([value]).tobytes()
    text = f"{value:.6f}"
    digits = digits_of(value)
    written = {
        "base64 of bytes": base64.b64encode(raw * 2).decode(),
        "base64 of text": base64.b64encode(text.encode()).decode(),
        "hex of bytes": raw.hex(),
        "hex of text": text.encode().hex(),
        "float.hex": value.hex(),
        "an axis": f"has shape ({int(abs(value) * 1e6)}, 0)",
        "a length": f"a tuple of {int(abs(value) * 1e4)} items",
        "digits over lines": " ".join(text),
        "digits over calls": " ".join(f"leak {i} {d}" for i, d in enumerate(digits[:5])),
        "English words": " ".join(ENGLISH_DIGITS[int(d)] for d in digits),
        "Chinese numerals": "".join(CHINESE_DIGITS[int(d)] for d in digits),
    }
    for how, leak in written.items():
        assert leaked_encoded(f"✗ raised ValueError: {leak} —", hidden, values), how
    honest = ("softmax raised ValueError: operands could not be broadcast together with "
              "shapes (2,3,4) (2,5,4) — 4 × 512 × 512 = 1,048,576 [3/7] 50% off 0.53")
    assert leaked_encoded(honest, hidden, values) == set()


@pytest.fixture(scope="module")
def attacked_feedback(reference_answers):
    """The feedback on each attack on feedback, in both languages: {attack name: [texts]}."""
    return {attack.name: [feedback_texts(grade_answers(dict(reference_answers, **attack.edits),
                                                       seed=SEED, language=language))
                          for language in ("zh", "en")]
            for attack in FEEDBACK_ATTACKS}


def test_no_feedback_holds_a_hidden_number_in_any_encoding(every_feedback, attacked_feedback):
    hidden, values = hidden_numbers(), hidden_values()
    for text in every_feedback:
        assert leaked_encoded(text, hidden, values) == set()
    for name, texts in attacked_feedback.items():
        for text in texts:
            assert leaked_encoded(text, hidden, values) == set(), name
            assert leaked_numbers(text, hidden) == set(), name
            assert "✗" in text, name  # the attack's function failed, and the feedback says so


def test_the_attacks_would_leak_without_the_sanitiser(reference_answers, monkeypatch):
    """With student text and shapes shown as they are, every attack on feedback does put
    hidden numbers into its feedback: so the test above is a test of the sanitiser."""
    from mhakit.sandbox import student

    as_it_is = lambda text, *args, **kwargs: str(text)  # noqa: E731
    monkeypatch.setattr(sanitize, "student_text", as_it_is)
    monkeypatch.setattr(student, "student_text", as_it_is)  # where deliver() finds it
    monkeypatch.setattr(hidden_checks, "student_text", as_it_is)
    monkeypatch.setattr(sanitize, "shape_text", lambda shape, *args: str(tuple(shape)))
    monkeypatch.setattr(sanitize, "count_text", lambda count, *args: str(count))
    hidden, values = hidden_numbers(), hidden_values()
    for attack in FEEDBACK_ATTACKS:
        result = grade_answers(dict(reference_answers, **attack.edits), seed=SEED, language="en")
        assert leaked_encoded(feedback_texts(result), hidden, values), attack.name


def test_honest_errors_stay_readable_in_the_feedback(reference_answers):
    """A function that fails the way honest code fails still shows numpy's words and the
    call's own shapes."""
    answers = dict(reference_answers, answer_attention_scores=(
        "def attention_scores(Q, K):\n"
        "    return np.asarray(Q) + np.asarray(K)  # forgot the transpose and the product\n"))
    outputs = [t.output for t in grade_answers(answers, seed=SEED, language="en").tests
               if t.name.startswith("attention_scores:") and "raised" in t.output]
    assert outputs, "attention_scores should have raised on some check"
    assert any("ValueError: operands could not be broadcast together with shapes" in text
               and re.search(r"\([0-9]+(,[0-9]+)*\) \([0-9]+(,[0-9]+)*\)", text)
               for text in outputs), outputs


# ------------------------------------------------ each student's feedback file

def test_each_student_gets_a_feedback_file_that_names_the_mistakes(course, tmp_path):
    from tests.mha_exercise import CATALOGUE

    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6", "--quiet")
    assert done.returncode == 0, done.stderr
    hints = {m.id: m for ms in CATALOGUE.values() for m in ms}
    markdown = (out / "bob_partly_correct" / "feedback.md").read_text(encoding="utf-8")
    page = (out / "bob_partly_correct" / "feedback.html").read_text(encoding="utf-8")
    assert "85 / 100" in markdown and "85 / 100" in page
    for mistake in ("softmax/no-max-subtraction", "split_heads/reshape-without-transpose"):
        assert hints[mistake].zh in markdown  # the sample notebooks are the Chinese release
    assert "<pre>" in page and "<script" not in page
    # multi_head_attention earned all its points: its failures cost nothing, and say why
    section = markdown.split("## multi_head_attention")[1].split("## ")[0]
    assert "已得满分" in section and "softmax、split_heads" in section
    assert "\n  ✗ " in section and "\n✗ " not in section
    alice = (out / "alice_correct" / "feedback.md").read_text(encoding="utf-8")
    assert "100 / 100" in alice and "✗" not in alice


# ------------------------------------------------ checks that cost no points

@pytest.fixture(scope="module")
def two_wrong_pieces():
    """Bob's notebook: softmax and split_heads wrong, multi_head_attention right."""
    from tests.mha_exercise import sample_answers

    return grade_answers(sample_answers()["bob_partly_correct"], seed=SEED, language="zh")


def test_the_feedback_file_says_which_failures_cost_nothing_and_why(two_wrong_pieces):
    markdown = feedback_markdown("bob", two_wrong_pieces)
    section = markdown.split("## multi_head_attention")[1].split("## ")[0]
    heading = next(line for line in section.splitlines() if line.startswith("不扣分"))
    assert "已得满分" in heading and "softmax、split_heads" in heading
    assert section.count("\n  ✗ ") >= 3 and "\n✗ " not in section
    page = feedback_html("bob", two_wrong_pieces)
    assert "softmax、split_heads" in page and "\n  ✗ " in page


def test_a_test_cell_at_full_points_shows_the_heading(two_wrong_pieces):
    outputs = cell_outputs.test_cell_outputs("multi_head_attention", 20, two_wrong_pieces)
    assert [o["output_type"] for o in outputs] == ["stream"]  # full marks in nbgrader
    assert "已得满分" in outputs[0]["text"] and "\n  ✗ " in outputs[0]["text"]


def test_a_failing_test_cell_names_a_check_that_cost_points(two_wrong_pieces):
    [error] = cell_outputs.test_cell_outputs("split_heads", 10, two_wrong_pieces)
    mine = [t for t in two_wrong_pieces.tests if t.name.startswith("split_heads:")]
    assert not mine[0].max_score and mine[0].status == "failed"  # a free one comes first
    costly = next(t for t in mine if t.max_score and t.status == "failed")
    assert error["evalue"] == costly.output != mine[0].output
    assert any(line.startswith("不扣分") for line in error["traceback"])
