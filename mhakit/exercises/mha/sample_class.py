"""The demo's small class: which answer cells each sample student fills, and with what.

Each sample starts from the released notebook (see mhakit/authoring/sample_class.py)
and fills answer cells: with the reference, with a deliberately wrong variant, or not at all.
"""

from mhakit.authoring.sample_class import edited, reference_body
from .quiz import KEY

WRONG_ANSWER = next(c for c in "ABCD" if c != KEY["quiz_1"])
QUIZ_ANSWERS = {f"answer_{q}": f"{q} = {key!r}" for q, key in KEY.items()}
WRITTEN_ANSWERS = {  # a student's own words for the optional written answers
    "written_1": "一个 softmax 只能给出一组比例，三份 V 混在一起，就分不清谁借出、谁借到。",
    "written_2": "Each head's output is put side by side, head 0 first, then W_o mixes them.",
    "written_3": "没有人指定，训练时每个头自己调整出分工。",
    "written_4": "8 heads of 64 numbers make 512 in total, like one head of 512.",
}


def sample_answers(exercise):
    """{student: {answer cell id: source}}; cells not named keep the release's stub."""
    everything = {f"answer_{f}": reference_body(exercise, f) for f in exercise.function_names}
    everything.update(QUIZ_ANSWERS)
    everything.update(WRITTEN_ANSWERS)
    partly = dict(everything)
    partly["answer_softmax"] = edited(  # forgets to subtract the maximum
        exercise, "softmax", "shifted = x - np.max(x, axis=axis, keepdims=True)", "shifted = x")
    partly["answer_split_heads"] = edited(  # reshapes straight to heads, no transpose
        exercise, "split_heads", "per_token = X.reshape(*X.shape[:-1], num_heads, d_k)",
        "return X.reshape(*X.shape[:-2], num_heads, X.shape[-2], d_k)")
    partly["answer_quiz_1"] = f'quiz_1 = "{WRONG_ANSWER}"'
    cheat = dict(everything)
    cheat["answer_softmax"] = (  # right shape, uniform values, plus the classic tricks
        "np.allclose = lambda *a, **k: True\n"
        "def softmax(x, axis=-1):\n"
        "    x = np.asarray(x, dtype=float)\n"
        "    return np.ones_like(x) / x.shape[axis]\n")
    return {"alice_correct": everything, "bob_partly_correct": partly,
            "carol_unimplemented": {}, "dave_tries_to_cheat": cheat}
