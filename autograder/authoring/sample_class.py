"""A small bundled class of sample submissions, made from the release and the reference.

Each sample starts from the released notebook and fills answer cells: with the
reference (markers removed), with a deliberately wrong variant, or not at all.
"""

import copy

import nbformat

from .build import solution_cell_source
from ..grader.hidden_checks import QUIZ_KEY

WRONG_ANSWER = next(c for c in "ABCD" if c != QUIZ_KEY["quiz_1"])
QUIZ_ANSWERS = {f"answer_{q}": f"{q} = {key!r}" for q, key in QUIZ_KEY.items()}
WRITTEN_ANSWERS = {  # a student's own words for the optional written answers
    "written_1": "一个 softmax 只能给出一组比例，三份 V 混在一起，就分不清谁借出、谁借到。",
    "written_2": "Each head's output is put side by side, head 1 first, then W_o mixes them.",
    "written_3": "没有人指定，训练时每个头自己调整出分工。",
    "written_4": "8 heads of 64 numbers make 512 in total, like one head of 512.",
}


def reference_body(function):
    lines = solution_cell_source(function).splitlines()
    return "\n".join(line for line in lines if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def _edited(function, old, new):
    source = reference_body(function)
    if old not in source:
        raise ValueError(f"sample edit for {function} no longer matches the reference")
    return source.replace(old, new)


def sample_answers():
    """{student: {answer cell id: source}}; cells not named keep the release's stub."""
    everything = {f"answer_{f}": reference_body(f) for f in (
        "dot_product", "attention_scores", "softmax", "attention", "split_heads",
        "concat_heads", "output_projection", "multi_head_attention")}
    everything.update(QUIZ_ANSWERS)
    everything.update(WRITTEN_ANSWERS)
    partly = dict(everything)
    partly["answer_softmax"] = _edited(  # forgets to subtract the maximum
        "softmax", "shifted = x - np.max(x, axis=axis, keepdims=True)", "shifted = x")
    partly["answer_split_heads"] = _edited(  # reshapes straight to heads, no transpose
        "split_heads", "per_token = X.reshape(*X.shape[:-1], num_heads, d_k)",
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


def fill(release_notebook, answers):
    notebook = copy.deepcopy(release_notebook)
    for cell in notebook.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return notebook


def write_sample_class(release_notebook_path, submitted_dir, assignment="mha"):
    """Write submitted/<student>/<assignment>/mha.ipynb for every sample student."""
    release = nbformat.read(str(release_notebook_path), as_version=4)
    paths = {}
    for student, answers in sample_answers().items():
        path = submitted_dir / student / assignment / release_notebook_path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(release, answers), str(path))
        paths[student] = path
    return paths
