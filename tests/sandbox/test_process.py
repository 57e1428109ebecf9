"""autograder/sandbox/process.py: the grader reads the child's frames under a limit, so
frames larger than any answer cost it no memory."""

import json
import os
import subprocess
import sys


PEAK_AFTER_GRADING = (
    "import json, resource, sys\n"
    "from autograder.grader.grading import grade_notebook\n"
    "result = grade_notebook(sys.argv[1], seed=5)\n"
    "peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(json.dumps([result['extra_data']['parts'], peak_kb]))\n")


def _grade_and_measure(notebook_bytes, tmp_path, name):
    path = tmp_path / f"{name}.ipynb"
    path.write_bytes(notebook_bytes)
    done = subprocess.run([sys.executable, "-c", PEAK_AFTER_GRADING, str(path)],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, MHAKIT_CALL_SECONDS="5"))
    assert done.returncode == 0, done.stderr[-2000:]
    parts, peak_kb = json.loads(done.stdout.splitlines()[-1])
    return parts, peak_kb / 1024


def test_frames_larger_than_any_answer_cost_the_grader_no_memory(tmp_path):
    from tests.attacks.corpus import ATTACKS

    attack = next(a for a in ATTACKS if a.name == "frames-larger-than-any-answer")
    honest = next(a for a in ATTACKS if a.name == "environment-reveals-nothing")
    parts, attacked_mb = _grade_and_measure(attack.make(), tmp_path, "attack")
    assert parts["attention"] == parts["output_projection"] == 0
    _, honest_mb = _grade_and_measure(honest.make(), tmp_path, "honest")
    # The forged frame announces 128 MB, the stand-in request broadcasts to 72 million
    # scores: the grader reads neither, so its peak stays that of an honest notebook.
    assert attacked_mb < honest_mb + 64, (attacked_mb, honest_mb)
