"""The self-check's own words (issue 25, part 3): a failing check's message said once, and
check("<part>") never raising, so Run All reaches the end while the Validate button still
scores the cell 0; "not run yet" told apart from "not written yet"; the table in the
notebook's order; "1 of 1 part passes"; "the Validate button"; an ASCII minus.

The self-check runs here in this process, on the exercise's shipped package as the
release ships it beside the self-check (``shipped`` below), in both languages."""

import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import mhakit.selfcheck as selfcheck
from mhakit.exercise import load
from mhakit.selfcheck import runner, wording
from mhakit.selfcheck.framework import InProcessStudent, NotDefinedYet
from mhakit.selfcheck.runner import (FAILED, NOT_DEFINED, NOT_IMPLEMENTED, NOT_RUN,
                                         PASSED, TABLE_WORDS, format_table, summary_line)
from mhakit.selfcheck.wording import TEXTS, speaking
from tests.mha_exercise import EXERCISE, SECTIONS, reference_body

REPO = Path(__file__).resolve().parents[2]
WRONG_DOT = "def dot_product(u, v):\n    return np.sum(u * v, axis=0)\n"
STUB = "def attention(Q, K, V, mask=None):\n    raise NotImplementedError()\n"
LANGUAGES = ("zh", "en")


@pytest.fixture
def shipped(monkeypatch):
    """The exercise's shipped package where the release puts it, beside the self-check."""
    monkeypatch.setattr(selfcheck, "exercise", EXERCISE.shipped, raising=False)


def namespace_of(*sources):
    namespace = {"np": np, "math": math, "__name__": "__main__"}
    for source in sources:
        exec(compile(source, "<cell>", "exec"), namespace)
    return namespace


def run_check_cell(namespace, call, capsys):
    """Run ``call`` (e.g. 'check("softmax")') as a notebook cell would: (stdout, stderr)."""
    namespace["check"] = runner.check
    exec(compile(call, "<test cell>", "exec"), namespace)  # never raises
    said = capsys.readouterr()
    return said.out, said.err


def rows_of(table):
    """The parts of a printed table's rows, in the order printed."""
    lines = table.splitlines()[2:]
    return [line.split()[0] for line in lines if line.split() and line.split()[0] in SECTIONS]


# ------------------------------------------------ a failing check: said once, no raise

@pytest.mark.parametrize("chosen", LANGUAGES)
def test_a_failing_check_says_its_message_once_and_does_not_raise(shipped, capsys, chosen):
    with speaking(chosen):
        out, err = run_check_cell(namespace_of(WRONG_DOT), 'check("dot_product")', capsys)
    [row] = [line for line in out.splitlines() if line.startswith("dot_product")]
    assert TABLE_WORDS[chosen][FAILED] in row
    message = row.split(TABLE_WORDS[chosen][FAILED], 1)[1].strip()
    assert len(message) > 40
    # The message is in the table once, and nowhere else: stderr only points to it.
    assert (out + err).count(message[:40]) == 1
    with speaking(chosen):
        assert err.strip().splitlines() == [wording.say("cell-failed", name="dot_product"),
                                            wording.say("validate-scores-zero")]
    assert len(err) < 120


@pytest.mark.parametrize("chosen", LANGUAGES)
def test_every_part_that_is_not_done_writes_one_line_for_the_validate_button(shipped, capsys,
                                                                            chosen):
    cells = {"failed": (WRONG_DOT, "dot_product"), "stub": (STUB, "attention"),
             "not run": ("", "split_heads")}
    for what, (source, part) in cells.items():
        with speaking(chosen):
            _, err = run_check_cell(namespace_of(source), f'check("{part}")', capsys)
        assert len(err.strip().splitlines()) == 2, (what, err)
        assert ("Validate 按钮" if chosen == "zh" else "The Validate button") in err, err
        assert part in err
    with speaking(chosen):
        _, err = run_check_cell(namespace_of(reference_body("softmax")), 'check("softmax")',
                                capsys)
    assert err == ""  # a pass: nothing for Validate to score 0


@pytest.mark.parametrize("folder", [EXERCISE.folder, REPO / "tests" / "second_exercise"])
def test_the_note_for_validate_is_not_cut_by_nbgrader_validate(folder):
    """nbgrader validate prints each line of a cell's stderr indented by 4 and cuts it
    after 87 columns (Validator.width 90): each line of the note fits, for every part."""
    from nbgrader.validator import Validator

    limit = Validator().width - 3 - len(Validator().indent)
    for chosen in LANGUAGES:
        with speaking(chosen):
            for part in load(folder).parts + ("导入 imports",):
                for status in (FAILED, NOT_IMPLEMENTED, NOT_RUN):
                    note = runner.validate_note([(part, status, "")])
                    assert all(len(line) <= limit for line in note.splitlines()), note
            assert runner.validate_note([(part, PASSED, ""), ("quiz", "answered", "")]) is None


def test_check_of_everything_writes_nothing_to_stderr(shipped, capsys):
    _, err = run_check_cell(namespace_of(WRONG_DOT, STUB), "check()", capsys)
    assert err == ""


