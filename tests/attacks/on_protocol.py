"""Attacks on the conversation between the grader and the child: see tests/attacks/corpus.py
for how an Attack is graded.

They ask the stand-ins for answers the reference would never ask for, read the inputs of
checks that have not run yet, hide a write into their inputs from the verdict, keep a
call alive by sending a message now and then, and send frames larger than any answer.
"""

from .corpus import Attack

# Every function answers from a table that it fills, on its first call, by asking the
# stand-ins for the result of every call it can find in the runtime's frames: the
# inputs of the whole batch, when the batch holds every check. A function's own calls
# it asks of a stand-in that computes it in passing (dot_product through
# attention_scores). No attention is computed anywhere.
ORACLE = '''
import inspect, math, sys
_TABLE, _SIGNATURES = {}, {}

def _key(name, args, kwargs):
    bound = _SIGNATURES[name].bind(*args, **kwargs)
    bound.apply_defaults()
    parts = [name]
    for value in bound.arguments.values():
        if isinstance(value, np.ndarray):
            parts.append((value.dtype.str, value.shape, value.tobytes()))
        else:
            parts.append(repr(value))
    return tuple(parts)

def _is_stand_in(function, name):
    return callable(function) and function.__code__.co_name != name

def _ask(name, args, kwargs):
    function = globals().get(name)
    if _is_stand_in(function, name):
        return function(*args, **kwargs)
    scores = globals().get("attention_scores")
    if name == "dot_product" and _is_stand_in(scores, "attention_scores"):
        u, v = np.asarray(args[0]), np.asarray(args[1])
        return scores(u[..., None, :], v[..., None, :])[..., 0, 0] * math.sqrt(u.shape[-1])
    return None

def _harvest():
    frame = sys._getframe(1)
    while frame is not None:
        request = frame.f_locals.get("request")
        if isinstance(request, dict) and isinstance(request.get("calls"), list):
            decode = frame.f_globals["decode"]
            arrays, files = frame.f_locals.get("arrays", []), frame.f_locals.get("files", ())
            for spec in request["calls"]:
                if spec.get("op") != "call" or spec.get("name") not in _SIGNATURES:
                    continue
                try:
                    try:
                        args = decode(spec["args"], arrays, files)
                        kwargs = {k: decode(v, arrays, files) for k, v in spec["kwargs"].items()}
                    except TypeError:
                        args = decode(spec["args"], arrays)
                        kwargs = {k: decode(v, arrays) for k, v in spec["kwargs"].items()}
                    key = _key(spec["name"], args, kwargs)
                    if key not in _TABLE:
                        value = _ask(spec["name"], args, kwargs)
                        if value is not None:
                            _TABLE[key] = value
                except Exception:
                    pass
        frame = frame.f_back

def _answer(name, args, kwargs):
    _harvest()
    return _TABLE.get(_key(name, args, kwargs))

def _register(function):
    _SIGNATURES[function.__name__] = inspect.signature(function)
    return function
'''


def _answering(name, signature, call):
    return f"@_register\ndef {name}({signature}):\n    return _answer({name!r}, {call})\n"


ORACLE_EDITS = {
    "answer_dot_product": ORACLE + _answering("dot_product", "u, v", "(u, v), {}"),
    "answer_attention_scores": _answering("attention_scores", "Q, K", "(Q, K), {}"),
    "answer_softmax": _answering("softmax", "x, axis=-1", "(x,), {'axis': axis}"),
    "answer_attention": _answering("attention", "Q, K, V, mask=None",
                                   "(Q, K, V), {'mask': mask}"),
    "answer_split_heads": _answering("split_heads", "X, num_heads", "(X, num_heads), {}"),
    "answer_concat_heads": _answering("concat_heads", "H", "(H,), {}"),
    "answer_output_projection": _answering("output_projection", "C, W_o", "(C, W_o), {}"),
    "answer_multi_head_attention": _answering(
        "multi_head_attention", "X, W_q, W_k, W_v, W_o, num_heads, mask=None",
        "(X, W_q, W_k, W_v, W_o, num_heads), {'mask': mask}"),
}
CODE = ("dot_product", "attention_scores", "softmax", "attention", "split_heads",
        "concat_heads", "output_projection", "multi_head_attention")

