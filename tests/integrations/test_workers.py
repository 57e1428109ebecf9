"""mhakit/integrations/workers.py: a class run's workers start, and ready themselves,
before the run hands them a notebook; and a run that stops before grading leaves none."""

import multiprocessing
import os
import shutil
import time

import pytest

from mhakit.exercise import current
from mhakit.grader.grading import _prepared_for, warm_up
from mhakit.grader.result import Status
from mhakit.integrations.batch import grade_folder
from mhakit.integrations.workers import start_forkserver, started_pool
from mhakit.sandbox import process
from mhakit.settings import passed_on
from tests.conftest import grade_answers


def what_this_worker_holds(seconds):
    """Run in a worker: (its pid, whether a spare child waits, the plans it holds). The
    pause keeps it busy, so that the next job goes to the other worker."""
    time.sleep(seconds)
    return os.getpid(), process._SPARES.get(()) is not None, _prepared_for.cache_info().currsize


def test_every_worker_has_its_plan_and_a_spare_child_before_its_first_notebook():
    with started_pool(2, 10, seed=5, exercise=current()) as pool:
        held = [pool.submit(what_this_worker_holds, 0.5) for _ in range(2)]
        held = [future.result(timeout=120) for future in held]
    assert len({pid for pid, _, _ in held}) == 2, held
    assert all(spare and plans == 1 for _, spare, plans in held), held


def test_a_setting_passed_on_after_the_forkserver_started_reaches_the_workers(monkeypatch):
    """`mhakit grade` starts the workers' forkserver before its gate, which may then pass
    on --allow-unconfined (or that it warned): the workers, forked from that older
    process, hold the run's settings all the same."""
    start_forkserver()
    monkeypatch.setenv("MHAKIT_WARNED", "1")  # as pass_on(warned=True) does, put back after
    with started_pool(1, 1, seed=5, exercise=current()) as pool:
        held = pool.submit(passed_on).result(timeout=120)
    assert held["MHAKIT_WARNED"] == "1"


def test_a_pool_starts_no_more_workers_than_there_are_notebooks():
    before = set(multiprocessing.active_children())
    with started_pool(4, 1, seed=5, exercise=current()) as pool:
        pool.submit(int).result(timeout=120)
        started = set(multiprocessing.active_children()) - before
    assert len(started) == 1


def test_the_first_notebook_after_the_warm_up_takes_the_spare_child_it_made(
        reference_answers, monkeypatch):
    """The spare is filed under the limits that grading asks for: were they to differ,
    the warm-up's child would be thrown away and a second one started."""
    process.close_spare()
    warm_up(seed=7)
    made = []
    start = process.ChildProcess.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        start(self, *args, **kwargs)

    monkeypatch.setattr(process.ChildProcess, "__init__", counted)
    try:
        result = grade_answers(reference_answers, seed=7)
    finally:
        process.close_spare()
    assert result.status is Status.GRADED and result.score == result.max_score
    assert len(made) == 1  # the next notebook's spare, and no child for this one


def test_a_run_whose_gradebook_cannot_be_opened_leaves_no_worker_behind(course, tmp_path):
    """The workers start before the gradebook is read; when reading it fails, they end."""
    empty_course = tmp_path / "course"
    (empty_course / "submitted").mkdir(parents=True)
    for student in ("ann", "ben"):
        shutil.copytree(course / "submitted" / "alice_correct", empty_course / "submitted" / student)
    before = set(multiprocessing.active_children())
    with pytest.raises(ValueError, match="no gradebook.db"):
        grade_folder(empty_course / "submitted", tmp_path / "out", seed=1, jobs=2, quiet=True,
                     gradebook=empty_course)
    assert set(multiprocessing.active_children()) - before == set()