# ------------------------------------------------ not run yet, not written yet

@pytest.mark.parametrize("chosen", LANGUAGES)
def test_not_run_yet_is_told_apart_from_not_written_yet(shipped, capsys, chosen):
    composite = ("def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
                 "    return split_heads(X @ W_q, num_heads), None\n")
    namespace = namespace_of(STUB, composite)
    with speaking(chosen):
        out, err = run_check_cell(namespace, 'check("attention", "softmax", '
                                             '"multi_head_attention")', capsys)
        words = TABLE_WORDS[chosen]
        rows = {line.split()[0]: line for line in out.splitlines()
                if line.split() and line.split()[0] in SECTIONS}
        assert words[NOT_IMPLEMENTED] in rows["attention"]
        assert "NotImplementedError" in rows["attention"]
        assert "Run All" not in rows["attention"]
        # softmax's cell has not run: not run yet, and the advice is to run it.
        assert words[NOT_RUN] in rows["softmax"]
        assert rows["softmax"].endswith(wording.say("not-run", name="softmax"))
        assert "Run All" in rows["softmax"]
        # A composite whose piece is undefined: not run yet, naming the piece.
        assert words[NOT_RUN] in rows["multi_head_attention"]
        assert rows["multi_head_attention"].endswith(
            wording.say("piece-not-run", name="multi_head_attention", missing="split_heads"))
        assert words[FAILED] not in out
        assert err.strip().splitlines() == [
            wording.say("cell-not-run", name="softmax"),
            wording.say("cell-not-written", name="attention"),
            wording.say("cell-not-run", name="multi_head_attention"),
            wording.say("validate-scores-zero")]


def test_not_run_yet_and_not_written_yet_read_differently_in_both_languages():
    for chosen in LANGUAGES:
        with speaking(chosen):
            said = {key: wording.say(key, name="softmax", missing="split_heads")
                    for key in ("not-implemented", "not-run", "piece-not-run", "not-in-saved",
                                "piece-not-in-saved", "cell-not-written", "cell-not-run")}
        assert len(set(said.values())) == len(said)
        for key in ("not-run", "piece-not-run", "cell-not-run"):
            assert "Run All" in said[key], key
    assert len({TABLE_WORDS[c][s] for c in LANGUAGES
                for s in (NOT_IMPLEMENTED, NOT_RUN, NOT_DEFINED)}) == 6
    assert TABLE_WORDS["zh"][NOT_RUN].startswith("未运行")
    assert "NotImplementedError" in TEXTS["not-implemented"][0] + TEXTS["not-implemented"][1]


def test_a_name_error_that_is_not_one_of_the_exercises_functions_is_the_codes_mistake():
    """A typo, or a local used before it is set, is a failure to fix, not a cell to run."""
    typo = namespace_of("def softmax(x, axis=-1):\n    return np.exp(x) / sum_of(x)\n")
    student = InProcessStudent(typo, parts=SECTIONS)
    with pytest.raises(AssertionError) as raised:
        student.call("softmax", np.ones(3))
    assert not isinstance(raised.value, NotDefinedYet)
    assert "NameError" in str(raised.value)
    local = namespace_of("def softmax(x, axis=-1):\n    split_heads = split_heads + 1\n"
                         "    return x\n")
    with pytest.raises(AssertionError) as raised:
        InProcessStudent(local, parts=SECTIONS).call("softmax", np.ones(3))
    assert "UnboundLocalError" in str(raised.value)
    # Without the exercise's functions (as the grader's precision corpus builds it), a
    # piece that is undefined is the call's error, as before.
    composite = namespace_of("def softmax(x, axis=-1):\n    return split_heads(x, 1)\n")
    with pytest.raises(AssertionError):
        InProcessStudent(composite).call("softmax", np.ones(3))
    with pytest.raises(NotDefinedYet) as raised:
        InProcessStudent(composite, parts=SECTIONS).call("softmax", np.ones(3))
    assert raised.value.missing == "split_heads"


def test_a_quiz_whose_cells_have_not_run_is_not_run_yet(shipped, capsys):
    with speaking("en"):
        out, err = run_check_cell(namespace_of(), 'check("quiz")', capsys)
        assert TABLE_WORDS["en"][NOT_RUN] in out and "quiz_1" in out
        assert err.strip().splitlines() == [wording.say("cell-not-run", name="quiz"),
                                            wording.say("validate-scores-zero")]
        answered_none = namespace_of("".join(f"quiz_{n} = None\n" for n in range(1, 7)))
        out, err = run_check_cell(answered_none, 'check("quiz")', capsys)
        assert NOT_IMPLEMENTED in out
        assert err.strip().splitlines() == [wording.say("cell-not-answered", name="quiz"),
                                            wording.say("validate-scores-zero")]


