"""Reference solutions for the mha assignment (instructor side only; never released)."""

from .mha import (  # noqa: F401 - re-exported through __all__
    attention,
    attention_scores,
    concat_heads,
    dot_product,
    multi_head_attention,
    output_projection,
    softmax,
    split_heads,
)

# The contract's functions, in the order the notebook teaches them.
FUNCTIONS = (
    "dot_product",
    "attention_scores",
    "softmax",
    "attention",
    "split_heads",
    "concat_heads",
    "output_projection",
    "multi_head_attention",
)

__all__ = list(FUNCTIONS) + ["FUNCTIONS"]
