"""Honest notebooks: code that students believe correct, written the ways students write.

Each entry is one student's notebook: the real release notebook (Chinese ``mha`` or
English ``mha_en``) with its answer cells filled in and, often, scratch cells of their own
in between. ``answers`` holds what the student wrote in answer cells; an answer cell it
does not name holds the reference's body (an edit of the reference), and the quiz cells
the key unless named. ``scratch`` holds the cells they added, each after a cell of the
release named by its grade id (several after one cell keep their order). ``session``,
for the notebooks edited and re-run out of order, is the order in which the student ran
the cells in their kernel, drafts included; the notebook as saved, run from top to
bottom, leaves the same final state.

Most are fully correct. The few with ``wrong`` have one function the student got wrong
without knowing it; every other function must keep all its points ("a mistake costs
only its own function's points"), also a composite that calls the wrong piece in its
own way. ``covers`` names the cases of issue 23 each one is there for; the test holds
the corpus to covering them all.

tests/exercises/mha/test_kernel_oracle.py grades every notebook through both doors and
compares with what the same notebook earns in a real Jupyter kernel.
"""

import copy
from dataclasses import dataclass, field

import nbformat

from mhakit.selfcheck.cells import grade_id_of
from tests.mha_exercise import EXERCISE, reference_body

ASSIGNMENT = {"zh": "mha", "en": "mha_en"}
QUIZ = dict(EXERCISE.content("sample_class").QUIZ_ANSWERS)  # the key, as answer cells
SLEEP_SECONDS = 1.5  # each slow scratch cell; the test sets the grader's limit below 3 of them

# The cases the issue names; every one is covered by at least one notebook.
CASES = (
    "break-before-%", "break-before-!=", "help-syntax", "timeit-assigned", "shell-assigned",
    "cell-magic-time", "line-magic", "matplotlib-import", "display-import", "display-builtin",
    "slow-scratch-cells", "softmax-wrong-attention-positive-axis",
    "attention-wrong-mha-per-head", "piece-wrong-mha-per-batch-item", "decorators",
    "lambdas", "helper-functions", "module-constants", "numpy-star", "class-of-weights",
    "prints", "plots", "out-of-order", "beginner", "terse", "einsum", "loops-over-heads",
    "one-wrong-function", "a-scratch-cell-that-raises", "future-import-carried",
    "dataclass-annotations", "ipython-modules", "threads", "doctest-docstrings", "helper-file",
    "pylab",
)


@dataclass(frozen=True)
class Honest:
    language: str        # "zh" (the Chinese release, mha) or "en" (mha_en)
    style: str           # how this student writes, in a few words
    answers: dict        # answer cell grade id -> source; the others hold the reference
    scratch: tuple = ()  # (grade id of the cell it follows, source): cells they added
    wrong: tuple = ()    # the functions they got wrong, without knowing it
    session: tuple = ()  # out of order: grade ids / "scratch-N" / (grade id, a draft)
    covers: tuple = ()   # the cases it is there for
    # {function: why}: points the kernel gives only because its stand-in pieces are the
    # reference itself, answering a question the reference never asks. The grader must
    # not answer it (the trust rule), so the student's own wrong piece runs there.
    beyond_the_reference: dict = field(default_factory=dict)

    @property
    def assignment(self):
        return ASSIGNMENT[self.language]


def answer_cells(honest):
    """{answer cell grade id: source} of the whole notebook."""
    cells = {f"answer_{name}": reference_body(name) for name in EXERCISE.function_names}
    cells.update(QUIZ)
    cells.update(honest.answers)
    return cells


def scratch_id(number):
    return f"scratch-{number}"


def notebook_of(honest, release):
    """The student's notebook: a copy of ``release`` (a NotebookNode), filled and with
    the scratch cells inserted; each scratch cell's id is scratch-1, scratch-2..."""
    notebook = copy.deepcopy(release)
    cells = answer_cells(honest)
    for cell in notebook.cells:
        if grade_id_of(cell) in cells:
            cell.source = cells[grade_id_of(cell)]
    for number, (anchor, source) in enumerate(honest.scratch, start=1):
        ids = [cell.get("id") if grade_id_of(cell) is None else grade_id_of(cell)
               for cell in notebook.cells]
        at = ids.index(anchor) + 1
        while at < len(ids) and str(ids[at]).startswith("scratch-"):
            at += 1  # after the scratch cells already put after the same cell
        scratch = nbformat.v4.new_code_cell(source)
        scratch["id"] = scratch_id(number)
        notebook.cells.insert(at, scratch)
    return notebook


def session_sources(honest, notebook):
    """The sources the student ran, in the order they ran them (``session``)."""
    by_id = {grade_id_of(cell) or cell.get("id"): cell.source for cell in notebook.cells}
    return [by_id[step] if isinstance(step, str) else step[1] for step in honest.session]


# ====================================================================== styles
# A beginner: every step on its own line, arrays made with np.array, comments in Chinese.

BEGINNER_DOT = '''\
def dot_product(u, v):
    # 先把输入变成数组 / make them arrays first
    u = np.array(u)
    v = np.array(v)
    # 对应位置相乘，再把最后一维加起来
    products = u * v
    total = np.sum(products, axis=len(products.shape) - 1)
    return total
'''

BEGINNER_SCORES = '''\
def attention_scores(Q, K):
    Q = np.array(Q)
    K = np.array(K)
    d_k = Q.shape[-1]
    # K 的最后两维转置 / transpose the last two axes of K
    K_transposed = np.swapaxes(K, -1, -2)
    scores = np.matmul(Q, K_transposed)
    scores = scores / math.sqrt(d_k)
    return scores
'''

BEGINNER_SOFTMAX = '''\
def softmax(x, axis=-1):
    x = np.array(x)
    # 先减去最大值，防止 exp 溢出
    biggest = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - biggest)
    total = np.sum(e, axis=axis, keepdims=True)
    result = e / total
    return result
'''

BEGINNER_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    Q = np.array(Q)
    K = np.array(K)
    V = np.array(V)
    # 第一步：打分
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.array(mask, dtype=bool)
        # 不许看的位置设成一个很小的数
        scores = np.where(mask, scores, -1e9)
    # 第二步：softmax
    weights = softmax(scores, axis=-1)
    if mask is not None:
        # 一个键都不能看的行：权重全部设为 0
        weights = np.where(mask, weights, 0.0)
    # 第三步：加权求和
    output = np.matmul(weights, V)
    return output, weights
'''

BEGINNER_SPLIT = '''\
def split_heads(X, num_heads):
    X = np.array(X)
    d_model = X.shape[-1]
    if d_model % num_heads != 0:
        raise ValueError("d_model = " + str(d_model) + " 不能被 num_heads = "
                         + str(num_heads) + " 整除")
    d_k = d_model // num_heads
    # (..., T, d_model) -> (..., T, num_heads, d_k)
    new_shape = X.shape[:-1] + (num_heads, d_k)
    X = X.reshape(new_shape)
    # 交换 T 和 num_heads 两个轴
    X = np.swapaxes(X, -3, -2)
    return X
