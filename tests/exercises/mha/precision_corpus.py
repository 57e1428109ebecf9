"""Mistakes nobody catalogued, written the way newcomers write first drafts, each with the
names that would be true of it (issue 25, "Precision is tested").

MISTAKES: name -> (function, [(text in the reference body, what the student wrote)], OK,
why), why being a few words on the true cause.

OK is the set of tags that are a correct name for the mistake:
- a catalogue id, when the same output genuinely is that catalogued mistake;
- the structural class whose cause is the true one;
- the observation-only classes whose observation is true of it ("right for one item alone,
  wrong with the batch axes" lists .T, np.dot, transpose(), a reduction without
  keepdims=True and axis numbers counted from the front among its possible causes);
- the general/* tags that are true of it (a list returned, an input changed in place, a
  dtype changed).
A composite (attention, multi_head_attention) runs the student's own pieces in 0-point
checks, so OK also holds what is true of the composite's result there.

None of these is in the catalogue (tests/grader/test_diagnosis.py EDITS), nor in
tests/exercises/mha/test_agreement.py UNLISTED, nor in
tests/grader/test_structural_diagnosis.py MISTAKES; see test_precision.py.

Left out, as the hidden grade does not take a point for it: multi_head_attention with
``X = np.asarray(X, dtype=float)`` (float32 in, float64 out). Its "float32 stays float32"
check fails in both doors, but carries no points in the hidden grade (100 of 100), so the
self-check is red on full marks.
"""

# Observations, true whenever the result is right on one item without batch axes and
# wrong once batch axes are added: both classes fit (a call with one batch axis is right
# with one batch axis fewer).
BATCH = {"structure/wrong-with-batch-axes", "structure/wrong-with-more-batch-axes"}
MORE_BATCH = {"structure/wrong-with-more-batch-axes"}  # right with one batch axis only
F32_TO_F64 = {"general/float32-became-float64"}
IN_PLACE = {"general/input-modified-in-place"}
# A factor equal to no size is an observation, true wherever the factor is
UNEXPLAINED = {"structure/unexplained-factor"}
FACTOR = {"structure/constant-factor"} | UNEXPLAINED
ROW_FACTOR = FACTOR | {"structure/each-row-off-by-a-factor"}
OTHER_AXIS = {"structure/normalised-along-another-axis"}
SWAPPED = {"structure/axes-swapped", "structure/values-reordered"}
PERMUTED = {"structure/axes-permuted", "structure/values-reordered"}
NO_KEY_ROWS = {"structure/wrong-where-mask-allows-nothing"}

MASKED_BLOCK = ("        has_key = np.any(mask, axis=-1, keepdims=True)\n"
                "        scores = np.where(mask, scores, -np.inf)\n"
                "        scores = np.where(has_key, scores, 0.0)\n"
                "        weights = np.where(mask, softmax(scores, axis=-1), 0.0)")
SOFTMAX_LINES = [("weights = softmax(scores, axis=-1)  #", "weights = softmax(scores, axis={})  #"),
                 ("weights = np.where(mask, softmax(scores, axis=-1), 0.0)",
                  "weights = np.where(mask, softmax(scores, axis={}), 0.0)")]
HEADS = "heads, weights = attention(Q, K, V, mask)"
PROJECTIONS = ("    Q = split_heads(X @ W_q, num_heads)  # (..., h, T, d_k)\n"
               "    K = split_heads(X @ W_k, num_heads)  # (..., h, T, d_k)\n"
               "    V = split_heads(X @ W_v, num_heads)  # (..., h, T, d_k)")
SCORES = "(Q @ np.swapaxes(K, -1, -2)) / math.sqrt(d_k)"
DOT = "np.sum(u * v, axis=-1)"
SPLIT = "per_token = X.reshape(*X.shape[:-1], num_heads, d_k)"
SWAP_BACK = "return np.swapaxes(per_token, -2, -3)"
CONCAT_SWAP = "per_token = np.swapaxes(H, -3, -2)"
CONCAT = "return per_token.reshape(*per_token.shape[:-2], num_heads * d_k)"


def only(functions, tags):
    """Tags true only on the checks of these functions (a piece's observation may be false
    of the composite that calls it: scores are 2-D for one item of attention)."""
    functions = (functions,) if isinstance(functions, str) else functions
    return {f"{function}:{tag}" for function in functions for tag in tags}


