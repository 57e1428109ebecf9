"""Multi-head attention by hand, after the article 多头注意力 (part three of the series).

The contract: which functions a learner writes, in the notebook's order, and what each is
worth. The reference is ``reference.py``; the rest of the exercise is the folder's
other modules (see mhakit/exercise.py).
"""

from mhakit.exercise import Function, Items
from . import reference as REFERENCE  # noqa: F401 - read by the engine

NAME = "mha"
TITLE = {"zh": "多头注意力", "en": "multi-head attention"}
NOTEBOOK = "mha.ipynb"
ASSIGNMENTS = {"mha": "zh", "mha_en": "en"}
PAIR = ("output", "weights")

# How each piece works item by item, so that a composite that calls it per head or per
# batch item still meets its stand-in. multi_head_attention declares nothing: nothing
# calls it, and its mask broadcasts against its weights without their head axis.
FUNCTIONS = (
    Function("dot_product", (3, 1, 1, 1), short="dot",
             items=Items(args=(("u", 1), ("v", 1)), returns=(0,))),
    Function("attention_scores", (6, 2, 1, 1), short="scores",
             items=Items(args=(("Q", 2), ("K", 2)), returns=(2,))),
    Function("softmax", (7, 3, 1, 1), short="softmax", axes=(("axis", "x"),),
             items=Items(args=(("x", 1),), returns=(1,), core_at="axis",
                         same_when_shifted=True)),
    Function("attention", (10, 3, 1, 2), returns=PAIR, own_pieces=True, short="attn",
             # the mask broadcasts against the scores, which have the weights' shape
             items=Items(args=(("Q", 2), ("K", 2), ("V", 2), ("mask", 2)), returns=(2, 2),
                         masks=(("mask", 1),))),
    Function("split_heads", (6, 2, 1, 1), short="split",
             items=Items(args=(("X", 2),), returns=(3,))),
    Function("concat_heads", (5, 1, 1, 1), short="concat",
             items=Items(args=(("H", 3),), returns=(2,))),
    Function("output_projection", (3, 1, 1, 1), short="W_o",
             items=Items(args=(("C", 2),), returns=(2,))),
    Function("multi_head_attention", (12, 4, 2, 2), returns=PAIR, own_pieces=True, short="mha"),
)
TOTAL = 100  # the code's 88 and the quiz's 12
NOT_GRADED = ("lesson.py", "sample_class.py", "shipped/lending.py", "shipped/show.py",
              "shipped/plots.py")
