"""mhakit/grader/style.py: a style note costs nothing, names the line it is about, and
is given only for a loop over heads or batch items, decided from the code alone."""

import ast
import types
from pathlib import Path

import pytest

from mhakit.exercise import load
from mhakit.grader.result import Result
from mhakit.grader.style import style_notes
from tests.conftest import REPO, grade_answers
from tests.mha_exercise import EXERCISE

SECOND = load(Path(__file__).resolve().parents[1] / "second_exercise")

LOOPING_SPLIT = """def split_heads(X, num_heads):
    X = np.asarray(X)
    d_k = X.shape[-1] // num_heads
    heads = [X[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)]
    return np.stack(heads, axis=-3)
"""

# {what the loop walks: (source, the noted line)}
LOOPS_OVER_HEADS_OR_BATCH = {
    "range of the head count": ("""def split_heads(X, num_heads):
    out = []
    for h in range(num_heads):
        out.append(X)
    return out
""", 3),
    "a comprehension over range of the head count": (LOOPING_SPLIT, 4),
    "range of a name holding the head count": ("""def split_heads(X, num_heads):
    H = num_heads
    for h in range(H):
        pass
""", 3),
    "range of a name unpacked from a shape": ("""def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    B, T, d_model = X.shape
    for b in range(B):
        pass
""", 3),
    "range of a head count read from a shape": ("""def concat_heads(H):
    num_heads, d_k = H.shape[-3], H.shape[-1]
    return np.concatenate([H[..., i, :, :] for i in range(num_heads)], axis=-1)
""", 3),
    "range of the batch axis": ("""def softmax(x, axis=-1):
    for i in range(x.shape[0]):
        pass
""", 2),
    "range of np.shape": ("""def softmax(x, axis=-1):
    for i in np.arange(np.shape(x)[0]):
        pass
""", 2),
    "range of len of an array": ("""def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    for b in range(len(X)):
        pass
""", 2),
    "the items of an array argument": ("""def softmax(x, axis=-1):
    rows = [r for r in x]
    return rows
""", 2),
    "the items of an array computed from an argument": ("""def attention_scores(Q, K):
    Q = np.asarray(Q)
    scores = Q @ np.swapaxes(K, -1, -2)
    for row in scores:
        pass
""", 4),
    "a zip of two array arguments": ("""def attention_scores(Q, K):
    for q, k in zip(Q, K):
        pass
""", 2),
    "enumerate of a split into heads": ("""def split_heads(X, num_heads):
    for i, head in enumerate(np.split(X, num_heads, axis=-1)):
        pass
""", 2),
    "a comprehension over an array_split": ("""def split_heads(X, num_heads):
    heads = np.array_split(X, num_heads, axis=-1)
    return np.stack([h for h in heads], axis=-3)
""", 3),
    "a list comprehension over a split": ("""def split_heads(X, num_heads):
    heads = [h * 1 for h in np.split(X, num_heads, axis=-1)]
    for head in heads:
        pass
""", "2, 3"),
    "a while loop counting heads": ("""def split_heads(X, num_heads):
    h = 0
    while h < num_heads:
        h += 1
""", 3),
    "a comprehension whose for follows a digit": ("""def split_heads(X, num_heads):
    return [1for h in range(num_heads)]
""", 2),
    "the batch axis through a walrus": ("""def softmax(x, axis=-1):
    if (n := len(x)) > 0:
        for i in range(n):
            pass
""", 3),
}

NO_LOOP_OVER_HEADS_OR_BATCH = {
    "while on the number of axes": """def attention(Q, K, V, mask=None):
    mask = np.asarray(mask)
    while mask.ndim < 2:
        mask = mask[None]
    return Q, mask
""",
    "a literal tuple of matrices": """def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    for W in (W_q, W_k, W_v):
        assert W.shape == (4, 4)
""",
    "a literal tuple of batched arrays": """def attention(Q, K, V, mask=None):
    Q, K, V = [np.asarray(a) for a in (Q, K, V)]
""",
    "range of a small constant": """def softmax(x, axis=-1):
    for attempt in range(3):
        pass
""",
    "a zip of literals": """def dot_product(u, v):
    for a, b in zip((1, 2), (3, 4)):
        pass
""",
    "the axes of an array": """def softmax(x, axis=-1):
    for a in range(x.ndim):
        pass
    for n in x.shape:
        pass
""",
    "the rows of a weight matrix": """def output_projection(C, W_o):
    for row in W_o:
        pass
""",
    "a while loop that counts nothing": """def dot_product(u, v):
    while True:
        break
""",
    "a loop outside the graded functions": """def helper(X):
    for row in X:
        pass
""",
}


def _noted(source, exercise=EXERCISE, language="en"):
    return style_notes([("answer", source)], exercise, language)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # "1for": valid, and warned about