'''

BEGINNER_CONCAT = '''\
def concat_heads(H):
    H = np.array(H)
    num_heads = H.shape[-3]
    T = H.shape[-2]
    d_k = H.shape[-1]
    # 先把 num_heads 和 T 换回来：(..., T, num_heads, d_k)
    H = np.swapaxes(H, -3, -2)
    new_shape = H.shape[:-2] + (num_heads * d_k,)
    return H.reshape(new_shape)
'''

BEGINNER_PROJECTION = '''\
def output_projection(C, W_o):
    C = np.array(C)
    W_o = np.array(W_o)
    result = np.matmul(C, W_o)
    return result
'''

BEGINNER_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    X = np.array(X)
    # 1. 投影
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    # 2. 拆成多个头
    Q = split_heads(Q, num_heads)
    K = split_heads(K, num_heads)
    V = split_heads(V, num_heads)
    # 3. 每个头做注意力（掩码加一个头的维度）
    if mask is not None:
        mask = np.array(mask, dtype=bool)
        mask = np.expand_dims(mask, axis=-3)
    heads, weights = attention(Q, K, V, mask)
    # 4. 拼接，再乘 W_o
    C = concat_heads(heads)
    output = output_projection(C, W_o)
    return output, weights
'''

# A terse expert: one line where one line will do.

TERSE_DOT = '''\
def dot_product(u, v):
    return (np.asarray(u) * np.asarray(v)).sum(-1)
'''

TERSE_SCORES = '''\
def attention_scores(Q, K):
    return Q @ K.swapaxes(-1, -2) / Q.shape[-1] ** 0.5
'''

TERSE_SOFTMAX = '''\
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)
'''

TERSE_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    s = attention_scores(Q, K)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
        s = np.where(np.isneginf(s).all(-1, keepdims=True), 0, s)
    w = softmax(s)
    if mask is not None:
        w = w * mask
    return w @ V, w
