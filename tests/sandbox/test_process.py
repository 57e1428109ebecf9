"""mhakit/sandbox/process.py: the grader reads the child's frames under a limit, so
frames larger than any answer cost it no memory; a class worker ends its children in the
background, and waits for them before it exits."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from mhakit.sandbox.process import Teardown


PEAK_AFTER_GRADING = (
    "import json, resource, sys\n"
    "from mhakit.grader.grading import grade_notebook\n"
    "result = grade_notebook(sys.argv[1], seed=5)\n"
    "peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(json.dumps([result.parts, peak_kb]))\n")


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


class SlowToEnd:
    """A child whose close takes until the test lets it go."""

    def __init__(self):
        self.let_go, self.ended = threading.Event(), threading.Event()

    def close(self):
        self.let_go.wait(10)
        self.ended.set()


def test_by_default_a_child_has_ended_when_its_grading_returns():
    child = SlowToEnd()
    child.let_go.set()
    Teardown().end(child)
    assert child.ended.is_set()


def test_a_class_worker_goes_on_while_its_children_end_and_waits_for_the_last():
    teardown, children = Teardown(), [SlowToEnd(), SlowToEnd()]
    teardown.in_background()
    for child in children:
        teardown.end(child)  # returns at once: the grading thread goes on
    assert not any(child.ended.is_set() for child in children)
    for child in children:
        child.let_go.set()
    teardown.wait()
    assert all(child.ended.is_set() for child in children)
    again = SlowToEnd()
    again.let_go.set()
    teardown.end(again)  # after wait, here and now again
    assert again.ended.is_set()


WORKER_WAITS = """
import multiprocessing, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from mhakit.sandbox.process import ENDINGS

class SlowChild:
    def __init__(self, path):
        self.path = path
    def close(self):
        time.sleep(1)
        Path(self.path).write_text("ended")

def start():
    ENDINGS.in_background()

def grade(path):
    ENDINGS.end(SlowChild(path))
    return Path(path).exists()

if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(1, mp_context=context, initializer=start) as pool:
        ended_before_return = pool.submit(grade, sys.argv[1]).result()
    print(ended_before_return, Path(sys.argv[1]).exists())
"""


def test_a_worker_process_ends_its_last_child_before_it_exits(tmp_path):
    """The pool shuts down as soon as the last result is in; the worker still ends the
    child it handed to the background (a daemon thread would die with the worker)."""
    script = tmp_path / "worker_waits.py"
    script.write_text(WORKER_WAITS, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "ended")],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]