@pytest.mark.parametrize("what", sorted(LOOPS_OVER_HEADS_OR_BATCH))
def test_a_loop_over_heads_or_batch_items_gets_a_note_on_its_line(what):
    source, line = LOOPS_OVER_HEADS_OR_BATCH[what]
    notes = _noted(source)
    function = source.split("(")[0][len("def "):]
    assert list(notes) == [function], what
    assert f"(line {line})" in notes[function], notes[function]


@pytest.mark.parametrize("what", sorted(NO_LOOP_OVER_HEADS_OR_BATCH))
def test_a_loop_over_anything_else_gets_no_note(what):
    assert _noted(NO_LOOP_OVER_HEADS_OR_BATCH[what]) == {}, what


def test_the_reference_gets_no_note_read_from_its_source():
    source = (REPO / "mhakit" / "exercises" / "mha" / "reference.py").read_text(encoding="utf-8")
    assert _noted(source) == {}
    assert _noted(source + "\n" + LOOPING_SPLIT) != {}  # a later definition still counts


def test_a_later_definition_without_a_loop_replaces_one_with_a_loop():
    # Cells without a loop keyword are not searched, but their definitions still count.
    looping, _ = LOOPS_OVER_HEADS_OR_BATCH["range of the head count"]
    plain = "def split_heads(X, num_heads):\n    return X\n"
    cells = [("a", looping), ("b", plain)]
    assert style_notes(cells, EXERCISE, "en") == {}
    assert list(style_notes(cells[::-1], EXERCISE, "en")) == ["split_heads"]


def test_the_head_count_is_the_exercise_s_word():
    style = EXERCISE.content("style")
    renamed = types.SimpleNamespace(HINTS=style.HINTS, HEAD_COUNTS=("n_heads",),
                                    BATCHED=())
    exercise = types.SimpleNamespace(content=lambda module: renamed)
    counting = "def split_heads(X, {0}):\n    for h in range({0}):\n        pass\n"
    assert list(_noted(counting.format("n_heads"), exercise)) == ["split_heads"]
    assert _noted(counting.format("num_heads"), exercise) == {}
    assert list(_noted(counting.format("num_heads"))) == ["split_heads"]


def test_the_second_exercise_notes_a_loop_over_its_batch_only():
    looping = "def weighted_sum(x, w):\n    return np.array([r @ w for r in x])\n"
    constant = "def weighted_sum(x, w):\n    for _ in range(2):\n        pass\n"
    assert list(_noted(looping, SECOND)) == ["weighted_sum"]
    assert _noted(constant, SECOND) == {}


def test_a_note_speaks_the_result_s_language():
    source, _ = LOOPS_OVER_HEADS_OR_BATCH["range of the head count"]
    zh = _noted(source, language="zh")["split_heads"]
    assert "第 3 行" in zh and "不扣分" in zh and "line" not in zh


def test_an_expression_too_deep_to_read_gives_no_note_and_no_error():
    # Deep enough for the reading to run out of stack, not deep enough to fail parsing.
    deep = "def softmax(x, axis=-1):\n    y = " + "-" * 900 + "x\n    for r in y:\n        pass\n"
    ast.parse(deep)
    assert _noted(deep) == {}


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_loop_over_heads_costs_nothing_and_gets_a_note(reference_answers, language):
    from mhakit.grader.grading import part_summary

    answers = dict(reference_answers, answer_split_heads=LOOPING_SPLIT)
    result = grade_answers(answers, seed=17, language=language)
    assert result.score == 100
    notes = result.extra["style"]
    assert list(notes) == ["split_heads"]
    assert ("line 4" in notes["split_heads"]) if language == "en" else ("第 4 行" in notes["split_heads"])
    assert notes["split_heads"] in part_summary(result, "split_heads")


def test_the_reference_gets_no_style_note(reference_answers):
    assert grade_answers(reference_answers, seed=17).extra["style"] == {}


def test_mhakit_grade_notes_the_loop_over_heads_and_not_the_while_on_axes(reference_answers,
                                                                           tmp_path):
    import json

    import nbformat

    from mhakit.authoring.sample_class import edited, fill
    from tests.attacks.corpus import RELEASE
    from tests.integrations.test_cli import mhakit

    axes_loop = edited(EXERCISE, "attention", "mask = np.asarray(mask, dtype=bool)\n",
                       "mask = np.asarray(mask, dtype=bool)\n"
                       "        while mask.ndim < 2:\n"
                       "            mask = mask[None]\n")
    answers = dict(reference_answers, answer_attention=axes_loop,
                   answer_split_heads=LOOPING_SPLIT)
    notebook = tmp_path / "mha.ipynb"
    nbformat.write(fill(nbformat.read(str(RELEASE), as_version=4), answers), str(notebook))
    done = mhakit("grade", str(notebook), "--seed", "5", "--language", "en")
    assert done.returncode == 0, done.stderr
    result = Result.from_json(json.loads(done.stdout))
    assert result.score == 100  # the while loop is right, and no note costs anything
    assert list(result.extra["style"]) == ["split_heads"]