'''

TERSE_SPLIT = '''\
def split_heads(X, num_heads):
    *lead, T, d = X.shape
    if d % num_heads:
        raise ValueError(f"d_model={d} not divisible by num_heads={num_heads}")
    return X.reshape(*lead, T, num_heads, d // num_heads).swapaxes(-2, -3)
'''

TERSE_CONCAT = '''\
def concat_heads(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)
'''

TERSE_PROJECTION = '''\
def output_projection(C, W_o):
    return C.dot(W_o)
'''

TERSE_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
    heads, w = attention(Q, K, V, None if mask is None else np.asarray(mask)[..., None, :, :])
    return output_projection(concat_heads(heads), W_o), w
'''

# einsum for everything that is a sum over an axis.

EINSUM_DOT = '''\
def dot_product(u, v):
    return np.einsum("...i,...i->...", u, v)
'''

EINSUM_SCORES = '''\
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return np.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k)
'''

EINSUM_SOFTMAX = '''\
def softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=axis, keepdims=True)
'''

EINSUM_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is None:
        weights = softmax(scores)
    else:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
        has_key = mask.any(axis=-1, keepdims=True)
        weights = softmax(np.where(has_key, scores, 0.0))
        weights = np.where(mask, weights, 0.0)
    return np.einsum("...qk,...kv->...qv", weights, V), weights
'''

EINSUM_SPLIT = '''\
def split_heads(X, num_heads):
    d_model = X.shape[-1]
    if d_model % num_heads != 0:
        raise ValueError(f"d_model {d_model} 不能平均分给 {num_heads} 个头")
    per_head = X.reshape(X.shape[:-1] + (num_heads, d_model // num_heads))
    return np.einsum("...thd->...htd", per_head)
'''

EINSUM_CONCAT = '''\
def concat_heads(H):
    h, T, d_k = H.shape[-3:]
    return np.einsum("...htd->...thd", H).reshape(H.shape[:-3] + (T, h * d_k))
'''

EINSUM_PROJECTION = '''\
def output_projection(C, W_o):
    return np.einsum("...tc,cd->...td", C, W_o)
'''

EINSUM_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    def project(W):
        return split_heads(np.einsum("...td,de->...te", X, W), num_heads)

    Q, K, V = project(W_q), project(W_k), project(W_v)
    if mask is not None:
        mask = np.expand_dims(mask, -3)
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

# Loops over heads, the way the article draws it: correct, if slow.

LOOP_SCORES = '''\
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ np.swapaxes(K, -2, -1) / np.sqrt(d_k).item()  # .item(): a Python float
'''

LOOP_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nobody = ~mask.any(axis=-1, keepdims=True)     # queries that may see no key
        scores = np.where(mask | nobody, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

LOOP_SPLIT = '''\
def split_heads(X, num_heads):
    d_model = X.shape[-1]
    if d_model % num_heads:
        raise ValueError(f"cannot split d_model={d_model} into num_heads={num_heads} heads")
    d_k = d_model // num_heads
    heads = [X[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)]
    return np.stack(heads, axis=-3)
'''

LOOP_CONCAT = '''\
def concat_heads(H):
    return np.concatenate([H[..., i, :, :] for i in range(H.shape[-3])], axis=-1)
'''

LOOP_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    outputs, all_weights = [], []
    for i in range(num_heads):
        out_i, w_i = attention(Q[..., i, :, :], K[..., i, :, :], V[..., i, :, :], mask)
        outputs.append(out_i)
        all_weights.append(w_i)
    heads = np.stack(outputs, axis=-3)
    weights = np.stack(all_weights, axis=-3)
    return output_projection(concat_heads(heads), W_o), weights
'''

# Small helper functions, some shared between cells.

HELPER_DOT = '''\
def _as_array(a):
    """数组，不复制 / an array, without a copy"""
    return np.asarray(a)


def _last_axis_sum(a):
    return a.sum(axis=-1)


def dot_product(u, v):
    return _last_axis_sum(_as_array(u) * _as_array(v))
'''

HELPER_SCORES = '''\
def _transpose_last_two(M):
    return np.swapaxes(M, -1, -2)


def attention_scores(Q, K):
    Q, K = _as_array(Q), _as_array(K)
    return Q @ _transpose_last_two(K) / math.sqrt(Q.shape[-1])
'''

HELPER_SOFTMAX = '''\
def _stable_exp(x, axis):
    """exp(x - max)：结果不变，但不会溢出"""
    return np.exp(x - np.max(x, axis=axis, keepdims=True))


def softmax(x, axis=-1):
    e = _stable_exp(_as_array(x), axis)
    return e / np.sum(e, axis=axis, keepdims=True)
'''

HELPER_ATTENTION = '''\
def _masked(scores, mask):
    """不许看的键得 -inf；一个键都不许看的查询整行得 0（之后再清零）"""
    has_key = np.any(mask, axis=-1, keepdims=True)
    return np.where(has_key, np.where(mask, scores, -np.inf), 0.0)


def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is None:
        weights = softmax(scores)
    else:
        mask = np.asarray(mask, dtype=bool)
        weights = np.where(mask, softmax(_masked(scores, mask)), 0.0)
    return weights @ _as_array(V), weights
'''

HELPER_SPLIT = '''\
def _check_divisible(d_model, num_heads):
    if num_heads < 1 or d_model % num_heads:
        raise ValueError(f"d_model={d_model} 不能分成 num_heads={num_heads} 个一样宽的头")
    return d_model // num_heads


def _swap_heads_and_time(A):
    return np.swapaxes(A, -3, -2)


def split_heads(X, num_heads):
    X = _as_array(X)
    d_k = _check_divisible(X.shape[-1], num_heads)
    return _swap_heads_and_time(X.reshape(*X.shape[:-1], num_heads, d_k))
'''

HELPER_CONCAT = '''\
def concat_heads(H):
    per_token = _swap_heads_and_time(_as_array(H))   # (..., T, h, d_k)
    return per_token.reshape(*per_token.shape[:-2], -1)
'''

HELPER_MHA = '''\
def _project(X, W, num_heads):
    return split_heads(X @ W, num_heads)


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    X = _as_array(X)
    Q, K, V = (_project(X, W, num_heads) for W in (W_q, W_k, W_v))
    if mask is not None:
        mask = _as_array(mask)[..., np.newaxis, :, :]
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

# Decorators with functools.wraps.

DECORATED_DOT = '''\
import functools


def arrays_in(func):
    """Turn list arguments into arrays, so that I can try things with plain lists."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        args = [np.asarray(a) if isinstance(a, (list, tuple)) else a for a in args]
        return func(*args, **kwargs)
    return wrapper


@arrays_in
def dot_product(u, v):
    return np.sum(u * v, axis=-1)
'''

DECORATED_SCORES = '''\
@arrays_in
def attention_scores(Q, K):
    return np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(K.shape[-1])
'''

DECORATED_SOFTMAX = '''\
@arrays_in
def softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True)
'''

DECORATED_ATTENTION = '''\
def returns_pair(func):
    """Fail loudly (while I work) if a function forgets to return (output, weights)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        result = func(*args, **kwargs)
        assert isinstance(result, tuple) and len(result) == 2, func.__name__
        return result
    return wrapper


@returns_pair
@arrays_in
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        empty = ~mask.any(axis=-1, keepdims=True)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(empty, 0.0, scores)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

DECORATED_SPLIT = '''\
@arrays_in
def split_heads(X, num_heads):
    d_model = X.shape[-1]
    if d_model % num_heads != 0:
        raise ValueError(f"{d_model} columns cannot be split into {num_heads} equal heads")
    return np.swapaxes(X.reshape(*X.shape[:-1], num_heads, d_model // num_heads), -2, -3)
'''

DECORATED_CONCAT = '''\
@arrays_in
def concat_heads(H):
    joined = np.swapaxes(H, -2, -3)
    return joined.reshape(*joined.shape[:-2], joined.shape[-2] * joined.shape[-1])
'''

DECORATED_PROJECTION = '''\
@arrays_in
def output_projection(C, W_o):
    return C @ W_o
'''

DECORATED_MHA = '''\
@returns_pair
@arrays_in
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    if mask is not None:
        mask = np.asarray(mask)[..., None, :, :]
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

# Lambdas assigned to names wherever a function is one expression.

LAMBDA_DOT = '''\
dot_product = lambda u, v: np.sum(np.asarray(u) * np.asarray(v), axis=-1)
'''

LAMBDA_SCORES = '''\
attention_scores = lambda Q, K: Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
'''

LAMBDA_SOFTMAX = '''\
_normalise = lambda e, axis: e / e.sum(axis=axis, keepdims=True)
softmax = lambda x, axis=-1: _normalise(np.exp(x - x.max(axis=axis, keepdims=True)), axis)
'''

LAMBDA_ATTENTION = '''\
_hide = lambda scores, mask: np.where(mask, scores, -np.inf)
_nobody = lambda mask: ~np.any(mask, axis=-1, keepdims=True)


def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is None:
        weights = softmax(scores)
    else:
        mask = np.asarray(mask, dtype=bool)
        weights = softmax(np.where(_nobody(mask), 0.0, _hide(scores, mask)))
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

LAMBDA_CONCAT = '''\
concat_heads = lambda H: np.swapaxes(H, -3, -2).reshape(
    *H.shape[:-3], H.shape[-2], H.shape[-3] * H.shape[-1])
'''

LAMBDA_PROJECTION = '''\
output_projection = lambda C, W_o: C @ W_o
'''

# Constants at module level, named once and used in several cells.

CONSTANT_DOT = '''\
FEATURES = -1      # the axis of the numbers of one token
TIME = -2          # the axis of the tokens
HEADS = -3         # the axis of the heads, after split_heads
BLOCKED = -1e9     # the score of a key a query may not see: exp() of it is 0


def dot_product(u, v):
    return np.sum(np.multiply(u, v), axis=FEATURES)
'''

CONSTANT_SCORES = '''\
def attention_scores(Q, K):
    return Q @ np.swapaxes(K, FEATURES, TIME) / math.sqrt(Q.shape[FEATURES])
'''

CONSTANT_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, BLOCKED)
    weights = softmax(scores, axis=FEATURES)
    if mask is not None:
        seen = np.any(mask, axis=FEATURES, keepdims=True)
        weights = np.where(seen, weights, 0.0)
    return weights @ V, weights
'''

CONSTANT_SPLIT = '''\
def split_heads(X, num_heads):
    d_model = X.shape[FEATURES]
    if d_model % num_heads != 0:
        raise ValueError(f"d_model={d_model}, num_heads={num_heads}: not divisible")
    return np.swapaxes(X.reshape(X.shape[:-1] + (num_heads, d_model // num_heads)),
                       HEADS, TIME)
'''

CONSTANT_CONCAT = '''\
def concat_heads(H):
    tokens_first = np.swapaxes(H, HEADS, TIME)
    return tokens_first.reshape(tokens_first.shape[:-2] + (-1,))
'''

CONSTANT_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = [split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v)]
    if mask is not None:
        mask = np.expand_dims(mask, HEADS)
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

# from numpy import *: numpy's names without the np. prefix.

STAR_DOT = '''\
from numpy import *


def dot_product(u, v):
    return sum(asarray(u) * asarray(v), axis=-1)   # numpy 的 sum，不是内置的
'''

STAR_SCORES = '''\
def attention_scores(Q, K):
    return matmul(Q, swapaxes(K, -1, -2)) / math.sqrt(shape(Q)[-1])
'''

STAR_SOFTMAX = '''\
def softmax(x, axis=-1):
    e = exp(x - amax(x, axis=axis, keepdims=True))
    return e / sum(e, axis=axis, keepdims=True)
'''

STAR_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is None:
        weights = softmax(scores)
    else:
        mask = asarray(mask, dtype=bool_)
        seen = any(mask, axis=-1, keepdims=True)
        weights = softmax(where(seen, where(mask, scores, -inf), 0.0))
        weights = where(mask, weights, 0.0)
    return matmul(weights, V), weights
'''

STAR_SPLIT = '''\
def split_heads(X, num_heads):
    d_model = shape(X)[-1]
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} 除以 num_heads={num_heads} 除不尽")
    return swapaxes(reshape(X, shape(X)[:-1] + (num_heads, d_model // num_heads)), -2, -3)
'''

STAR_CONCAT = '''\
def concat_heads(H):
    T_first = swapaxes(H, -2, -3)
    return reshape(T_first, shape(T_first)[:-2] + (shape(H)[-3] * shape(H)[-1],))
'''

STAR_PROJECTION = '''\
def output_projection(C, W_o):
    return matmul(C, W_o)
'''

STAR_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(matmul(X, W_q), num_heads)
    K = split_heads(matmul(X, W_k), num_heads)
    V = split_heads(matmul(X, W_v), num_heads)
    if mask is not None:
        mask = expand_dims(asarray(mask, dtype=bool_), -3)
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

# A class that holds the weights; the graded function builds it and calls it.

CLASS_MHA = '''\
class MultiHeadAttention:
    """Holds the four matrices and the number of heads; calls the functions above."""

    def __init__(self, W_q, W_k, W_v, W_o, num_heads):
        self.W_q, self.W_k, self.W_v, self.W_o = W_q, W_k, W_v, W_o
        self.num_heads = num_heads

    def project(self, X, W):
        return split_heads(X @ W, self.num_heads)

    def __call__(self, X, mask=None):
        Q, K, V = (self.project(X, W) for W in (self.W_q, self.W_k, self.W_v))
        if mask is not None:
            mask = np.asarray(mask)[..., np.newaxis, :, :]
        heads, weights = attention(Q, K, V, mask)
        return output_projection(concat_heads(heads), self.W_o), weights


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    layer = MultiHeadAttention(W_q, W_k, W_v, W_o, num_heads)
    return layer(X, mask)
'''

CLASS_SCRATCH = '''\
rng = np.random.default_rng(0)
d_model = 8
layer = MultiHeadAttention(*(rng.normal(size=(d_model, d_model)) for _ in range(4)), num_heads=2)
out, w = layer(rng.normal(size=(3, 5, d_model)), mask=np.tril(np.ones((5, 5), dtype=bool)))
print(out.shape, w.shape, np.allclose(w.sum(-1), 1))
'''

# A student who prints and plots inside their answer cells.

PLOTTED_SOFTMAX = '''\
%matplotlib inline
import matplotlib.pyplot as plt


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


logits = np.array([2.0, 1.0, 0.1])
print("softmax", logits, "->", softmax(logits).round(3))
plt.bar(["a", "b", "c"], softmax(logits))
plt.title("softmax of [2, 1, 0.1]")
plt.show()
'''

PLOTTED_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(mask.any(axis=-1, keepdims=True), scores, 0.0)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights


rng = np.random.default_rng(1)
Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
out, w = attention(Q, K, V, mask=np.tril(np.ones((4, 4), dtype=bool)))
print("output", out.shape, "weights", w.shape)
print(w.round(2))
plt.imshow(w, cmap="viridis")
plt.colorbar()
plt.title("causal attention weights")
plt.show()
'''

PLOTTED_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights


rng = np.random.default_rng(2)
X = rng.normal(size=(5, 6))
Ws = [rng.normal(size=(6, 6)) / 6 ** 0.5 for _ in range(4)]
out, w = multi_head_attention(X, *Ws, num_heads=3)
print("X", X.shape, "-> output", out.shape, "weights", w.shape)
fig, axes = plt.subplots(1, 3, figsize=(9, 3))
for head, ax in enumerate(axes):
    ax.imshow(w[head], vmin=0, vmax=1)
    ax.set_title(f"head {head}")
plt.show()
'''

# ====================================================================== the cases

PEP8_MODULO_SPLIT = '''\
def split_heads(X, num_heads):
    X = np.asarray(X)
    if (X.shape[-1]
        % num_heads != 0):
        raise ValueError(
            f"d_model={X.shape[-1]} 不能被 num_heads={num_heads} 整除")
    d_k = X.shape[-1] // num_heads
    return np.swapaxes(
        X.reshape(*X.shape[:-1], num_heads, d_k),
        -3, -2)
'''

PEP8_MODULO_SCORES = '''\
def attention_scores(Q, K):
    Q, K = np.asarray(Q), np.asarray(K)
    return (Q @ np.swapaxes(K, -1, -2)
            / math.sqrt(Q.shape[-1]))
'''

PEP8_NOT_EQUAL_SPLIT = '''\
def split_heads(X, num_heads):
    X = np.asarray(X)
    d_model = X.shape[-1]
    if (d_model % num_heads
            != 0):
        raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
    per_token = X.reshape(*X.shape[:-1], num_heads, d_model // num_heads)
    return np.swapaxes(per_token, -2, -3)
'''

PEP8_NOT_EQUAL_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if (K.shape[-2]
            != V.shape[-2]):
        raise ValueError("K and V must have as many rows")
    scores = attention_scores(Q, K)
    if mask is None:
        weights = softmax(scores, axis=-1)
    else:
        mask = np.asarray(mask, dtype=bool)
        anything = np.any(mask, axis=-1, keepdims=True)
        weights = np.where(mask,
                           softmax(np.where(anything,
                                            np.where(mask, scores, -np.inf),
                                            0.0),
                                   axis=-1),
                           0.0)
    return weights @ V, weights
'''

HELP_AFTER_SPLIT = reference_body("split_heads") + '''
# 这个函数的参数顺序是什么？/ what order do its arguments come in?
np.swapaxes?
'''

TIMEIT_AFTER_SPLIT = reference_body("split_heads") + '''

X = np.random.randn(4, 10, 8)
t = %timeit -o split_heads(X, 2)
print(f"split_heads takes {t.average * 1e6:.1f} µs")
'''

SHELL_AFTER_CONCAT = reference_body("concat_heads") + '''

files = !ls
print("my folder:", files)
'''

TIMED_ATTENTION = "%%time\n" + reference_body("attention") + '''

Q = np.random.randn(2, 3, 4)
out, w = attention(Q, Q, Q)
print(out.shape, w.shape)
'''

MATPLOTLIB_SOFTMAX = '''\
import matplotlib.pyplot as plt


def softmax(x, axis=-1):
    x = np.asarray(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)


temperatures = [0.5, 1, 2]
for temperature in temperatures:
    plt.plot(softmax(np.array([3.0, 1.0, 0.2]) / temperature), marker="o",
             label=f"T={temperature}")
plt.legend()
plt.show()
'''

DISPLAY_IMPORTED_PROJECTION = '''\
from IPython.display import display


def output_projection(C, W_o):
    C, W_o = np.asarray(C), np.asarray(W_o)
    if C.shape[-1] != W_o.shape[0]:
        raise ValueError(f"C has width {C.shape[-1]} but W_o has {W_o.shape[0]} rows")
    return C @ W_o


display(output_projection(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]])))
'''

DISPLAY_BUILTIN_DOT = '''\
def dot_product(u, v):
    u, v = np.asarray(u), np.asarray(v)
    return np.sum(u * v, axis=-1)


display(dot_product(np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])))
'''

SLOW_SCRATCH = f'''\
import time

