"""Gradescope: the autograder.zip that runs the same grader there, and its entry point.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once when it builds
the image (Ubuntu 22.04, whose Python is 3.10, so setup.sh installs 3.11), and then, for
each submission, runs run_autograder, which must write /autograder/results/results.json.

The grader confines student code there as anywhere (see sandbox/confinement.py): whatever
Gradescope's container allows, the child must not read /autograder, the kit installed in
the venv, or the results. run_autograder names those folders in MHAKIT_HIDE, so that the
probe checks them and Landlock and the jail leave them out. Gradescope runs everything as
root in a container that usually forbids namespaces: then the child runs as a uid of its
own, and where the kernel lacks Landlock too, the file modes that setup.sh and
run_autograder set are all that hides the course. Where nothing hides it, results.json
says so, with score 0, instead of grading.
"""

import json
import os
import sys
import zipfile
from pathlib import Path

from ..exercise import content_files, current
from ..grader.grading import free_checks_heading, grade_notebook, title_of, unreadable
from ..selfcheck.runner import FAILED
from ..selfcheck.notebook_file import one_line
from ..sandbox.confinement import refusal

REPO = Path(__file__).resolve().parents[2]
TEST_KEYS = ("name", "score", "max_score", "output", "visibility", "tags")

# Both scripts run as root. MHAKIT_AUTOGRADER_ROOT and MHAKIT_PYTHON let the kit's tests
# run them in a folder laid out like /autograder; the tests also run setup.sh with
# MHAKIT_SETUP_SKIP_APT=1 and a Python 3.11 of their own in MHAKIT_BASE_PYTHON.
SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
# "setup.sh file-modes" sets the file modes only.
set -euo pipefail
umask 022
root="${MHAKIT_AUTOGRADER_ROOT:-/autograder}"

install() {
    if [ "${MHAKIT_SETUP_SKIP_APT:-}" != 1 ]; then
        apt-get update -qq
        apt-get install -y -qq python3.11 python3.11-venv
    fi
    "${MHAKIT_BASE_PYTHON:-python3.11}" -m venv "$root/venv"
    "$root/venv/bin/pip" install --quiet @REQUIREMENTS@
    "$root/venv/bin/pip" install --quiet --no-deps "$root/source"
}

file_modes() {
    # Student code runs as a uid of its own (64000 and up, no groups). Where the kernel
    # has no Landlock, these modes are all that hides the course from it: it may pass
    # through $root and read the venv's Python and numpy, and nothing else of $root.
    local site
    site=$("$root/venv/bin/python" -I -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    chmod -R a+rX "$root/venv"
    chmod -R go-rwx "$site/autograder" "$site/solutions" "$site"/mha_kit-*.dist-info
    mkdir -p "$root/results"
    chmod 711 "$root"
    find "$root" -mindepth 1 -maxdepth 1 ! -name venv -exec chmod -R go-rwx {} +
}

case "${1:-all}" in
    all) install; file_modes ;;
    file-modes) file_modes ;;
    *) echo "usage: setup.sh [file-modes]" >&2; exit 2 ;;
esac
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission, as root.
set -euo pipefail
root="${MHAKIT_AUTOGRADER_ROOT:-/autograder}"
python="${MHAKIT_PYTHON:-$root/venv/bin/python}"
# Gradescope writes the submission (and its metadata) afresh for each run: of $root, the
# uid that runs student code may only pass through to the venv (see setup.sh).
mkdir -p "$root/results"
chmod 711 "$root"
find "$root" -mindepth 1 -maxdepth 1 ! -name venv -exec chmod -R go-rwx {} +
# The probe checks that a child can neither list nor write these; Landlock and the jail
# leave them out.
export MHAKIT_HIDE="$root:$root/source:$root/submission:$root/results${MHAKIT_HIDE:+:$MHAKIT_HIDE}"
# To grade even where nothing can hide the course from student code (every result is
# then flagged "unconfined"), uncomment:
# export MHAKIT_ALLOW_UNCONFINED=1
# An exercise other than the kit's own travels in the zip's exercise/ folder.
if [ -d "$root/source/exercise" ]; then export MHAKIT_EXERCISE="$root/source/exercise"; fi
cd "$root/source"  # a folder hidden anyway; -I keeps it off sys.path: the venv's kit runs
exec "$python" -I -m autograder.integrations.gradescope "$root"
"""

# What the zip carries: the package and the reference, enough for `pip install`.
PACKAGED = ("pyproject.toml", "README.md", "autograder", "solutions")


# Gradescope's side grades with mhakit grade alone: nbgrader (and all of Jupyter) stays out.
NOT_ON_GRADESCOPE = ("nbgrader",)


def requirements():
    """The kit's own pins from pyproject.toml, the one place they are written, as
    setup.sh's arguments to pip."""
    import re
    import shlex
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    kept = [pin for pin in project["dependencies"]
            if re.match(r"[\w.-]+", pin).group(0).lower() not in NOT_ON_GRADESCOPE]
    return " ".join(shlex.quote(pin) for pin in kept)


