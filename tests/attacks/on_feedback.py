"""Attacks on feedback: see tests/attacks/corpus.py for how an Attack is graded.

Each of these submissions writes what its functions were given (hidden inputs) or what a
correct function would return (expected values) into its own feedback, in a form that a
filter for decimal numbers does not see: base64, hex, float.hex, integers as the axes of
an empty array or as the length of a tuple, digits one per line, digits one per call,
digits spelled out in English or in Chinese. The functions they fake score 0 like any
wrong function; tests/integrations/test_feedback.py decodes every candidate it finds in the
feedback and checks that none of it is a hidden number.
"""

from .corpus import Attack

# The first value of an input that is not one of the public checks' numbers (those are
# evenly spaced, from arange, linspace, zeros and ones): a hidden input.
KEEP_ONE = (
    "def _kept(*arrays):\n"
    "    for a in arrays:\n"
    "        a = np.asarray(a, dtype=float).ravel()[:8]\n"
    "        steps = np.diff(a)\n"
    "        if a.size < 3 or np.allclose(steps, steps[0]):\n"
    "            continue\n"
    "        for v in a:\n"
    "            if abs(v * 1000 - round(v * 1000)) > 1e-6:\n"
    "                return float(v)\n"
    "    return None\n")

BASE64 = Attack("feedback-base64", zero=("dot_product",), edits={"answer_dot_product": (
    "import base64\n"
    "def dot_product(u, v):\n"
    "    u = np.asarray(u, dtype=float)\n"
    "    text = ' '.join(f'{x:.6f}' for x in u.ravel()[:4])\n"
    "    raise ValueError(base64.b64encode(u.ravel()[:3].tobytes()).decode() + ' '\n"
    "                     + base64.b64encode(text.encode()).decode())\n")})

HEX = Attack("feedback-hex-and-float-hex", zero=("attention_scores",), edits={
    "answer_attention_scores": (
        "def attention_scores(Q, K):\n"
        "    Q = np.asarray(Q, dtype=float)\n"
        "    first = float(Q.ravel()[0])\n"
        "    raise ValueError(Q.ravel()[:2].tobytes().hex() + ' ' + first.hex() + ' '\n"
        "                     + f'{first:.6f}'.encode().hex())\n")})

# An empty array has no values to compare, so its shape is all the feedback shows.
SHAPE_AXES = Attack("feedback-integers-as-axes", zero=("softmax", "output_projection"), edits={
    "answer_softmax": (
        "def softmax(x, axis=-1):\n"
        "    v = float(np.asarray(x, dtype=float).ravel()[0])\n"
        "    return np.empty((int(abs(v) * 1e6), int(abs(v) * 1e4) % 10000, 0))\n"),
    "answer_output_projection": (
        "def output_projection(C, W_o):\n"
        "    v = float(np.asarray(C, dtype=float).ravel()[0])\n"
        "    return tuple(range(int(abs(v) * 1e4)))  # a tuple whose length is the number\n")})

# Digits one per line, in an exception; the expected weights, which a correct attention
# computes, one digit per line too.
SPREAD_LINES = Attack("feedback-digits-over-lines", zero=("attention",), edits={
    "answer_attention": (
        "def attention(Q, K, V, mask=None):\n"
        "    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))\n"
        "    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = np.where(mask, scores, -1e9)\n"
        "    e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
        "    weights = e / e.sum(axis=-1, keepdims=True)\n"
        "    lines = list(f'{float(Q.ravel()[0]):.6f}') + ['|'] + list(f'{float(weights.ravel()[1]):.6f}')\n"
        "    raise ValueError('\\n'.join(lines))\n")})

# One digit per call, numbered, kept in the child between calls; and the same digits
# spelled out in English and in Chinese.
SPREAD_CALLS = Attack("feedback-digits-over-calls-and-words", zero=("multi_head_attention",),
                      edits={"answer_multi_head_attention": (
    KEEP_ONE +
    "STATE = {'value': None, 'count': 0}\n"
    "WORDS = 'zero one two three four five six seven eight nine'.split()\n"
    "CHINESE = '零一二三四五六七八九'\n"
    "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
    "    if STATE['value'] is None:\n"
    "        STATE['value'] = _kept(X)\n"
    "    if STATE['value'] is None:\n"
    "        raise ValueError('nothing kept yet')\n"
    "    digits = f'{abs(STATE[\"value\"]):.6f}'.replace('.', '').lstrip('0')\n"
    "    i = STATE['count'] % len(digits)\n"
    "    STATE['count'] += 1\n"
    "    raise ValueError(f'leak {i} {digits[i]} ' + ' '.join(WORDS[int(d)] for d in digits)\n"
    "                     + ' ' + ''.join(CHINESE[int(d)] for d in digits))\n")})

FEEDBACK_ATTACKS = [BASE64, HEX, SHAPE_AXES, SPREAD_LINES, SPREAD_CALLS]