# 跑慢一点，风扇不转了再计时 / let my laptop cool down before timing
time.sleep({SLEEP_SECONDS})
rng = np.random.default_rng()
X = rng.normal(size=(2, 5, 6))
start = time.perf_counter()
out, w = multi_head_attention(X, *(np.eye(6) for _ in range(4)), num_heads=2)
print(f"one call: {{(time.perf_counter() - start) * 1e3:.2f}} ms")
'''

# softmax forgets keepdims in its denominator; attention calls it with a positive axis.
KEEPDIMS_SOFTMAX = '''\
def softmax(x, axis=-1):
    exps = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exps / np.sum(exps, axis=axis)
'''

POSITIVE_AXIS_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        allowed = np.asarray(mask, dtype=bool)
        scores = np.where(allowed, scores, -np.inf)
        scores = np.where(allowed.any(axis=-1, keepdims=True), scores, 0.0)
    weights = softmax(scores, axis=scores.ndim - 1)
    if mask is not None:
        weights = np.where(allowed, weights, 0.0)
    return weights @ V, weights
'''

# attention gives NaN to a query that may see no key; mha calls it once per head.
NAN_ROWS_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)   # 不许看的位置变成 -inf
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
'''

PER_HEAD_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    head_outputs = []
    head_weights = []
    for h in range(num_heads):  # 每个头单独算 / one head at a time
        out, w = attention(Q[..., h, :, :], K[..., h, :, :], V[..., h, :, :], mask)
        head_outputs.append(out)
        head_weights.append(w)
    heads = np.stack(head_outputs, axis=-3)
    weights = np.stack(head_weights, axis=-3)
    return output_projection(concat_heads(heads), W_o), weights
'''

