"""mhakit/integrations/sinks/: where a class run's results go, one module each.

A sink is found by being in the package; whatever a run writes beside the students'
folders is a name no student's folder may take; and a student whose results cannot be
written is reported as not graded while the class goes on."""

import json
from pathlib import Path

from mhakit.exercise import current
from mhakit.integrations import batch, sinks
from mhakit.integrations.sink import Taken
from mhakit.integrations.sinks.timing import Timing
from mhakit.grader.result import Result, Status
from tests.integrations.test_cli import mhakit

SINKS = Path(sinks.__file__).parent


def test_every_module_of_the_package_is_a_sink_that_says_its_files_and_order():
    names = {path.stem for path in SINKS.glob("*.py")} - {"__init__"}
    assert {module.__name__.rsplit(".", 1)[1] for module in sinks.MODULES} == names
    for module in sinks.MODULES:
        assert isinstance(module.ORDER, int) and isinstance(module.FILES, tuple), module
        assert callable(module.sink), module
    orders = [module.ORDER for module in sinks.MODULES]
    assert len(set(orders)) == len(orders)  # no tie left to the modules' names
    assert sinks.MODULES[0].__name__.endswith("student_files")  # first: see _into


def test_every_file_a_class_run_writes_beside_the_students_is_reserved(course, tmp_path):
    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6", "--json")
    assert done.returncode == 0, done.stderr
    students = set(json.loads(done.stdout))
    written = {path.name for path in out.iterdir()}
    assert {path.name for path in out.iterdir() if path.is_dir()} == students
    assert written - students == set(batch.RESERVED) == set(sinks.RESERVED)


class Refuses:
    def __init__(self, student):
        self.student = student

    def take(self, taken):
        if taken.student == self.student:
            raise OSError(28, "No space left on device")


class Keeps:
    def __init__(self):
        self.taken = []

    def take(self, taken):
        self.taken.append(taken)


def a_result(score):
    return Result(score, (), {"parts": {}, "seed": 4,
                              "batch_notes": ["two notebooks in the folder"]}, output="")


def test_a_student_whose_results_cannot_be_written_goes_on_as_not_graded():
    later = Keeps()
    places = [Refuses("ann"), later]
    kept = batch._into(places, Taken("ann", a_result(90.0), "graded"), 4, current())
    assert kept.status is Status.FAILED
    assert kept.score == 0 and "No space left on device" in kept.extra["error"]
    assert kept.extra["batch_notes"] == ["two notebooks in the folder"]
    assert later.taken[-1].result is kept  # the later sinks hear it as not graded
    other = batch._into(places, Taken("ben", a_result(80.0), "graded"), 4, current())
    assert other.score == 80.0 and later.taken[-1].result is other


def test_timing_counts_the_notebooks_this_run_graded_and_no_other(tmp_path):
    from mhakit.phases import Stopwatch

    timing = Timing(tmp_path, 2, Stopwatch())
    result = a_result(1.0).with_extra(seconds={"planning": 0.5})
    for how in ("graded", "kept", "found", "graded"):
        timing.take(Taken(f"s-{how}", result, how))
    timing.finish({})
    written = json.loads((tmp_path / "timing.json").read_text(encoding="utf-8"))
    assert written["notebooks"] == 2 and written["seconds"]["planning"] == 1.0
