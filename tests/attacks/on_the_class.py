"""Attacks on the class: see tests/attacks/corpus.py for how an Attack is graded.

Notebooks whose file, not whose code, is hostile. Each once stopped `mhakit grade` for
the whole class; now each stays with its student, on both doors. (A 40 MB notebook of
``{}``, made below, is graded in tests/integrations/test_batch.py by `mhakit grade` only:
nbgrader's own reading of it takes gigabytes, before any of the kit's code runs.)
"""

from .corpus import Attack


def _nested_metadata(depth):
    def edit(notebook):
        inner = {}
        for _ in range(depth):
            inner = {"more": inner}
        notebook["cells"][0]["metadata"]["nested"] = inner
        return notebook
    return edit


def _lone_surrogate_in_markdown(notebook):
    # json.dumps writes it as the escape \ud800, which json.loads reads back as a lone
    # surrogate: a string that no UTF-8 file can hold.
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    cell["source"] = "a lone surrogate: \ud800"
    return notebook


def _forty_megabytes_of_braces():
    text = Attack("braces", notebook=lambda nb: dict(nb, metadata={"x": "@@"})).make()
    return text.replace(b'"@@"', b"[" + b"{}," * ((40 << 20) // 3) + b"{}]")


CLASS_ATTACKS = [
    Attack("cell-metadata-nested-700-deep", unreadable=True, notebook=_nested_metadata(700)),
    Attack("lone-surrogate-in-a-markdown-cell", unreadable=True,
           notebook=_lone_surrogate_in_markdown),
]