# split_heads reshapes straight to (..., h, T, d_k); mha works one sequence at a time.
NO_TRANSPOSE_SPLIT = '''\
def split_heads(X, num_heads):
    *batch, T, d_model = X.shape
    if d_model % num_heads != 0:
        raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
    return X.reshape(*batch, num_heads, T, d_model // num_heads)
'''

PER_ITEM_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    X = np.asarray(X)
    if X.ndim > 2:  # one sequence at a time
        if mask is not None:
            mask = np.broadcast_to(mask, X.shape[:-1] + (X.shape[-2],))
        results = [multi_head_attention(X[b], W_q, W_k, W_v, W_o, num_heads,
                                        None if mask is None else mask[b])
                   for b in range(X.shape[0])]
        return (np.stack([out for out, _ in results]),
                np.stack([weights for _, weights in results]))
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

NP_DOT = '''\
def dot_product(u, v):
    # np.dot 就是点积 / np.dot is the dot product
    return np.dot(u, v)
'''

NP_SQRT_SCORES = '''\
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
'''

FOUR_AXES_CONCAT = '''\
def concat_heads(H):
    B, h, T, d_k = H.shape          # (batch, heads, tokens, d_k)
    return H.transpose(0, 2, 1, 3).reshape(B, T, h * d_k)
'''

MASK_WITHOUT_HEAD_AXIS_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    heads, weights = attention(Q, K, V, mask)   # the mask broadcasts over the heads
    return output_projection(concat_heads(heads), W_o), weights
'''

# ---------------------------------------------------------------- out of order

OVERFLOWING_SOFTMAX = '''\
def softmax(x, axis=-1):
    exps = np.exp(x)
    return exps / exps.sum(axis=axis, keepdims=True)
'''

FIXED_SOFTMAX = '''\
def softmax(x, axis=-1):
    # 改过：先减最大值，1e4 也不会溢出 / fixed: subtract the max first
    exps = np.exp(x - x.max(axis=axis, keepdims=True))
    return exps / exps.sum(axis=axis, keepdims=True)
'''

ATTENTION_TAKE_TWO = '''\
# attention, take 2: a query that may see nothing gets zeros (the first try gave NaN)
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        alone = ~mask.any(axis=-1, keepdims=True)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(alone, 0.0, scores)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

HELPER_LATER_SOFTMAX = '''\
def softmax(x, axis=-1):
    e = _stable_exp(np.asarray(x), axis)   # 辅助函数在下面 / the helper is further down
    return e / e.sum(axis=axis, keepdims=True)
'''

HELPER_LATER_CELL = '''\
def _stable_exp(x, axis):
    return np.exp(x - np.max(x, axis=axis, keepdims=True))
'''

# ---------------------------------------------------------------- more styles

TYPED_DOT = '''\
from __future__ import annotations


def dot_product(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    u, v = np.asarray(u), np.asarray(v)
    if u.shape[-1] != v.shape[-1]:
        raise ValueError(f"last axes differ: {u.shape} vs {v.shape}")
    return (u * v).sum(axis=-1)
'''

TYPED_ATTENTION = '''\
from typing import Optional, Tuple


def attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray,
              mask: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    scores: np.ndarray = attention_scores(Q, K)
    if mask is not None:
        keep = np.asarray(mask, dtype=bool)
        scores = np.where(keep, scores, -np.inf)
        scores = np.where(keep.any(axis=-1, keepdims=True), scores, 0.0)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = np.where(keep, weights, 0.0)
    return weights @ V, weights
'''

TYPED_MHA = '''\
def multi_head_attention(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray,
                         W_o: np.ndarray, num_heads: int,
                         mask: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
    head_mask = None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :]
    heads, weights = attention(Q, K, V, head_mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

KEYWORD_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q=Q, K=K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(np.any(mask, axis=-1, keepdims=True), scores, 0.0)
    weights = softmax(x=scores, axis=-1)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

KEYWORD_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X=X @ W_q, num_heads=num_heads)
    K = split_heads(X=X @ W_k, num_heads=num_heads)
    V = split_heads(X=X @ W_v, num_heads=num_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    heads, weights = attention(Q=Q, K=K, V=V, mask=mask)
    output = output_projection(C=concat_heads(H=heads), W_o=W_o)
    return output, weights
'''

FUSED_QKV_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    # one matrix product for Q, K and V together, as real implementations do
    W_qkv = np.concatenate([W_q, W_k, W_v], axis=1)        # (d_model, 3 d_model)
    Q, K, V = np.split(X @ W_qkv, 3, axis=-1)
    Q, K, V = (split_heads(M, num_heads) for M in (Q, K, V))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    heads, weights = attention(Q, K, V, mask)
    return output_projection(concat_heads(heads), W_o), weights
'''

INLINE_ATTENTION_MHA = '''\
def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = split_heads(X @ W_q, num_heads)
    K = split_heads(X @ W_k, num_heads)
    V = split_heads(X @ W_v, num_heads)
    # 注意力直接写在这里 / attention written out here
    scores = attention_scores(Q, K)                         # (..., h, T, T)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)[..., None, :, :]   # (..., 1, T, T)
        scores = np.where(m, scores, -np.inf)
        scores = np.where(m.any(axis=-1, keepdims=True), scores, 0.0)
    weights = softmax(scores)
    if mask is not None:
        weights = np.where(m, weights, 0.0)
    heads = weights @ V
    return output_projection(concat_heads(heads), W_o), weights