def test_selfcheck_py_calls_a_missing_function_not_defined_and_says_why(shipped, capsys,
                                                                       tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(reference_body("softmax")),
        nbformat.v4.new_code_cell("1 / 0\n" + reference_body("dot_product")),
        nbformat.v4.new_code_cell(STUB)])
    path = tmp_path / "mha.ipynb"
    nbformat.write(notebook, str(path))
    with speaking("en"):
        assert runner.main([str(path)]) == 1
        said = capsys.readouterr()
        rows = {line.split()[0]: line for line in said.out.splitlines()
                if line.split() and line.split()[0] in SECTIONS}
        assert "did not run: ZeroDivisionError" in said.err
        assert NOT_DEFINED in rows["dot_product"] and NOT_RUN not in said.out
        assert rows["dot_product"].endswith(wording.say("not-in-saved", name="dot_product"))
        assert rows["multi_head_attention"].endswith(wording.say(
            "not-in-saved", name="multi_head_attention"))
        assert NOT_IMPLEMENTED in rows["attention"] and PASSED in rows["softmax"]


# ------------------------------------------------ the notebook's order

def test_the_table_keeps_the_rows_order_whatever_passes_or_fails():
    rows = [("dot_product", PASSED, "3/3 checks"), ("softmax", FAILED, "wrong"),
            ("attention", NOT_IMPLEMENTED, "not yet"), ("split_heads", NOT_RUN, "run it")]
    for chosen in LANGUAGES:
        assert rows_of(format_table(rows, chosen)) == [row[0] for row in rows]


def test_check_prints_the_parts_in_the_notebooks_order_from_run_to_run(shipped, capsys):
    orders = []
    for sources in ([WRONG_DOT, STUB], [reference_body("dot_product"), STUB],
                    [reference_body("softmax"), WRONG_DOT],
                    [reference_body(name) for name in EXERCISE.function_names]):
        out, _ = run_check_cell(namespace_of(*sources), "check()", capsys)
        orders.append(rows_of(out))
    assert orders == [list(SECTIONS)] * len(orders)
    out, _ = run_check_cell(namespace_of(WRONG_DOT), 'check("softmax", "dot_product")', capsys)
    assert rows_of(out) == ["dot_product", "softmax"]  # the notebook's, not the call's


@pytest.mark.parametrize("folder", [EXERCISE.folder, REPO / "tests" / "second_exercise"])
def test_the_shipped_checks_come_in_the_notebooks_order(folder):
    """The self-check's table follows the shipped checks' order: it must be the lesson's."""
    exercise = load(folder)
    shipped_order = list(dict.fromkeys(c.function for c in exercise.shipped.CHECKS))
    assert shipped_order == list(exercise.parts)


# ------------------------------------------------ one part, the Validate button, the minus

def test_one_part_passes_in_the_singular_and_chinese_says_it_as_chinese():
    assert summary_line(1, 1, "en") == "1 of 1 part passes."
    assert summary_line(0, 1, "en") == "0 of 1 part passes."
    assert summary_line(3, 9, "en") == "3 of 9 parts pass."
    assert summary_line(1, 1, "zh") == "1 of 1 part passes. / 这 1 个部分通过了。"
    assert summary_line(0, 1, "zh") == "0 of 1 part passes. / 这 1 个部分还没有通过。"
    assert summary_line(9, 9, "zh") == "9 of 9 parts pass. / 9 个部分全部通过。"
    assert summary_line(0, 9, "zh") == "0 of 9 parts pass. / 9 个部分都还没有通过。"
    assert summary_line(3, 9, "zh") == "3 of 9 parts pass. / 9 个部分中有 3 个通过。"


def test_check_of_one_part_says_one_part(shipped, capsys):
    out, _ = run_check_cell(namespace_of(reference_body("softmax")), 'check("softmax")',
                            capsys)
    with speaking("en"):
        out_en, _ = run_check_cell(namespace_of(reference_body("softmax")),
                                   'check("softmax")', capsys)
    assert out.strip().endswith("1 of 1 part passes. / 这 1 个部分通过了。")
    assert out_en.strip().endswith("1 of 1 part passes.")


def all_texts():
    """Every text of the self-check: the engine's words and the table's."""
    texts = [text for pair in TEXTS.values() for text in pair]
    for words in TABLE_WORDS.values():
        for value in words.values():
            texts += (list(value.values()) if isinstance(value, dict)
                      else list(value) if isinstance(value, tuple) else [value])
    return texts


def test_nbgraders_validate_is_called_the_validate_button():
    said = [text for text in all_texts() if "Validate" in text]
    assert said, "the words for the Validate button are gone"
    for text in said:
        assert re.fullmatch(r"(?s)(?:[^V]|V(?!alidate)|Validate (?:button|按钮))*", text), text


def test_minus_signs_in_the_self_checks_texts_are_ascii():
    """A student copies `-inf`; U+2212 in it is a syntax error."""
    assert not [text for text in all_texts() if "\u2212" in text]
    shipped_files = [*Path(selfcheck.__file__).parent.glob("*.py"),
                     *[p for folder in (EXERCISE.shipped_folder,
                                        REPO / "tests" / "second_exercise" / "shipped")
                       for p in folder.rglob("*") if p.suffix in (".py", ".json")]]
    assert len(shipped_files) > 15
    assert [str(p) for p in shipped_files if "\u2212" in p.read_text("utf-8")] == []
