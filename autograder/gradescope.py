"""Gradescope: the autograder.zip that runs the same grader there, and its entry point.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once when it builds
the image (Ubuntu 22.04, whose Python is 3.10, so setup.sh installs 3.11), and then, for
each submission, runs run_autograder, which must write /autograder/results/results.json.
"""

import json
import sys
import zipfile
from pathlib import Path

from .grading import grade_notebook, title_of, unreadable

REPO = Path(__file__).resolve().parent.parent
TEST_KEYS = ("name", "score", "max_score", "output", "visibility", "tags")

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
apt-get update -qq
apt-get install -y -qq python3.11 python3.11-venv
python3.11 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet "numpy>=1.26" "nbformat==5.11.1" "rich>=13"
/autograder/venv/bin/pip install --quiet --no-deps /autograder/source
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission. MHAKIT_AUTOGRADER_ROOT and MHAKIT_PYTHON let
# the kit's tests run it in a folder laid out like /autograder.
set -euo pipefail
root="${MHAKIT_AUTOGRADER_ROOT:-/autograder}"
python="${MHAKIT_PYTHON:-$root/venv/bin/python}"
cd "$root/source"
exec "$python" -m autograder.gradescope "$root"
"""

# What the zip carries: the package and the reference, enough for `pip install`.
PACKAGED = ("pyproject.toml", "README.md", "autograder", "solutions")


def build_zip(target):
    """Write autograder.zip; return its path."""
    target = Path(target)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable, as Gradescope expects
            bundle.writestr(info, text)
        for entry in PACKAGED:
            path = REPO / entry
            files = [path] if path.is_file() else sorted(
                p for p in path.rglob("*") if p.suffix in (".py", ".json")
                and "__pycache__" not in p.parts)
            for file in files:
                bundle.write(file, str(file.relative_to(REPO)))
    return target


def for_gradescope(result):
    """Gradescope's results.json: its own keys per test, the kit's facts in extra_data.
    Gradescope shows each test's name to the student, so it is in the notebook's language."""
    tests = [dict({key: test[key] for key in TEST_KEYS if key in test},
                  name=title_of(test, result)) for test in result["tests"]]
    shaped = {"score": result["score"], "tests": tests, "extra_data": result["extra_data"],
              "visibility": "after_published", "stdout_visibility": "hidden"}
    if "output" in result:
        shaped["output"] = result["output"]
    return shaped


def find_notebook(submission):
    notebooks = sorted(Path(submission).rglob("*.ipynb"))
    notebooks = [p for p in notebooks if ".ipynb_checkpoints" not in p.parts]
    named = [p for p in notebooks if p.name == "mha.ipynb"]
    return (named or notebooks or [None])[0]


def run(root):
    """Grade the one submission under <root>/submission into <root>/results/results.json."""
    root = Path(root)
    notebook = find_notebook(root / "submission")
    if notebook is None:
        result = unreadable("no .ipynb file was submitted; upload mha.ipynb")
    else:
        result = grade_notebook(notebook)
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(for_gradescope(result), indent=1, ensure_ascii=False),
                   encoding="utf-8")
    return out


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "/autograder")