'''

COLUMNS_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(mask.any(axis=-1, keepdims=True), scores, 0.0)
    # I think in columns: keys down the rows, one column per query, normalised down
    by_column = np.swapaxes(scores, -1, -2)
    weights = np.swapaxes(softmax(by_column, axis=-2), -1, -2)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights
'''

NAN_TO_NUM_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    with np.errstate(invalid="ignore"):   # a query that sees nothing: -inf - -inf
        weights = softmax(scores, axis=-1)
    weights = np.nan_to_num(weights, nan=0.0)   # ... whose NaN weights become 0
    return weights @ V, weights
'''

RECURSIVE_DOT = '''\
def dot_product(u, v):
    u = np.asarray(u)
    v = np.asarray(v)
    if u.ndim == 1:
        total = 0
        for a, b in zip(u, v):   # 一个一个乘起来 / one pair at a time
            total = total + a * b
        return total
    return np.array([dot_product(a, b) for a, b in zip(u, v)])
'''

ROW_LOOP_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scores = attention_scores(Q, K)
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    weights = np.zeros_like(scores)
    for idx in np.ndindex(scores.shape[:-1]):   # every query of every sequence
        row_mask = mask[idx]
        if row_mask.any():
            weights[idx][row_mask] = softmax(scores[idx][row_mask])
    return weights @ V, weights
'''

MATCH_ATTENTION = '''\
def attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    match mask:
        case None:
            weights = softmax(scores)
        case _:
            keep = np.asarray(mask, dtype=bool)
            blocked = np.where(keep, scores, -np.inf)
            anyone = keep.any(axis=-1, keepdims=True)
            weights = np.where(keep, softmax(np.where(anyone, blocked, 0.0)), 0.0)
    return weights @ V, weights
'''

WALRUS_SPLIT = '''\
def split_heads(X, num_heads):
    if (rest := X.shape[-1] % num_heads):
        raise ValueError(f"d_model={X.shape[-1]} leaves {rest} over with num_heads={num_heads}")
    return np.moveaxis(X.reshape(*X.shape[:-1], num_heads, -1), -2, -3)
'''

MOVEAXIS_CONCAT = '''\
def concat_heads(H):
    return np.moveaxis(H, -3, -2).reshape(*H.shape[:-3], H.shape[-2], -1)
'''

WITH_PRINT = {  # a print after each definition, to see that it works
    "answer_dot_product": reference_body("dot_product")
    + '\n\nprint("点积 / dot:", dot_product(np.array([1, 2, 3]), np.array([4, 5, 6])))\n',
    "answer_attention_scores": reference_body("attention_scores")
    + '\n\nprint("scores:", attention_scores(np.ones((2, 4)), np.ones((3, 4))).shape)\n',
    "answer_softmax": reference_body("softmax")
    + '\n\nprint(f"{softmax(np.array([0.0, np.log(3.0)]))=}")\n',
    "answer_split_heads": reference_body("split_heads")
    + '\n\nprint(split_heads(np.arange(12.0).reshape(2, 6), 3))\n',
    "answer_multi_head_attention": reference_body("multi_head_attention")
    + '\n\nout, w = multi_head_attention(np.ones((4, 6)), *[np.eye(6)] * 4, num_heads=2)\n'
      'print(out.shape, w.shape)\n',
}

SCRATCH_EXPERIMENTS = (
    ("answer_softmax", "np.set_printoptions(precision=3, suppress=True)\n"
                       "print(softmax(np.array([[1e4, 0.0], [-1e4, -1e4]])))\n"),
    ("answer_attention", "np.random.seed(0)\n"
                         "Q = np.random.randn(2, 3, 4)\n"
                         "out, w = attention(Q, Q, Q)\n"
                         "assert np.allclose(w.sum(axis=-1), 1)\n"
                         "w\n"),
    ("answer_attention", "attention(Q, Q)  # 忘了 V / forgot V\n"),
    ("answer_split_heads", "X = np.arange(24.0).reshape(2, 3, 4)\n"
                           "H = split_heads(X, 2)\n"
                           "print(H.shape)\n"
                           "H[0, 1]\n"),
    ("answer_concat_heads", "assert np.array_equal(concat_heads(split_heads(X, 2)), X)\n"
                            "print('concat undoes split')\n"),
)


def _all(prefix, **overrides):
    """The eight answer cells of one style (names as in the module's constants)."""
    names = {"dot_product": "DOT", "attention_scores": "SCORES", "softmax": "SOFTMAX",
             "attention": "ATTENTION", "split_heads": "SPLIT", "concat_heads": "CONCAT",
             "output_projection": "PROJECTION", "multi_head_attention": "MHA"}
    cells = {}
    for function, suffix in names.items():
        source = overrides.get(function, globals().get(f"{prefix}_{suffix}"))
        if source is not None:
            cells[f"answer_{function}"] = source
    return cells


# ====================================================================== the corpus

# ------------------------------------------------------------ what a kernel keeps between cells
# A future import in the first answer cell holds for every later cell, as IPython's compiler
# keeps it; a dataclass under it reads its module through sys.modules; IPython's modules
# besides IPython.display, as older lessons and copied first cells import them.
FUTURE_DOT = "from __future__ import annotations\n\n" + reference_body("dot_product")
ANNOTATED_SOFTMAX = (
    "from IPython.core.display import HTML, Markdown\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "InteractiveShell.ast_node_interactivity = 'all'\n\n"
    + reference_body("softmax").replace("def softmax(x, axis=-1):",
                                        "def softmax(x: ArrayLike, axis: int = -1) -> ArrayLike:"))
DATACLASS_MHA = (
    "from dataclasses import dataclass\n\n\n@dataclass\nclass HeadShape:\n"
    "    heads: int\n    width: int\n\n\n" + reference_body("multi_head_attention"))
CAPTURED_SCRATCH = (
    "from IPython.utils.capture import capture_output\n\n"
    "with capture_output() as captured:\n"
    "    print(softmax(np.array([1.0, 2.0])))\n"
    "display(HTML('<b>softmax done</b>'))\n")

# Each head in a thread of its own; every function's docstring shows doctest examples.
THREADED_MHA = '''\
from concurrent.futures import ThreadPoolExecutor


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """All heads at once, one thread each.

    >>> X = np.ones((2, 4))
    >>> W = np.eye(4)
    >>> multi_head_attention(X, W, W, W, W, 2)[0].shape
    (2, 4)
    """
    X = np.asarray(X)
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
    m = None if mask is None else np.asarray(mask)[..., None, :, :]

    def head(i):
        return attention(Q[..., i:i + 1, :, :], K[..., i:i + 1, :, :],
                         V[..., i:i + 1, :, :], m)

    with ThreadPoolExecutor(max_workers=4) as pool:
        pairs = list(pool.map(head, range(num_heads)))
    heads = np.concatenate([o for o, _ in pairs], axis=-3)
    weights = np.concatenate([w for _, w in pairs], axis=-3)
    return output_projection(concat_heads(heads), W_o), weights
'''

