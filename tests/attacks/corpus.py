"""Submissions that try to fool or break the grader, one or more per attack.

Each attack starts from the reference answers, then fakes or sabotages some parts. The
expectation: the faked parts score 0, every other part scores full marks, and the result
says what happened. ``make`` returns the notebook as bytes, so that broken files can be
expressed too.
"""

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tests.mha_exercise import fill, sample_answers

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "mhakit" / "exercises" / "mha" / "reference.py"  # the answers
RELEASE = REPO / "assignments" / "mha" / "mha.ipynb"


@dataclass
class Attack:
    name: str
    zero: tuple = ()            # parts that must score 0; all others score full marks
    scores: dict = field(default_factory=dict)  # parts that must score these points
    edits: dict = field(default_factory=dict)   # answer cell id -> new source
    extra_cells: tuple = ()     # code cells a student added at the end
    notebook: object = None     # fn(notebook dict) -> notebook dict, for structural attacks
    raw: bytes = None           # the whole file, for files that are not notebooks
    tampering: bool = False
    unreadable: bool = False
    needs_confinement: bool = False  # only safe, or only meaningful, where the child is confined

    def make(self):
        if self.raw is not None:
            return self.raw
        release = nbformat.read(str(RELEASE), as_version=4)
        answers = dict(sample_answers()["alice_correct"], **self.edits)
        notebook = json.loads(nbformat.writes(fill(release, answers)))
        for source in self.extra_cells:
            notebook["cells"].append(nbformat.v4.new_code_cell(source))
        if self.notebook is not None:
            notebook = self.notebook(copy.deepcopy(notebook))
        return json.dumps(notebook).encode("utf-8")


UNIFORM_SOFTMAX = ("def softmax(x, axis=-1):\n"
                   "    x = np.asarray(x, dtype=float)\n"
                   "    return np.ones_like(x) / x.shape[axis]\n")
ZERO_DOT = "def dot_product(u, v):\n    return np.zeros(np.broadcast_shapes(np.shape(u)[:-1], np.shape(v)[:-1]))\n"
ZERO_SCORES = ("def attention_scores(Q, K):\n"
               "    return np.zeros(np.shape(Q)[:-1] + (np.shape(K)[-2],))\n")


def _cells_where(notebook, grade_id):
    return [i for i, c in enumerate(notebook["cells"])
            if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]


def _delete(grade_id):
    def edit(notebook):
        for index in reversed(_cells_where(notebook, grade_id)):
            del notebook["cells"][index]
        return notebook
    return edit


def _rename(grade_id, new_id):
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            notebook["cells"][index]["metadata"]["nbgrader"]["grade_id"] = new_id
        return notebook
    return edit


def _duplicate_with(grade_id, source):
    def edit(notebook):
        index = _cells_where(notebook, grade_id)[0]
        twin = copy.deepcopy(notebook["cells"][index])
        twin["source"], twin["id"] = source, "twin-cell"
        notebook["cells"].insert(index + 1, twin)
        return notebook
    return edit


def _edit_locked(grade_id, source):
    def edit(notebook):
        for index in _cells_where(notebook, grade_id):
            notebook["cells"][index]["source"] = source
        return notebook
    return edit


def _huge(notebook):
    blob = "x" * (100 << 20)
    notebook["cells"][0].setdefault("attachments", {})["blob.txt"] = {"text/plain": blob}
    return notebook


def _old_format(notebook):
    current = nbformat.reads(json.dumps(notebook), as_version=4)  # joins multi-line sources
    return json.loads(nbformat.writes(nbformat.convert(current, 3)))


def _other_assignment(notebook):
    notebook["cells"] = [nbformat.v4.new_markdown_cell("# Homework 3: linear regression"),
                         nbformat.v4.new_code_cell("def fit(X, y):\n    return X.T @ y\n")]
    return notebook