# The three first functions written only as calls of each other: each is right only
# when the other two answer whatever they are asked.
CYCLE = {
    "answer_dot_product": (
        "import math\n"
        "def dot_product(u, v):\n"
        "    u, v = np.asarray(u), np.asarray(v)\n"
        "    scores = attention_scores(u[..., None, :], v[..., None, :])\n"
        "    return scores[..., 0, 0] * math.sqrt(u.shape[-1])\n"),
    "answer_attention_scores": (
        "import math\n"
        "def attention_scores(Q, K):\n"
        "    Q, K = np.asarray(Q), np.asarray(K)\n"
        "    return dot_product(Q[..., :, None, :], K[..., None, :, :]) / math.sqrt(Q.shape[-1])\n"),
    "answer_softmax": (
        "import math\n"
        "def softmax(x, axis=-1):\n"
        "    x = np.moveaxis(np.asarray(x), axis, -1)\n"
        "    d = x.shape[-1]\n"
        "    eye = np.broadcast_to(np.eye(d, dtype=x.dtype), x.shape[:-1] + (d, d))\n"
        "    _, weights = attention(x[..., None, :] * math.sqrt(d), eye, eye)\n"
        "    return np.moveaxis(weights[..., 0, :], -1, axis)\n"),
}

# A softmax that shifts its input in place, then hides the write: it shifts back the
# copies the runtime kept to compare with, and lifts the read-only flag when it can.
HIDDEN_WRITE = {"answer_softmax": (
    "import sys\n"
    "def softmax(x, axis=-1):\n"
    "    if isinstance(x, np.ndarray) and x.dtype.kind == 'f':\n"
    "        try:\n"
    "            x.flags.writeable = True\n"
    "        except ValueError:\n"
    "            pass\n"
    "        shift = np.max(x, axis=axis, keepdims=True)\n"
    "        x -= shift\n"
    "        frame = sys._getframe(1)\n"
    "        while frame is not None:\n"
    "            for kept in frame.f_locals.get('originals', []):\n"
    "                if isinstance(kept, np.ndarray) and kept.shape == x.shape:\n"
    "                    kept -= shift\n"
    "            frame = frame.f_back\n"
    "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
    "    return e / np.sum(e, axis=axis, keepdims=True)\n")}

# A right attention that takes ten seconds, pinging a stand-in every second: no single
# wait is long, but the call is.
SLOW_PINGS = {"answer_attention": (
    "import time\n"
    "def attention(Q, K, V, mask=None):\n"
    "    for _ in range(10):\n"
    "        time.sleep(1)\n"
    "        softmax(np.zeros(3))\n"
    "    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)\n"
    "    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]).astype(Q.dtype)\n"
    "    if mask is not None:\n"
    "        scores = np.where(mask, scores, -np.inf)\n"
    "    scores = np.where(np.isneginf(scores).all(-1, keepdims=True), 0.0, scores)\n"
    "    e = np.exp(scores - scores.max(-1, keepdims=True))\n"
    "    weights = e / e.sum(-1, keepdims=True)\n"
    "    if mask is not None:\n"
    "        weights = np.where(mask, weights, 0.0)\n"
    "    return weights @ V, weights\n")}

# Frames and requests larger than anything the grader asked for: a forged 128 MB frame
# written straight onto the socket, and a stand-in request whose arrays broadcast to a
# huge result.
HUGE_MESSAGES = {
    "answer_output_projection": (
        "import os, struct\n"
        "def output_projection(C, W_o):\n"
        "    forged = struct.pack('>Q', 20) + b'{\"op\": \"done\", \"x\":1}'[:20]\n"
        "    forged += struct.pack('>Q', 128 << 20)\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            if os.fstat(fd).st_mode & 0o170000 == 0o140000:\n"
        "                os.write(fd, forged)\n"
        "                os.write(fd, b'\\0' * (128 << 20))\n"
        "        except OSError:\n"
        "            pass\n"
        "    return np.asarray(C) @ np.asarray(W_o)\n"),
    "answer_attention": (
        "def attention(Q, K, V, mask=None):\n"
        "    big = np.ones((1, 3000, 1, 8))\n"
        "    scores = attention_scores(big, np.ones((3000, 1, 1, 8)))\n"
        "    return scores, scores\n"),
}

PROTOCOL_ATTACKS = [
    Attack("stand-ins-as-an-oracle-for-every-function", zero=CODE, edits=ORACLE_EDITS),
    Attack("three-functions-as-calls-of-each-other",
           zero=("dot_product", "attention_scores", "softmax"), edits=CYCLE),
    Attack("write-into-inputs-and-hide-it", scores={"softmax": 11.0}, edits=HIDDEN_WRITE),
    Attack("a-slow-call-that-pings-a-stand-in", zero=("attention",), edits=SLOW_PINGS),
    Attack("frames-larger-than-any-answer", zero=("attention", "output_projection"),
           edits=HUGE_MESSAGES),
]