# A helper module that the notebook writes itself, then runs, imports and reads.
HELPER_FILE = {
    "answer_dot_product": "%%writefile helper.py\nimport numpy as np\n\n\n"
                          + reference_body("dot_product"),
    "answer_attention_scores": "%run helper.py\n\n" + reference_body("attention_scores"),
    "answer_softmax": "import helper\n\nassert helper.dot_product(np.ones(3), np.ones(3)) == 3\n\n"
                      + reference_body("softmax"),
    "answer_attention": "exec(open('helper.py', encoding='utf-8').read())\n\n"
                        + reference_body("attention"),
}

# An older lesson's first line: %pylab puts numpy's and pyplot's names in the namespace.
PYLAB_SOFTMAX = ("%pylab inline\n\n\ndef softmax(x, axis=-1):\n"
                 "    e = exp(x - amax(x, axis=axis, keepdims=True))\n"
                 "    return e / e.sum(axis=axis, keepdims=True)\n")


def _doctested(function):
    """The reference's function with a docstring of doctest examples (prompts and a
    question in a comment, which only look like IPython's syntax)."""
    body = reference_body(function)
    head, _, rest = body.partition("):\n")
    examples = "".join(f"    >>> {function}  # example {n}: what does it give?\n    ...\n"
                       for n in range(12))
    return f'{head}):\n    """{function}, as the lesson defines it.\n\n{examples}    """\n{rest}'


