"""Multi-head attention by hand, after the article 多头注意力 (part three of the series).

The contract: which functions a learner writes, in the notebook's order, and what each is
worth. The reference is ``solutions/mha.py``; the rest of the exercise is the folder's
other modules (see autograder/exercise.py).
"""

from autograder.exercise import Function
from solutions import mha as REFERENCE  # noqa: F401 - read by the engine

NAME = "mha"
TITLE = {"zh": "多头注意力", "en": "multi-head attention"}
NOTEBOOK = "mha.ipynb"
ASSIGNMENTS = {"mha": "zh", "mha_en": "en"}
PAIR = ("output", "weights")

FUNCTIONS = (
    Function("dot_product", (3, 1, 1, 1), short="dot"),
    Function("attention_scores", (6, 2, 1, 1), short="scores"),
    Function("softmax", (7, 3, 1, 1), short="softmax"),
    Function("attention", (10, 3, 1, 2), returns=PAIR, own_pieces=True, short="attn"),
    Function("split_heads", (6, 2, 1, 1), short="split"),
    Function("concat_heads", (5, 1, 1, 1), short="concat"),
    Function("output_projection", (3, 1, 1, 1), short="W_o"),
    Function("multi_head_attention", (12, 4, 2, 2), returns=PAIR, own_pieces=True, short="mha"),
)
TOTAL = 100  # the code's 88 and the quiz's 12
NOT_GRADED = ("lesson.py", "sample_class.py", "public/lending.py", "public/show.py",
              "public/plots.py")