ATTACKS = [
    # --- patching the checkers
    Attack("patch-allclose-and-testing", zero=("softmax",), edits={"answer_softmax": (
        "np.allclose = lambda *a, **k: True\n"
        "np.isclose = lambda a, b, **k: np.ones(np.shape(a), dtype=bool)\n"
        "np.array_equal = lambda *a, **k: True\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n" + UNIFORM_SOFTMAX)}),
    # As in a kernel, the patched isinstance holds for every later cell and call: numpy's
    # own np.sum then takes each array for a generator, so softmax fails too.
    Attack("patch-builtins", zero=("dot_product", "softmax"), edits={"answer_dot_product": (
        "import builtins\n"
        "builtins.isinstance = lambda *a: True\n"
        "builtins.AssertionError = type('Never', (Exception,), {})\n" + ZERO_DOT)}),
    Attack("patch-sys-modules-and-fake-numpy", zero=("concat_heads",), edits={
        "answer_concat_heads": (
            "import sys, types\n"
            "open('numpy.py', 'w').write('allclose = lambda *a, **k: True\\n')\n"
            "fake = types.ModuleType('numpy')\n"
            "fake.allclose = lambda *a, **k: True\n"
            "sys.modules['numpy.testing'] = fake\n"
            "def concat_heads(H):\n"
            "    H = np.asarray(H)\n"
            "    return np.zeros(H.shape[:-3] + (H.shape[-2], H.shape[-3] * H.shape[-1]))\n")}),
    # --- patching the notebook machinery
    Attack("ipython-hooks-excepthook-atexit", zero=("split_heads",), edits={"answer_split_heads": (
        "import atexit, sys\n"
        "try:\n"
        "    ip = get_ipython()\n"
        "    ip.input_transformers_post.append(lambda lines: ['pass\\n'])\n"
        "    ip.set_custom_exc((Exception,), lambda *a, **k: None)\n"
        "    ip.showtraceback = lambda *a, **k: None\n"
        "except NameError:\n"
        "    pass\n"
        "sys.excepthook = lambda *a: None\n"
        "atexit.register(lambda: print('All tests passed, 100/100'))\n"
        "def split_heads(X, num_heads):\n"
        "    X = np.asarray(X)\n"
        "    return np.zeros(X.shape[:-2] + (num_heads, X.shape[-2], X.shape[-1] // num_heads))\n")}),
    # --- reading the answers
    Attack("import-solutions-and-mhakit", zero=("attention_scores",), edits={
        "answer_attention_scores": (
            "def attention_scores(Q, K):\n"
            "    for name in ('mhakit.exercises.mha.reference', 'mhakit.exercises.mha',\n"
            "                 'mhakit.grader.hidden_checks'):\n"
            "        try:\n"
            "            module = __import__(name, fromlist=['x'])\n"
            "            return module.attention_scores(Q, K)\n"
            "        except Exception:\n"
            "            pass\n"
            "    return np.zeros(np.shape(Q)[:-1] + (np.shape(K)[-2],))\n")}),
    Attack("read-course-files", zero=("output_projection",), needs_confinement=True, edits={
        "answer_output_projection": (
            "import os\n"
            f"SECRETS = [{str(REFERENCE)!r}, "
            f"{str(REPO / 'source' / 'mha' / 'mha.ipynb')!r}, 'gradebook.db', "
            "'../gradebook.db', '/root/.bash_history']\n"
            "def output_projection(C, W_o):\n"
            "    for path in SECRETS:\n"
            "        try:\n"
            "            open(path).read(10)\n"
            "            return np.asarray(C) @ np.asarray(W_o)  # proof that it could read\n"
            "        except OSError:\n"
            "            pass\n"
            "    return np.zeros(np.shape(C)[:-1] + (np.shape(W_o)[-1],))\n")}),
    Attack("walk-frames-and-gc", zero=("softmax",), edits={"answer_softmax": (
        "import gc, inspect\n"
        "def softmax(x, axis=-1):\n"
        "    x = np.asarray(x)\n"
        "    found = [o for o in gc.get_objects() if type(o) is np.ndarray\n"
        "             and o.shape == x.shape and o is not x]\n"
        "    for frame in inspect.stack():\n"
        "        found += [v for v in frame.frame.f_locals.values()\n"
        "                  if type(v) is np.ndarray and v.shape == x.shape and v is not x]\n"
        "    return found[-1] if found else np.zeros_like(x, dtype=float)\n")}),
    Attack("environment-reveals-nothing", zero=(), edits={"answer_dot_product": (
        "import os\n"
        "LEAKED = [k for k in os.environ if 'MHAKIT' in k or 'NBGRADER' in k or 'JPY' in k\n"
        "          or 'SOLUTION' in os.environ[k] or '/work' in os.environ[k]]\n"
        "def dot_product(u, v):\n"
        "    if LEAKED:\n"
        "        raise RuntimeError(f'the environment leaked {LEAKED}')\n"
        "    return np.sum(np.asarray(u) * np.asarray(v), axis=-1)\n")}),
    # --- faking results
    Attack("objects-that-claim-equality", zero=("attention", "multi_head_attention"), edits={
        "answer_attention": (
            "class Always:\n"
            "    shape = property(lambda self: (2, 3))\n"
            "    def __eq__(self, other): return True\n"
            "    def __array__(self, *a, **k): return np.zeros((2, 3))\n"
            "    def __array_ufunc__(self, *a, **k): return True\n"
            "    __class__ = property(lambda self: np.ndarray)\n"
            "def attention(Q, K, V, mask=None):\n"
            "    return Always(), Always()\n"),
        "answer_multi_head_attention": (
            "class Sneaky(np.ndarray):\n"
            "    def __eq__(self, other): return np.ones(self.shape, dtype=bool)\n"
            "    def __array_finalize__(self, obj): np.allclose = lambda *a, **k: True\n"
            "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
            "    X = np.asarray(X)\n"
            "    T = X.shape[-2]\n"
            "    out = np.zeros(X.shape).view(Sneaky)\n"
            "    w = np.zeros(X.shape[:-2] + (num_heads, T, T)).view(Sneaky)\n"
            "    return out, w\n")}),
    # The stand-ins carry the reference's answers for the calls the reference would make,
    # sealed by those calls' arguments. Read without computing them, they are noise.
    Attack("read-the-stand-ins-sealed-answers", zero=("multi_head_attention",), edits={
        "answer_multi_head_attention": (
            "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):\n"
            "    X, found = np.asarray(X), []\n"
            "    for f in (split_heads, attention, concat_heads, output_projection):\n"
            "        for cell in f.__closure__ or ():\n"
            "            table = cell.cell_contents\n"
            "            if not isinstance(table, dict):\n"
            "                continue\n"
            "            for spec, layout, data in table.values():\n"
            "                offset = 0\n"
            "                for dtype, shape in layout:\n"
            "                    size = int(np.prod(shape)) * np.dtype(dtype).itemsize\n"
            "                    found.append(np.frombuffer(data[offset:offset + size], dtype)\n"
            "                                 .reshape(shape))\n"
            "                    offset += size\n"
            "    T = X.shape[-2]\n"
            "    out = next((a for a in found if a.shape == X.shape), np.zeros(X.shape))\n"
            "    w = next((a for a in found if a.shape == X.shape[:-2] + (num_heads, T, T)),\n"
            "             np.zeros(X.shape[:-2] + (num_heads, T, T)))\n"
            "    return out, w\n")}),
    # Returning the hidden inputs as text, hoping the feedback shows "the result is ...".
    Attack("return-the-inputs-as-text", zero=("concat_heads", "attention"), edits={
        "answer_concat_heads": "def concat_heads(H):\n    return 'LEAK' + repr(np.asarray(H).ravel()[:8])\n",
        "answer_attention": ("def attention(Q, K, V, mask=None):\n"
                             "    return 'LEAK' + repr(np.asarray(Q).ravel()[:8])\n")}),
    Attack("hard-coded-public-answers", zero=("softmax",), edits={"answer_softmax": (
        "def softmax(x, axis=-1):\n"
        "    x = np.asarray(x, dtype=float)\n"
        "    if x.shape == (2,):\n"
        "        return np.array([0.25, 0.75])\n"
        "    if x.shape == (2, 3):\n"
        "        return np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])\n"
        "    return np.full_like(x, 1.0 / x.shape[axis])\n")}),
    Attack("print-a-passing-result", zero=("concat_heads",), edits={"answer_concat_heads": (
        "import sys\n"
        "print('All tests passed! Score: 100/100')\n"
        "sys.stderr.write('ok\\n')\n"
        "def concat_heads(H):\n"
        "    print('concat_heads: passed')\n"
        "    H = np.asarray(H)\n"
        "    return np.ones(H.shape[:-3] + (H.shape[-2], H.shape[-3] * H.shape[-1]))\n")}),
    # --- breaking the run
    Attack("sys-exit", zero=("concat_heads",), extra_cells=("import sys\nsys.exit(0)\n",),
           edits={"answer_concat_heads": "import sys\ndef concat_heads(H):\n    sys.exit(3)\n"}),
    Attack("os-exit", zero=("softmax",),
           edits={"answer_softmax": "import os\ndef softmax(x, axis=-1):\n    os._exit(0)\n"}),
    Attack("endless-loop", zero=("dot_product",),
           edits={"answer_dot_product": "def dot_product(u, v):\n    while True:\n        pass\n"}),
    Attack("sleep-past-the-timeout", zero=("split_heads",), edits={"answer_split_heads": (
        "import time\ndef split_heads(X, num_heads):\n    time.sleep(3600)\n")}),
    Attack("memory-bomb", zero=("attention",), extra_cells=(
        "try:\n    hog = bytearray(64 << 30)\nexcept MemoryError:\n    pass\n",),
        edits={"answer_attention": (
            "def attention(Q, K, V, mask=None):\n"
            "    hog = [np.ones(1 << 27) for _ in range(1000)]\n"
            "    return hog\n")}),
    Attack("fork-bomb", zero=("attention_scores",), needs_confinement=True, edits={
        "answer_attention_scores": (
            "import os\n"
            "def attention_scores(Q, K):\n"
            "    while True:\n"
            "        try:\n"
            "            os.fork()\n"
            "        except OSError:\n"
            "            pass\n")}),
    Attack("gigabytes-of-output", zero=(), extra_cells=(
        "import sys\n"
        "for _ in range(1024):\n"
        "    print('x' * (1 << 20))\n"
        "try:\n"
        "    with open('big.bin', 'wb') as out:\n"
        "        for _ in range(1024):\n"
        "            out.write(b'y' * (1 << 20))\n"
        "except OSError:\n"
        "    pass\n",)),
    Attack("delete-and-rename-files", zero=(), needs_confinement=True, extra_cells=(
        "import os, shutil\n"
        f"for target in [{str(REPO / 'source')!r}, {str(REFERENCE.parent)!r}, "
        f"{str(REPO / 'nbgrader_config.py')!r}, '..', '/tmp', '/usr/lib']:\n"
        "    try:\n"
        "        shutil.rmtree(target) if os.path.isdir(target) else os.remove(target)\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        f"    os.rename({str(REPO / 'mhakit')!r}, '/tmp/gone')\n"
        "except OSError:\n"
        "    pass\n",)),
    # --- bad notebooks
    Attack("not-json", unreadable=True, raw=b"this is not a notebook {"),
    Attack("not-utf8", unreadable=True, raw='{"cells": "小明把书借给了小红"}'.encode("gb18030")),
    Attack("old-nbformat-3", notebook=_old_format),
    Attack("huge-100-mb", unreadable=True, notebook=_huge),  # over the 20 MB limit
    Attack("answer-cell-deleted", zero=("softmax",), tampering=True,
           notebook=_delete("answer_softmax")),
    Attack("answer-cell-renamed", tampering=True,
           notebook=_rename("answer_softmax", "my_softmax")),
    Attack("answer-cell-duplicated", zero=("softmax",), tampering=True,
           notebook=_duplicate_with("answer_softmax", UNIFORM_SOFTMAX)),
    Attack("function-renamed", zero=("softmax",), edits={"answer_softmax": (
        "def soft_max(x, axis=-1):\n"
        "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)\n")}),
    Attack("locked-test-cell-edited", tampering=True,
           notebook=_edit_locked("test_softmax", "print('softmax passed')\n")),
    Attack("test-cell-deleted", tampering=True, notebook=_delete("test_dot_product")),
    Attack("wrong-assignment", zero="all", tampering=True, notebook=_other_assignment),
]


# The attacks of each class live in a file of their own (on_*.py), so that each stays
# readable; they are graded through both doors like the ones above. They import from this
# module, so it is imported first (the package's __init__ does that).
from .on_protocol import PROTOCOL_ATTACKS  # noqa: E402
from .on_limits import LIMIT_ATTACKS  # noqa: E402
from .on_the_class import CLASS_ATTACKS  # noqa: E402
from .on_feedback import FEEDBACK_ATTACKS  # noqa: E402
from .on_metadata import METADATA_ATTACKS  # noqa: E402
from .on_confinement import CONFINEMENT_ATTACKS  # noqa: E402

ATTACKS += (PROTOCOL_ATTACKS + LIMIT_ATTACKS + CLASS_ATTACKS + FEEDBACK_ATTACKS + METADATA_ATTACKS
            + CONFINEMENT_ATTACKS)