def build_zip(target):
    """Write autograder.zip; return its path. Raises ValueError, before writing anything,
    for a target that cannot be a zip file."""
    target = Path(target)
    problem = unwritable_zip(target)
    if problem:
        raise ValueError(problem)
    # Built beside the target and moved into place: a failure halfway (an exercise that
    # cannot travel, a full disk) leaves no half-written zip to upload by mistake.
    partial = target.with_name(f".{target.name}.partial")
    try:
        _write_zip(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def unwritable_zip(target):
    """Why ``target`` cannot be written as the zip, in one line; None when it can."""
    folder = target.parent
    if target.is_dir():
        return (f"{target} is a folder; give a file name for the zip, e.g. "
                f"--out {target / 'autograder.zip'}")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        return f"the folder {folder} {what}; create it or choose another --out"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write in {folder}; choose another --out"
    return None


def _write_zip(zip_path):
    setup = SETUP_SH.replace("@REQUIREMENTS@", requirements())
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", setup), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable, as Gradescope expects
            bundle.writestr(info, text)
        for entry in PACKAGED:
            path = REPO / entry
            files = [path] if path.is_file() else content_files(path)
            for file in files:
                bundle.write(file, str(file.relative_to(REPO)))
        for file, name in _exercise_files():
            bundle.write(file, name)


def _exercise_files():
    """[(file, its name in the zip)] of an exercise that is not the kit's own: its folder
    goes to exercise/, which run_autograder names in MHAKIT_EXERCISE."""
    exercise = current()
    if exercise.folder.is_relative_to(REPO / "autograder"):
        return []
    if not exercise.reference_file.is_relative_to(exercise.folder):
        raise ValueError(f"the reference of {exercise.name} ({exercise.reference_file}) must "
                         f"lie in its folder ({exercise.folder}) to travel to Gradescope")
    return [(file, f"exercise/{file.relative_to(exercise.folder)}")
            for file in content_files(exercise.folder)]


def for_gradescope(result):
    """Gradescope's results.json: its own keys per test, the kit's facts in extra_data.
    Gradescope shows each test's name to the student, so it is in the notebook's language."""
    tests = [dict({key: test[key] for key in TEST_KEYS if key in test},
                  name=title_of(test, result)) for test in result["tests"]]
    for shown, test in zip(tests, result["tests"]):
        if not test["max_score"] and test["status"] == FAILED:  # says why it costs nothing
            part = test["name"].split(":", 1)[0]
            shown["output"] = free_checks_heading(result, part) + "\n" + test["output"]
    shaped = {"score": result["score"], "tests": tests, "extra_data": result["extra_data"],
              "visibility": "after_published", "stdout_visibility": "hidden"}
    if "output" in result:
        shaped["output"] = result["output"]
    return shaped


def find_notebook(submission):
    notebooks = sorted(Path(submission).rglob("*.ipynb"))
    notebooks = [p for p in notebooks if ".ipynb_checkpoints" not in p.parts]
    named = [p for p in notebooks if p.name == current().notebook]
    return (named or notebooks or [None])[0]


def run(root):
    """Grade the one submission under <root>/submission into <root>/results/results.json.
    Refuses, in results.json, where nothing here can hide the course from student code."""
    root = Path(root)
    refused = refusal()  # honours MHAKIT_ALLOW_UNCONFINED=1
    notebook = find_notebook(root / "submission")
    if refused:
        result = refused_result(refused)
    elif notebook is None:
        result = unreadable(f"no .ipynb file was submitted; upload {current().notebook}")
    else:
        result = grade_notebook(notebook)
    return write_results(root, result)


def refused_result(refused):
    """Score 0, and one line for the instructor: why, and how to accept the risk."""
    result = unreadable(refused)
    result["extra_data"].update(status="refused", confinement=None, isolation=[])
    result["output"] = one_line(
        f"mha-kit refused to grade here: {refused.rstrip('.')}. On Gradescope, uncomment "
        "`export MHAKIT_ALLOW_UNCONFINED=1` in run_autograder to accept the risk.", None)
    return result


def write_results(root, result):
    out = Path(root) / "results" / "results.json"
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    out.write_text(json.dumps(for_gradescope(result), indent=1, ensure_ascii=False),
                   encoding="utf-8")
    return out


def main(argv):
    """run_autograder's entry point. Whatever goes wrong, Gradescope gets a results.json
    that says why in one line, and the exit status 0 that makes it show that."""
    root = argv[0] if argv else "/autograder"
    try:
        run(root)
    except Exception as error:  # noqa: BLE001 - the line in results.json is the report
        why = one_line(f"{type(error).__name__}: {error}", None)
        write_results(root, {"score": 0, "tests": [], "output": f"mha-kit could not grade "
                             f"this submission: {why}",
                             "extra_data": {"status": "grading failed", "error": why}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
