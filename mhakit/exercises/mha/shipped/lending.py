"""小明把书借给了小红: hand-made word vectors and hand-set heads for the notebook's story.

Nothing here is learned. The numbers are chosen by hand to show what trained heads can
do, as the article says, for the sake of understanding. The demonstrations call the
student's own functions, which the notebook passes in, so every number the notebook
shows comes out of the student's code.

A token's vector has two parts. The meaning part says what the word is. The position
part is a one-hot of where the token stands. Attention by itself cannot see word
order: without the position part, 小明把书借给了小红 and 小红把书借给了小明 are the
same bag of vectors. (Real models add positional encodings, the series' next topic.)
"""

import numpy as np

SENTENCE = ("小明", "把", "书", "借", "给", "了", "小红")
SWAPPED = ("小红", "把", "书", "借", "给", "了", "小明")
VERB = 3  # 借 stands at position 3 in both sentences

MEANING = ("人", "物", "动作", "虚词", "小明", "小红")
WORD_FEATURES = {"小明": ("人", "小明"), "小红": ("人", "小红"), "书": ("物",),
                 "借": ("动作",), "把": ("虚词",), "给": ("虚词",), "了": ("虚词",)}
POSITIONS = 7
D_MODEL = 15  # 6 meaning + 7 position + 2 spare columns, so that 3 heads of 5 fit
HEADS = 3
D_K = D_MODEL // HEADS


def feature(name):
    return MEANING.index(name)


def position(index):
    return len(MEANING) + index


def embed(sentence, with_positions=True):
    """(T, D_MODEL): one row per token, meaning part then position part."""
    X = np.zeros((len(sentence), D_MODEL))
    for t, word in enumerate(sentence):
        for name in WORD_FEATURES[word]:
            X[t, feature(name)] = 1.0
        if with_positions:
            X[t, position(t)] = 1.0
    return X


def _value_columns(W_v, first):
    """A head's values say who or what a token is: 小明, 小红 or a thing."""
    for offset, name in enumerate(("小明", "小红", "物")):
        W_v[feature(name), first + offset] = 1.0


def one_head_weights(spread=9.6, tilt=0.2):
    """One head (d_k = 15) that looks for nouns: 借 scores 小明, 书 and 小红 alike.

    ``spread`` sets how strongly; 9.6 gives about 30% each and 10% for the other four
    tokens. ``tilt`` is a slight preference for the first position over the last, as a
    real head would have: small enough that the result barely notices.
    """
    W_q, W_k, W_v = (np.zeros((D_MODEL, D_MODEL)) for _ in range(3))
    W_q[feature("动作"), 0] = spread
    W_k[feature("人"), 0] = W_k[feature("物"), 0] = 1.0
    W_q[feature("动作"), 1] = tilt
    W_k[position(0), 1], W_k[position(POSITIONS - 1), 1] = 1.0, -1.0
    _value_columns(W_v, 0)
    return W_q, W_k, W_v, np.eye(D_MODEL)


# Each of the three heads finds one role by where the word stands: the lender comes
# first, the thing lent right after 把, the borrower last.
ROLES = (("谁借出", "who lends", 0), ("借什么", "what is lent", 2), ("借给谁", "to whom", 6))


def three_head_weights(focus=9.0):
    """Three heads (d_k = 5 each): head i puts about 92% of 借's attention on role i."""
    W_q, W_k, W_v = (np.zeros((D_MODEL, D_MODEL)) for _ in range(3))
    for head, (_, _, where) in enumerate(ROLES):
        first = head * D_K
        W_q[feature("动作"), first] = focus
        W_k[position(where), first] = 1.0
        _value_columns(W_v, first)
    return W_q, W_k, W_v, np.eye(D_MODEL)


def one_head_view(attention, sentence):
    """借 with one set of Q, K, V, using the student's attention: (output row, weights)."""
    X = embed(sentence)
    W_q, W_k, W_v, _ = one_head_weights()
    output, weights = attention(X @ W_q, X @ W_k, X @ W_v)
    return output[VERB], weights[VERB]


def verb_view(multi_head_attention, weights, num_heads, sentence, with_positions=True):
    """What 借 gets: (its output row, its attention weights per head (h, T))."""
    output, attention = multi_head_attention(embed(sentence, with_positions), *weights,
                                             num_heads)
    return output[VERB], attention[:, VERB, :]


def relative_difference(a, b):
    """|a - b| relative to their average length: 0 = the same, about 1.4 = unrelated."""
    return float(np.linalg.norm(a - b) / ((np.linalg.norm(a) + np.linalg.norm(b)) / 2))


def compare_sentences(multi_head_attention, num_heads, with_positions=True):
    """How different 借's output is for the two opposite sentences."""
    weights = one_head_weights() if num_heads == 1 else three_head_weights()
    first, _ = verb_view(multi_head_attention, weights, num_heads, SENTENCE, with_positions)
    second, _ = verb_view(multi_head_attention, weights, num_heads, SWAPPED, with_positions)
    return relative_difference(first, second)


# ------------------------------------------------------------ redundant heads

REDUNDANT_HEADS = 6
WIDE_MODEL = 30  # 6 heads of 5
# head: (role it finds, the weight W_o gives it). Heads 3 and 4 nearly copy heads 0 and 1
# and the output matrix leans on them only a little; head 2 alone finds the borrower.
SIX_HEADS = ((0, 1.0), (1, 1.0), (2, 1.0), (0, 0.1), (1, 0.1), (None, 0.05))


def six_head_weights(removed=None):
    """A 6-head layer for the same story; ``removed`` zeroes one head's share of W_o."""
    W_q, W_k, W_v = (np.zeros((WIDE_MODEL, WIDE_MODEL)) for _ in range(3))
    W_o = np.zeros((WIDE_MODEL, WIDE_MODEL))
    for head, (role, share) in enumerate(SIX_HEADS):
        first = head * D_K
        if role is not None:
            W_q[feature("动作"), first] = 9.0 - 0.3 * (head >= 3)  # a near copy, not exact
            W_k[position(ROLES[role][2]), first] = 1.0
        else:  # a head that looks at the function words 把, 给, 了
            W_q[feature("动作"), first] = 6.0
            W_k[feature("虚词"), first] = 1.0
        _value_columns(W_v, first)
        if head != removed:
            slot = D_K * (role if role is not None else 3)
            W_o[first:first + D_K, slot:slot + D_K] += share * np.eye(D_K)
    return W_q, W_k, W_v, W_o


def change_when_removed(multi_head_attention, head):
    """How much 借's output changes when one of the six heads is removed."""
    wide = np.zeros((len(SENTENCE), WIDE_MODEL))
    wide[:, :D_MODEL] = embed(SENTENCE)
    full, _ = multi_head_attention(wide, *six_head_weights(), REDUNDANT_HEADS)
    pruned, _ = multi_head_attention(wide, *six_head_weights(removed=head), REDUNDANT_HEADS)
    return relative_difference(full[VERB], pruned[VERB])
