"""A correct composite earns its points whichever correct way it calls a wrong piece: with
its own axis arithmetic, with keywords, per head, per batch item, or both, keeping the
sliced axis or not, from several threads at once. The stand-ins answer those calls with the reference's recorded
answers, or slices of them; a composite that computes its heads wrongly still loses."""

import pytest

from tests.conftest import grade_answers
from tests.grader.test_grading import FULL, parts

WRONG = {
    "answer_softmax": "def softmax(x, axis=-1):\n    return np.exp(x) / 3\n",
    # normalised over the queries instead of the keys, without calling any piece
    "answer_attention": (
        "def attention(Q, K, V, mask=None):\n"
        "    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)\n"
        "    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = np.where(mask, scores, -1e9)\n"
        "    e = np.exp(scores - scores.max(-2, keepdims=True))\n"
        "    weights = e / e.sum(-2, keepdims=True)\n"
        "    return weights @ V, weights\n"),
    "answer_split_heads": (
        "def split_heads(X, num_heads):\n"
        "    X = np.asarray(X)\n"
        "    return X.reshape(*X.shape[:-2], num_heads, X.shape[-2], X.shape[-1] // num_heads)\n"),
}

# Every composite below flattens the batch axes, so that a loop over items fits any
# number of them (none included), and ends like this.
TAIL = (
    "    return (np.stack(outputs).reshape(X.shape),\n"
    "            np.stack(weights).reshape(X.shape[:-2] + (num_heads, T, T)))\n")
FLAT = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    T, d_model = X.shape[-2:]\n"
    "    flat = X.reshape(-1, T, d_model)\n"
    "    masks = (None if mask is None else\n"
    "             np.broadcast_to(mask, X.shape[:-2] + (T, T)).reshape(-1, T, T))\n"
    "    outputs, weights = [], []\n")

PER_HEAD = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "    pairs = [attention(Q[..., i, :, :], K[..., i, :, :], V[..., i, :, :], mask)\n"
    "             for i in range(num_heads)]\n"
    "    heads = np.stack([o for o, _ in pairs], axis=-3)\n"
    "    weights = np.stack([w for _, w in pairs], axis=-3)\n"
    "    return output_projection(concat_heads(heads), W_o), weights\n")

PER_HEAD_KEEPING_THE_AXIS = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "    m = None if mask is None else np.asarray(mask)[..., None, :, :]\n"
    "    pairs = [attention(Q[..., i:i + 1, :, :], K[..., i:i + 1, :, :],\n"
    "                       V[..., i:i + 1, :, :], m) for i in range(num_heads)]\n"
    "    heads = np.concatenate([o for o, _ in pairs], axis=-3)\n"
    "    weights = np.concatenate([w for _, w in pairs], axis=-3)\n"
    "    return output_projection(concat_heads(heads), W_o), weights\n")

# Each head in a thread of its own, four at a time: the stand-ins are asked at once.
PER_HEAD_IN_THREADS = (
    "from concurrent.futures import ThreadPoolExecutor\n\n"
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "    m = None if mask is None else np.asarray(mask)[..., None, :, :]\n"
    "    def head(i):\n"
    "        return attention(Q[..., i:i + 1, :, :], K[..., i:i + 1, :, :],\n"
    "                         V[..., i:i + 1, :, :], m)\n"
    "    with ThreadPoolExecutor(4) as pool:\n"
    "        pairs = list(pool.map(head, range(num_heads)))\n"
    "    heads = np.concatenate([o for o, _ in pairs], axis=-3)\n"
    "    weights = np.concatenate([w for _, w in pairs], axis=-3)\n"
    "    return output_projection(concat_heads(heads), W_o), weights\n")

PER_ITEM = FLAT + (
    "    for b in range(len(flat)):\n"
    "        Q, K, V = (split_heads(flat[b] @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "        heads, w = attention(Q, K, V, None if masks is None else masks[b][None])\n"
    "        outputs.append(output_projection(concat_heads(heads), W_o))\n"
    "        weights.append(w)\n") + TAIL

PER_ITEM_AND_HEAD = FLAT + (
    "    for b in range(len(flat)):\n"
    "        Q, K, V = (split_heads(flat[b] @ W, num_heads) for W in (W_q, W_k, W_v))\n"
    "        pairs = [attention(Q[i], K[i], V[i], None if masks is None else masks[b])\n"
    "                 for i in range(num_heads)]\n"
    "        heads = np.stack([o for o, _ in pairs])\n"
    "        outputs.append(output_projection(concat_heads(heads), W_o))\n"
    "        weights.append(np.stack([w for _, w in pairs]))\n") + TAIL

