"""Reference solutions (instructor side only; never released): one module per exercise,
whose contract (mhakit/exercises/<name>/__init__.py) lists its functions."""

from .mha import (  # noqa: F401 - the mha exercise's functions, as solutions.<name>
    attention,
    attention_scores,
    concat_heads,
    dot_product,
    multi_head_attention,
    output_projection,
    softmax,
    split_heads,
)