NOTEBOOKS = {
    # ------------------------------------------------------------ whole styles
    "lin_beginner": Honest("zh", "a beginner: every step on its own line", _all("BEGINNER"),
                           scratch=SCRATCH_EXPERIMENTS[:2], covers=("beginner",)),
    "sam_terse": Honest("en", "a terse expert", dict(
        _all("TERSE"), answer_quiz_1='quiz_1 = "b"', answer_quiz_6="quiz_6 = 128 ** 0.5"),
        covers=("terse",)),
    "mei_einsum": Honest("zh", "einsum wherever something is summed", _all("EINSUM"),
                         covers=("einsum",)),
    "omar_head_loops": Honest("en", "loops over the heads, as the article draws them", _all(
        "LOOP", dot_product=None, softmax=None, output_projection=None),
        covers=("loops-over-heads",)),
    "jun_helpers": Honest("zh", "small helper functions shared between cells", _all("HELPER"),
                          covers=("helper-functions",)),
    "ada_decorators": Honest("en", "decorators with functools.wraps", _all("DECORATED"),
                             covers=("decorators",)),
    "hui_lambdas": Honest("zh", "lambdas assigned to names", dict(
        _all("LAMBDA"), answer_quiz_5="quiz_5 = (4 * 768 * 768, 4 * 768 * 768)"),
        covers=("lambdas",)),
    "ken_constants": Honest("en", "module-level constants for the axes and the mask",
                            _all("CONSTANT"), covers=("module-constants",)),
    "yu_numpy_star": Honest("zh", "from numpy import *", _all("STAR"), covers=("numpy-star",)),
    "eva_class": Honest("en", "a class that holds the weights",
                        {"answer_multi_head_attention": CLASS_MHA},
                        scratch=(("answer_multi_head_attention", CLASS_SCRATCH),),
                        covers=("class-of-weights",)),
    "ivan_plots": Honest("en", "prints and plots in the answer cells", {
        "answer_softmax": PLOTTED_SOFTMAX, "answer_attention": PLOTTED_ATTENTION,
        "answer_multi_head_attention": PLOTTED_MHA},
        covers=("prints", "plots", "line-magic", "matplotlib-import")),
    "xia_prints": Honest("zh", "a print after each definition", dict(
        WITH_PRINT, answer_quiz_6="quiz_6 = math.sqrt(128)"),
        scratch=SCRATCH_EXPERIMENTS[2:], covers=("prints", "a-scratch-cell-that-raises")),
    "ben_typed": Honest("en", "type hints and `from __future__ import annotations`", {
        "answer_dot_product": TYPED_DOT, "answer_attention": TYPED_ATTENTION,
        "answer_multi_head_attention": TYPED_MHA}),
    "ling_keywords": Honest("zh", "every call with keyword arguments", {
        "answer_attention": KEYWORD_ATTENTION, "answer_multi_head_attention": KEYWORD_MHA}),
    "raj_fused_qkv": Honest("en", "one matrix product for Q, K and V",
                            {"answer_multi_head_attention": FUSED_QKV_MHA}),
    "fang_inline_attention": Honest("zh", "multi-head attention with attention written out",
                                    {"answer_multi_head_attention": INLINE_ATTENTION_MHA}),
    "zoe_nan_to_num": Honest("en", "-inf, then np.nan_to_num for a query that sees nothing",
                             {"answer_attention": NAN_TO_NUM_ATTENTION}),
    "tao_recursive": Honest("zh", "a beginner: a recursive dot product, a loop over rows", {
        "answer_dot_product": RECURSIVE_DOT, "answer_attention": ROW_LOOP_ATTENTION,
        "answer_softmax": BEGINNER_SOFTMAX}, covers=("beginner",)),
    "leo_match": Honest("en", "match statements, the walrus, np.moveaxis", {
        "answer_attention": MATCH_ATTENTION, "answer_split_heads": WALRUS_SPLIT,
        "answer_concat_heads": MOVEAXIS_CONCAT, "answer_quiz_4": 'quiz_4 = "A"'}),

    # ------------------------------------------------------------ the cases
    "pei_pep8_modulo": Honest("zh", "PEP 8: break before the operator (%)", {
        "answer_split_heads": PEP8_MODULO_SPLIT, "answer_attention_scores": PEP8_MODULO_SCORES},
        covers=("break-before-%",)),
    "noah_pep8_not_equal": Honest("en", "PEP 8: break before the operator (!=)", {
        "answer_split_heads": PEP8_NOT_EQUAL_SPLIT, "answer_attention": PEP8_NOT_EQUAL_ATTENTION},
        covers=("break-before-!=",)),
    "qing_help": Honest("zh", "np.swapaxes? after the definition",
                        {"answer_split_heads": HELP_AFTER_SPLIT}, covers=("help-syntax",)),
    "maya_timeit": Honest("en", "t = %timeit -o after the definition",
                          {"answer_split_heads": TIMEIT_AFTER_SPLIT},
                          covers=("timeit-assigned",)),
    "wei_shell": Honest("zh", "files = !ls after the definition",
                        {"answer_concat_heads": SHELL_AFTER_CONCAT}, covers=("shell-assigned",)),
    "tom_cell_time": Honest("en", "%%time at the top of an answer cell",
                            {"answer_attention": TIMED_ATTENTION}, covers=("cell-magic-time",)),
    "rui_matplotlib": Honest("zh", "import matplotlib.pyplot as plt at the top of a cell",
                             {"answer_softmax": MATPLOTLIB_SOFTMAX},
                             covers=("matplotlib-import", "plots")),
    "kim_display": Honest("en", "from IPython.display import display at the top of a cell",
                          {"answer_output_projection": DISPLAY_IMPORTED_PROJECTION},
                          covers=("display-import",)),
    "an_display_builtin": Honest("zh", "display(...) without an import",
                                 {"answer_dot_product": DISPLAY_BUILTIN_DOT},
                                 covers=("display-builtin",)),
    "olga_slow_scratch": Honest("en", "three scratch cells that pause, each far below the limit",
                                {}, scratch=tuple(("answer_multi_head_attention", SLOW_SCRATCH)
                                                  for _ in range(3)),
                                covers=("slow-scratch-cells",)),
    "paul_positive_axis": Honest("en", "softmax wrong; attention calls it with axis=ndim-1", {
        "answer_softmax": KEEPDIMS_SOFTMAX, "answer_attention": POSITIVE_AXIS_ATTENTION},
        wrong=("softmax",), covers=("softmax-wrong-attention-positive-axis",)),
    "chen_per_head": Honest("zh", "attention wrong; multi-head attention calls it per head", {
        "answer_attention": NAN_ROWS_ATTENTION, "answer_multi_head_attention": PER_HEAD_MHA},
        wrong=("attention",), covers=("attention-wrong-mha-per-head", "loops-over-heads")),
    "sara_per_item": Honest("en", "split_heads wrong; multi-head attention per batch item", {
        "answer_split_heads": NO_TRANSPOSE_SPLIT, "answer_multi_head_attention": PER_ITEM_MHA},
        wrong=("split_heads",), covers=("piece-wrong-mha-per-batch-item",)),
    "hao_np_dot": Honest("zh", "np.dot for the dot product", {"answer_dot_product": NP_DOT},
                         wrong=("dot_product",), covers=("one-wrong-function",)),
    "lucy_np_sqrt": Honest("en", "np.sqrt(d_k), which makes float32 scores float64",
                           {"answer_attention_scores": NP_SQRT_SCORES},
                           wrong=("attention_scores",), covers=("one-wrong-function",)),
    "bo_four_axes": Honest("zh", "concat_heads written for four axes only",
                           {"answer_concat_heads": FOUR_AXES_CONCAT},
                           wrong=("concat_heads",), covers=("one-wrong-function",)),
    "mo_beginner_softmax": Honest("zh", "a beginner (-1e9 for hidden keys) whose softmax is wrong",
                                  _all("BEGINNER", softmax=KEEPDIMS_SOFTMAX), wrong=("softmax",),
                                  covers=("beginner", "one-wrong-function")),
    "kai_columns": Honest("en", "softmax wrong; attention normalises the transposed scores", {
        "answer_softmax": KEEPDIMS_SOFTMAX, "answer_attention": COLUMNS_ATTENTION},
        wrong=("softmax",), covers=("one-wrong-function",)),
    "zara_nan_to_num": Honest("en", "softmax wrong; attention fixes NaN rows with np.nan_to_num",
                              {"answer_softmax": KEEPDIMS_SOFTMAX,
                               "answer_attention": NAN_TO_NUM_ATTENTION},
                              wrong=("softmax",), covers=("one-wrong-function",),
                              beyond_the_reference={"attention": (
                                  "a query that may see no key asks softmax about a row of "
                                  "nothing but -inf, whose answer is NaN; the reference "
                                  "never asks that, so no stand-in answers it")}),
    "nina_mask_heads": Honest("en", "the mask given to the heads without a head axis",
                              {"answer_multi_head_attention": MASK_WITHOUT_HEAD_AXIS_MHA},
                              wrong=("multi_head_attention",), covers=("one-wrong-function",)),

    "ines_kernel_keeps": Honest(
        "en", "a future import in the first cell, IPython's own modules, a dataclass",
        {"answer_dot_product": FUTURE_DOT, "answer_softmax": ANNOTATED_SOFTMAX,
         "answer_multi_head_attention": DATACLASS_MHA},
        scratch=(("answer_softmax", CAPTURED_SCRATCH),),
        covers=("future-import-carried", "dataclass-annotations", "ipython-modules")),
    "lars_helper_file": Honest(
        "zh", "%%writefile helper.py, then %run, import and exec(open(...)) of it", HELPER_FILE,
        covers=("helper-file",)),
    "pablo_pylab": Honest("en", "%pylab inline, then numpy's names without np.",
                          {"answer_softmax": PYLAB_SOFTMAX}, covers=("pylab",)),
    "jia_threads_doctests": Honest(
        "zh", "doctest examples in every docstring; the heads in threads",
        dict({f"answer_{name}": _doctested(name) for name in (
            "dot_product", "attention_scores", "softmax", "attention", "split_heads",
            "concat_heads", "output_projection")},
            answer_multi_head_attention=THREADED_MHA),
        covers=("threads", "doctest-docstrings")),

    # ------------------------------------------------------------ edited and re-run out of order
    "gao_went_back": Honest(
        "zh", "ran attention, then went back and fixed softmax, re-running only its cell",
        {"answer_softmax": FIXED_SOFTMAX},
        scratch=(("answer_attention", "print(attention(np.array([[1e4, 0.0]]), "
                                      "np.eye(2), np.eye(2))[1])\n"),),
        session=("setup", "answer_dot_product", "answer_attention_scores",
                 ("answer_softmax", OVERFLOWING_SOFTMAX), "answer_attention", "scratch-1",
                 "answer_softmax", "scratch-1", "test_attention", "answer_split_heads",
                 "answer_concat_heads", "answer_output_projection",
                 "answer_multi_head_attention", "answer_quiz_1", "answer_quiz_2",
                 "answer_quiz_3", "answer_quiz_4", "answer_quiz_5", "answer_quiz_6"),
        covers=("out-of-order",)),
    "iris_take_two": Honest(
        "en", "a first attention in its cell, the fixed one in a cell further down",
        {"answer_attention": NAN_ROWS_ATTENTION},
        scratch=(("demo_one_hundred_percent", ATTENTION_TAKE_TWO),),
        session=("setup", "answer_dot_product", "answer_attention_scores", "answer_softmax",
                 "answer_attention", "test_attention", "scratch-1", "test_attention",
                 "answer_split_heads", "answer_concat_heads", "answer_output_projection",
                 "answer_multi_head_attention", "test_multi_head_attention", "answer_quiz_1",
                 "answer_quiz_2", "answer_quiz_3", "answer_quiz_4", "answer_quiz_5",
                 "answer_quiz_6"),
        covers=("out-of-order",)),
    "dong_helper_below": Honest(
        "zh", "softmax's helper moved to a cell below softmax, after it was run",
        {"answer_softmax": HELPER_LATER_SOFTMAX},
        scratch=(("answer_attention", HELPER_LATER_CELL),),
        session=("setup", "scratch-1", "answer_dot_product", "answer_attention_scores",
                 "answer_softmax", "test_softmax", "answer_attention",
                 "answer_multi_head_attention", "answer_split_heads", "answer_concat_heads",
                 "answer_output_projection", "test_multi_head_attention", "answer_quiz_1",
                 "answer_quiz_2", "answer_quiz_3", "answer_quiz_4", "answer_quiz_5",
                 "answer_quiz_6"),
        covers=("out-of-order",)),
}