WITH_KEYWORDS = (
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    X = np.asarray(X)\n"
    "    Q, K, V = (split_heads(num_heads=num_heads, X=X @ W) for W in (W_q, W_k, W_v))\n"
    "    if mask is not None:\n"
    "        mask = np.asarray(mask)[..., None, :, :]\n"
    "    heads, weights = attention(V=V, K=K, Q=Q, mask=mask)\n"
    "    return output_projection(W_o=W_o, C=concat_heads(H=heads)), weights\n")


def _graded(reference_answers, **answers):
    result = grade_answers(dict(reference_answers, **answers))
    return parts(result), result


def _scores_of(result, function):
    return {t.name: t.score for t in result.tests if t.name.startswith(function)}


def test_a_wrong_softmax_costs_attention_nothing_when_it_counts_its_own_axis(
        reference_answers):
    source = reference_answers["answer_attention"]
    assert source.count("softmax(scores, axis=-1)") == 2
    counting = source.replace("softmax(scores, axis=-1)", "softmax(scores, axis=scores.ndim - 1)")
    scored, result = _graded(reference_answers, answer_softmax=WRONG["answer_softmax"],
                             answer_attention=counting)
    assert scored["softmax"] == 0
    assert scored["attention"] == FULL["attention"], _scores_of(result, "attention")


def test_a_wrong_softmax_costs_attention_nothing_when_it_names_every_argument(
        reference_answers):
    source = reference_answers["answer_attention"].replace(
        "softmax(scores, axis=-1)", "softmax(axis=-1 % scores.ndim, x=scores)")
    scored, _ = _graded(reference_answers, answer_softmax=WRONG["answer_softmax"],
                        answer_attention=source)
    assert scored["softmax"] == 0 and scored["attention"] == FULL["attention"]


@pytest.mark.parametrize("piece", ["attention", "split_heads"])
@pytest.mark.parametrize("composite", [PER_HEAD, PER_HEAD_KEEPING_THE_AXIS, PER_ITEM,
                                       PER_ITEM_AND_HEAD, WITH_KEYWORDS, PER_HEAD_IN_THREADS],
                         ids=["per-head", "per-head-keeping-the-axis", "per-batch-item",
                              "per-item-and-head", "with-keywords", "per-head-in-threads"])
def test_a_wrong_piece_costs_a_composite_nothing_however_it_calls_the_piece(
        reference_answers, composite, piece):
    scored, result = _graded(reference_answers, answer_multi_head_attention=composite,
                             **{f"answer_{piece}": WRONG[f"answer_{piece}"]})
    assert scored[piece] == 0
    assert scored["multi_head_attention"] == FULL["multi_head_attention"], \
        _scores_of(result, "multi_head_attention")
    assert not result.extra["crashes"]


def test_the_right_composites_are_right_with_right_pieces_too(reference_answers):
    for composite in (PER_HEAD, PER_HEAD_KEEPING_THE_AXIS, PER_ITEM, PER_ITEM_AND_HEAD,
                      WITH_KEYWORDS, PER_HEAD_IN_THREADS):
        scored, _ = _graded(reference_answers, answer_multi_head_attention=composite)
        assert scored == FULL


# ------------------------------------------------ what is still no recorded call

# Head i's queries against head i + 1's keys and values: no slice of the recorded call.
MIXED_HEADS = PER_HEAD.replace("K[..., i, :, :], V[..., i, :, :]",
                               "K[..., (i + 1) % num_heads, :, :], V[..., (i + 1) % num_heads, :, :]")
# Every head's own call, but the queries nudged: a perturbed input, no recorded one.
NUDGED = PER_HEAD.replace("attention(Q[..., i, :, :]", "attention(1.01 * Q[..., i, :, :]")
# Right slices, put back in the wrong order.
HEADS_REVERSED = PER_HEAD.replace("for i in range(num_heads)]",
                                  "for i in reversed(range(num_heads))]")


@pytest.mark.parametrize("composite", [MIXED_HEADS, NUDGED, HEADS_REVERSED],
                         ids=["mixed-heads", "nudged-queries", "heads-reversed"])
@pytest.mark.parametrize("attention", ["right", "wrong"])
def test_a_composite_that_computes_its_heads_wrongly_still_loses(reference_answers, composite,
                                                                  attention):
    assert composite != PER_HEAD
    answers = {"answer_multi_head_attention": composite}
    if attention == "wrong":
        answers["answer_attention"] = WRONG["answer_attention"]
    scored, result = _graded(reference_answers, **answers)
    values = _scores_of(result, "multi_head_attention: matches the reference")
    assert list(values.values()) == [0.0]
    assert scored["multi_head_attention"] < FULL["multi_head_attention"]