def _axis(value):
    return [(old, new.format(value)) for old, new in SOFTMAX_LINES]


MISTAKES = {
    # ------------------------------------------------------------------ dot_product
    "dot_product/u@v.T": ("dot_product", [(DOT, "u @ v.T")], BATCH, 'u @ v.T: a matrix of every pair once u and v are batched'),
    "dot_product/np.inner": ("dot_product", [(DOT, "np.inner(u, v)")], BATCH, 'np.inner pairs every row of u with every row of v'),
    "dot_product/axis=1": ("dot_product", [(DOT, "np.sum(u * v, axis=1)")], MORE_BATCH, 'axis=1 counted from the front: right for (B, d) only'),
    "dot_product/axis=0": ("dot_product", [(DOT, "np.sum(u * v, axis=0)")], BATCH, 'axis=0: sums over the batch axis instead of over d'),
    "dot_product/keepdims": ("dot_product", [(DOT, "np.sum(u * v, axis=-1, keepdims=True)")],
                             set(), 'keepdims=True keeps a trailing axis of length 1'),
    "dot_product/u*u": ("dot_product", [(DOT, "np.sum(u * u, axis=-1)")], set(), 'a typo: u times itself'),
    "dot_product/astype-int": ("dot_product", [(DOT, "np.sum(u * v, axis=-1).astype(int)")],
                               {"general/wrong-dtype"}, 'an int cast truncates every float dot product'),
    "dot_product/np.matmul": ("dot_product", [(DOT, "np.matmul(u, v)")], BATCH,
                              "np.matmul of two vectors: right for 1-D, a matrix product with batch axes"),
    "dot_product/in-place-product": ("dot_product", [
        ("return " + DOT, "u *= v\n    return np.sum(u, axis=-1)")], IN_PLACE, "u *= v changes the caller's u"),

    # ------------------------------------------------------------- attention_scores
    "attention_scores/np.dot-K.T": ("attention_scores", [
        (SCORES, "np.dot(Q, K.T) / math.sqrt(d_k)")],
        only(("attention_scores", "attention"), BATCH), 'np.dot(Q, K.T): right for 2-D Q and K, wrong with batch axes'),
    "attention_scores/np.transpose": ("attention_scores", [
        (SCORES, "(Q @ np.transpose(K)) / math.sqrt(d_k)")],
        only(("attention_scores", "attention"), BATCH), 'np.transpose(K) reverses every axis, the batch axes too'),
    "attention_scores/np.sqrt-T_q": ("attention_scores", [
        ("/ math.sqrt(d_k)", "/ np.sqrt(Q.shape[-2])")],
        only("attention_scores", FACTOR) | F32_TO_F64, '√T_q instead of √d_k, and np.sqrt makes float32 float64'),
    "attention_scores/precedence-d_k**1/2": ("attention_scores", [
        ("/ math.sqrt(d_k)", "/ d_k ** 1/2")], only("attention_scores", FACTOR), 'd_k ** 1/2 is (d_k ** 1) / 2: divided by d_k / 2'),
    "attention_scores/K@Q.T": ("attention_scores", [
        (SCORES, "(K @ np.swapaxes(Q, -1, -2)) / math.sqrt(d_k)")],
        only("attention_scores", SWAPPED), 'K @ Qᵀ: the (T_k, T_q) transpose of the scores'),
    "attention_scores/Q.T@K": ("attention_scores", [
        (SCORES, "(np.swapaxes(Q, -1, -2) @ K) / math.sqrt(d_k)")], set(), 'Qᵀ K: a (d_k, d_k) matrix'),
    "attention_scores/floor-division": ("attention_scores", [
        ("/ math.sqrt(d_k)", "// math.sqrt(d_k)")], set(), 'floor division rounds every score down'),
    "attention_scores/asarray-dtype-float": ("attention_scores", [
        ("Q, K = np.asarray(Q), np.asarray(K)",
         "Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)")], F32_TO_F64, 'dtype=float turns float32 inputs into float64'),
    "attention_scores/both-scaled": ("attention_scores", [
        (SCORES, "(Q / math.sqrt(d_k)) @ (np.swapaxes(K, -1, -2) / math.sqrt(d_k))")],
        {"attention_scores/divided-by-d_k"} | only("attention_scores", FACTOR), 'both Q and Kᵀ divided by √d_k: divided by d_k, the catalogued mistake'),

    # ----------------------------------------------------------------------- softmax
    "softmax/sum-without-keepdims": ("softmax", [
        ("np.sum(exps, axis=axis, keepdims=True)", "np.sum(exps, axis=axis)")],
        only("softmax", BATCH), 'the sum without keepdims=True lines up with the wrong axis (issue 25)'),
    "softmax/max-without-keepdims": ("softmax", [
        ("np.max(x, axis=axis, keepdims=True)", "np.max(x, axis=axis)")],
        only("softmax", BATCH), "the max without keepdims=True subtracts another row's maximum"),
    "softmax/no-shift-and-axis-1": ("softmax", [
        ("shifted = x - np.max(x, axis=axis, keepdims=True)", "shifted = x"),
        ("axis=axis", "axis=-1")],
        {"softmax/no-max-subtraction", "softmax/wrong-axis"} | OTHER_AXIS, 'no shift and axis=-1 hard-coded: two catalogued mistakes at once'),
    "softmax/mean-for-sum": ("softmax", [
        ("np.sum(exps, axis=axis, keepdims=True)", "np.mean(exps, axis=axis, keepdims=True)")],
        ROW_FACTOR, 'np.mean for np.sum: every entry n times too big'),
    "softmax/axis=1": ("softmax", [("axis=axis", "axis=1"), ("axis=axis", "axis=1")],
                       {"softmax/wrong-axis"} | OTHER_AXIS | only("softmax", MORE_BATCH)
                       | only("attention", BATCH), 'axis=1 hard-coded: another axis than the one the argument names'),
    "softmax/log-softmax": ("softmax", [
        ("return exps / np.sum(exps, axis=axis, keepdims=True)",
         "return shifted - np.log(np.sum(exps, axis=axis, keepdims=True))")],
        # where every key scores alike, log-softmax's weights are all -log T_k: one factor
        only("attention", UNEXPLAINED) | only("multi_head_attention", UNEXPLAINED),
        'log-softmax instead of softmax'),
    "softmax/divided-by-max": ("softmax", [
        ("shifted = x - np.max(x, axis=axis, keepdims=True)",
         "shifted = x / np.max(x, axis=axis, keepdims=True)")], set(), 'divides by the maximum instead of subtracting it'),
    "softmax/subtract-out-x": ("softmax", [
        ("shifted = x - np.max(x, axis=axis, keepdims=True)",
         "np.subtract(x, np.max(x, axis=axis, keepdims=True), out=x)\n    shifted = x")],
        IN_PLACE, "np.subtract(..., out=x) shifts the caller's array"),
    "softmax/exp-not-normalised": ("softmax", [
        ("return exps / np.sum(exps, axis=axis, keepdims=True)", "return exps")], ROW_FACTOR,
        "exp without the division by the sum: each row off by its own sum"),
    "softmax/exp-in-float64": ("softmax", [
        ("exps = np.exp(shifted)", "exps = np.exp(shifted.astype(np.float64))")], F32_TO_F64, 'exp in float64 "for precision": float32 lost'),

    # --------------------------------------------------------------------- attention
    "attention/one-minus-mask": ("attention", [
        ("mask = np.asarray(mask, dtype=bool)", "mask = 1 - np.asarray(mask, dtype=int)")],
        {"attention/mask-inverted"}, '1 - mask on an int copy: the mask inverted, the catalogued mistake'),
    "attention/where-arguments-swapped": ("attention", [
        (MASKED_BLOCK, "        weights = softmax(np.where(mask, -np.inf, scores), axis=-1)")],
        {"attention/mask-inverted"}, 'np.where(mask, -inf, scores): the arguments the wrong way round, the mask inverted'),
    "attention/additive-minus-1e9": ("attention", [
        (MASKED_BLOCK, "        weights = softmax(scores + (~mask) * -1e9, axis=-1)")],
        NO_KEY_ROWS | F32_TO_F64, 'an additive -1e9 mask: a row that may see nothing gets the unmasked softmax'),  # (~mask) * -1e9 is float64
    "attention/scores-times-mask": ("attention", [
        (MASKED_BLOCK, "        weights = softmax(scores * mask, axis=-1)")],
        {"attention/mask-filled-with-zero"}, 'scores * mask: blocked scores become 0, the catalogued mask-filled-with-zero'),
    "attention/branches-swapped": ("attention", [("if mask is None:", "if mask is not None:")],
                                   {"attention/mask-ignored", "multi_head_attention/mask-ignored"}, 'the branches the wrong way round: a mask is ignored, no mask gives zeros'),
    "attention/mask.T": ("attention", [
        ("scores = np.where(mask, scores, -np.inf)", "scores = np.where(mask.T, scores, -np.inf)"),
        ("weights = np.where(mask, softmax", "weights = np.where(mask.T, softmax")],
        # on identical keys a causal mask's weights come out reflected: the same numbers
        {"structure/values-reordered"}, 'mask.T: the mask transposed'),
    "attention/has_key-without-keepdims": ("attention", [
        ("has_key = np.any(mask, axis=-1, keepdims=True)", "has_key = np.any(mask, axis=-1)")],
        set(), 'has_key without keepdims=True lines up with the key axis'),
    "attention/softmax-axis-0": ("attention", _axis(0), OTHER_AXIS, 'softmax over axis 0: over T_q for one item, over the batch with batch axes'),
    "attention/softmax-axis-2": ("attention", _axis(-2), OTHER_AXIS, 'softmax over T_q'),
    "attention/scaled-twice": ("attention", [
        ("scores = attention_scores(Q, K)", "scores = attention_scores(Q, K) / math.sqrt(Q.shape[-1])")],
        {"attention_scores/divided-by-d_k"}, 'scores divided by √d_k twice: softmax of scores / d_k'),
    "attention/V-transposed": ("attention", [
        ("output = weights @ V", "output = weights @ np.swapaxes(V, -1, -2)")], set(), 'V transposed before the product'),
    "attention/times-for-matmul": ("attention", [("output = weights @ V", "output = weights * V")],
                                   set(), '* for @'),
    "attention/np.dot-weights-V": ("attention", [
        ("output = weights @ V", "output = np.dot(weights, V)")], BATCH, 'np.dot(weights, V): right for one item only'),
    "attention/output-only": ("attention", [("return output, weights", "return output")], set(), 'only the output returned'),
    "attention/returned-swapped": ("attention", [
        ("return output, weights", "return weights, output")], set(), '(weights, output) instead of (output, weights)'),
    "attention/Q-scaled-in-place": ("attention", [
        ("scores = attention_scores(Q, K)", "Q /= math.sqrt(Q.shape[-1])\n"
         "    scores = attention_scores(Q, K)")],
        IN_PLACE | {"attention_scores/divided-by-d_k"}, "Q /= √d_k changes the caller's Q, and the scores are scaled twice"),

    # ------------------------------------------------------------------- split_heads
    "split_heads/stack-axis-0": ("split_heads", [
        (SPLIT + "  # (..., T, h, d_k)\n    " + SWAP_BACK,
         "return np.stack([X[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)], axis=0)")],
        BATCH | SWAPPED | PERMUTED, 'the heads stacked along axis 0: before the batch axes'),
    "split_heads/transpose-1-0-2": ("split_heads", [
        (SWAP_BACK, "return per_token.transpose(1, 0, 2)")], BATCH, 'transpose(1, 0, 2) numbers the axes of one item only'),
    "split_heads/swapaxes-0-1": ("split_heads", [(SWAP_BACK, "return np.swapaxes(per_token, 0, 1)")],
                                 BATCH | only("split_heads", PERMUTED), 'swapaxes(0, 1): counted from the front'),
    "split_heads/overlapping-windows": ("split_heads", [
        (SPLIT + "  # (..., T, h, d_k)\n    " + SWAP_BACK,
         "return np.stack([X[..., i:i + d_k] for i in range(num_heads)], axis=-3)")], set(), 'windows that start every column instead of every d_k columns'),
    "split_heads/true-division": ("split_heads", [
        ("d_k = d_model // num_heads", "d_k = d_model / num_heads")], set(), 'd_model / num_heads is a float'),
    "split_heads/split-along-T": ("split_heads", [
        (SPLIT + "  # (..., T, h, d_k)\n    " + SWAP_BACK,
         "return X.reshape(*X.shape[:-2], num_heads, X.shape[-2] // num_heads, d_model)")],
        set(), "the heads cut along T (groups of tokens) instead of along d_model"),
    "split_heads/reshape-without-batch": ("split_heads", [
        (SPLIT, "per_token = X.reshape(X.shape[-2], num_heads, d_k)")], BATCH, 'the batch axes left out of the reshape'),

    # ------------------------------------------------------------------ concat_heads
    "concat_heads/concatenate-list": ("concat_heads", [
        (CONCAT, "return np.concatenate(list(H), axis=-1)")],
        BATCH | {"structure/values-reordered"}, 'list(H) splits the first axis: the heads for one item, the batch otherwise'),
    "concat_heads/along-T": ("concat_heads", [
        (CONCAT, "return np.concatenate([H[..., i, :, :] for i in range(num_heads)], axis=-2)")],
        {"structure/values-reordered"}, 'heads concatenated along T'),
    "concat_heads/transpose-1-0-2": ("concat_heads", [
        (CONCAT_SWAP, "per_token = H.transpose(1, 0, 2)")], BATCH, 'transpose(1, 0, 2) for one item only'),
    "concat_heads/reshape-shape0": ("concat_heads", [
        (CONCAT, "return per_token.reshape(per_token.shape[0], -1)")], BATCH, 'reshape(T, -1) flattens the batch axes into the width'),
    "concat_heads/concatenate-axis-0": ("concat_heads", [
        (CONCAT, "return np.concatenate([H[..., i, :, :] for i in range(num_heads)], axis=0)")],
        {"structure/values-reordered"}, "heads concatenated along axis 0 instead of the last axis"),
    "concat_heads/summed": ("concat_heads", [(CONCAT, "return np.sum(H, axis=-3)")], set(), 'the heads summed instead of concatenated'),
    "concat_heads/head-0-missing": ("concat_heads", [
        (CONCAT, "return np.concatenate([H[..., i, :, :] for i in range(1, num_heads)], axis=-1)")],
        set(), 'range(1, h): head 0 left out'),
    "concat_heads/loop-backwards": ("concat_heads", [
        (CONCAT, "return np.concatenate([H[..., i, :, :] for i in range(num_heads - 1, -1, -1)],"
                 " axis=-1)")], {"concat_heads/heads-in-reverse-order"}
        # with identity matrices, multi_head_attention's output is X's columns reordered
        | only("multi_head_attention", {"structure/values-reordered"}), 'a loop from the last head down: the catalogued reverse order'),

    # ------------------------------------------------------------- output_projection
    "output_projection/W_o-on-the-left": ("output_projection", [
        ("return C @ W_o", "return W_o @ C")], set(), 'W_o on the left'),
    "output_projection/times": ("output_projection", [("return C @ W_o", "return C * W_o")],
                                set(), '* for @'),
    "output_projection/transposed-product": ("output_projection", [
        ("return C @ W_o", "return (W_o.T @ C.T).T")], BATCH, '(W_o.T @ C.T).T: right for 2-D C, .T reverses the batch axes too'),
    "output_projection/np.dot-transposes": ("output_projection", [
        ("return C @ W_o", "return np.dot(W_o.T, C.T).T")], BATCH,
        "np.dot and .T: right for 2-D C, .T reverses the batch axes too"),
    "output_projection/einsum-dk": ("output_projection", [
        ("return C @ W_o", 'return np.einsum("...tk,dk->...td", C, W_o)')],
        {"output_projection/W_o-transposed"}, "einsum with W_o's indices swapped: C @ W_o.T, the catalogued mistake"),
    "output_projection/scaled": ("output_projection", [
        ("return C @ W_o", "return C @ W_o / math.sqrt(C.shape[-1])")], FACTOR, 'scaled by √(h·d_k) as if it were attention'),
    "output_projection/astype-float64": ("output_projection", [
        ("return C @ W_o", "return (C @ W_o).astype(np.float64)")], F32_TO_F64, 'astype(np.float64) "to be safe"'),
    "output_projection/in-place-matmul": ("output_projection", [
        ("return C @ W_o", "C @= W_o\n    return C")], IN_PLACE, "C @= W_o overwrites the caller's C"),

    # ---------------------------------------------------------- multi_head_attention
    "multi_head_attention/W_q-for-all": ("multi_head_attention", [
        ("split_heads(X @ W_k, num_heads)", "split_heads(X @ W_q, num_heads)"),
        ("split_heads(X @ W_v, num_heads)", "split_heads(X @ W_q, num_heads)")],
        {"multi_head_attention/projection-matrices-mixed-up"}, 'W_q for Q, K and V: lines copied twice and not changed'),
    "multi_head_attention/W_v-for-Q": ("multi_head_attention", [
        ("split_heads(X @ W_q, num_heads)", "split_heads(X @ W_v, num_heads)")],
        {"multi_head_attention/projection-matrices-mixed-up"}, 'W_v for Q'),
    "multi_head_attention/heads-not-split": ("multi_head_attention", [
        (PROJECTIONS, "    Q, K, V = X @ W_q, X @ W_k, X @ W_v"),
        ("output = output_projection(concat_heads(heads), W_o)",
         "output = output_projection(heads, W_o)")], set(), 'the heads never split: one head of width d_model'),
    "multi_head_attention/one-minus-mask": ("multi_head_attention", [
        ("mask = np.asarray(mask, dtype=bool)[..., None, :, :]",
         "mask = 1 - np.asarray(mask, dtype=int)[..., None, :, :]")],
        {"attention/mask-inverted"}, '1 - mask: the mask inverted'),
    "multi_head_attention/mask[None]": ("multi_head_attention", [
        ("mask = np.asarray(mask, dtype=bool)[..., None, :, :]",
         "mask = np.asarray(mask, dtype=bool)[None]")],
        {"multi_head_attention/mask-without-head-axis", "structure/wrong-with-batch-axes"}, 'mask[None]: the new axis in front of the batch axes, not before (T, T)'),
    "multi_head_attention/mask-axis-in-the-middle": ("multi_head_attention", [
        ("mask = np.asarray(mask, dtype=bool)[..., None, :, :]",
         "mask = np.asarray(mask, dtype=bool)[..., :, None, :]")], set(), 'the head axis put between T and T'),
    "multi_head_attention/output-only": ("multi_head_attention", [
        ("return output, weights", "return output")], set(), 'only the output returned'),
    "multi_head_attention/returned-swapped": ("multi_head_attention", [
        ("return output, weights", "return weights, output")], set(), '(weights, output)'),
    "multi_head_attention/weights-averaged": ("multi_head_attention", [
        ("return output, weights", "return output, weights.mean(axis=-3)")], set(), 'the weights averaged over the heads'),
    "multi_head_attention/inline-reshape-without-transpose": ("multi_head_attention", [
        (PROJECTIONS, "    T = X.shape[-2]\n"
         "    Q, K, V = ((X @ W).reshape(*X.shape[:-2], num_heads, T, d_model // num_heads)\n"
         "               for W in (W_q, W_k, W_v))")],
        {"split_heads/reshape-without-transpose"}, 'the heads cut by a reshape without the transpose, written inline'),
    "multi_head_attention/heads-reshaped-back-without-transpose": ("multi_head_attention", [
        ("output = output_projection(concat_heads(heads), W_o)",
         "output = output_projection(heads.reshape(*heads.shape[:-3], X.shape[-2], d_model), W_o)")],
        {"concat_heads/reshape-without-transpose", "structure/values-reordered"},
        "heads glued back by a reshape without swapping h and T first, written inline"),
    "multi_head_attention/W_q.T": ("multi_head_attention", [
        ("split_heads(X @ W_q, num_heads)", "split_heads(X @ W_q.T, num_heads)")], set(), 'W_q transposed for Q only'),
    "multi_head_attention/inline-W_o.T": ("multi_head_attention", [
        ("output = output_projection(concat_heads(heads), W_o)",
         "output = concat_heads(heads) @ W_o.T")], {"output_projection/W_o-transposed"}, 'W_o transposed inline: the catalogued output_projection/W_o-transposed'),
    "multi_head_attention/K-transposed-for-attention": ("multi_head_attention", [
        (HEADS, "heads, weights = attention(Q, np.swapaxes(K, -1, -2), V, mask)")], set(), 'K transposed before attention(): the scores pair the wrong axes, or d_k mismatch raises'),
}
