"""A class run's grading workers: local processes, started before the run needs them.

Processes, not threads: the checks are Python and would share one core under the GIL.
Each worker keeps its own warm zygote and plans its checks once. A worker readies itself
as it starts (``grading.warm_up``): its zygote, which imports numpy while the worker plans
its checks, then a spare child. A run starts its workers first and reads the gradebook
meanwhile (mostly importing nbgrader: about half a second), so that neither waits for
the other.
"""

import multiprocessing
import multiprocessing.forkserver
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor

from ..grader.grading import warm_up
from ..sandbox import confinement
from ..sandbox.limits import Limits
from ..sandbox.process import start_class_worker
from ..settings import passed_on, take_on

# Imported once, in the process the workers are forked from, not once in each of them.
PRELOADED = ["mhakit.grader.grading", "mhakit.integrations.gradebook",
             "mhakit.integrations.workers"]


def _forkserver_context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOADED)
    return context


def start_forkserver():
    """Start the forkserver the workers come from now, so that its imports (PRELOADED,
    about 0.15 s) overlap what a run does before it starts its pool: the gate's probe
    child, reading the submissions. Best effort: a forkserver that cannot start now
    fails again when the pool starts, and is reported there (``started_pool``)."""
    _forkserver_context()
    try:
        multiprocessing.forkserver.ensure_running()
    except OSError:
        pass


def pool_options(seed, exercise):
    """What every pool of a run is made with: forkserver workers that take this process's
    probe of the confinement rather than each probing again (about 0.2 s of CPU each),
    end their children in the background, and ready themselves for ``seed`` and
    ``exercise`` (sent as its folder: see Exercise.__reduce__), with the settings this
    process passes on as they are now (its forkserver may predate them). The caller has
    loaded the exercise before this probes, so the probe child tries to read its
    reference too, as in the doors' gate."""
    return {"mp_context": _forkserver_context(), "initializer": start_worker,
            "initargs": (confinement.choice(Limits()), seed, exercise, passed_on())}


def start_worker(choice, seed, exercise, settings):
    take_on(settings)  # set after the forkserver started (--allow-unconfined: see gate.py)
    start_class_worker(choice)
    warm_up(seed, exercise)


def started_pool(jobs, submissions, seed, exercise):
    """A pool of ``jobs`` workers (by default one per core, never more than there are
    ``submissions``), every one of them started now. (A pool otherwise starts a worker
    only when a job is handed to it.)"""
    count = max(1, min(jobs or os.cpu_count() or 1, submissions))
    pool = ProcessPoolExecutor(max_workers=count, **pool_options(seed, exercise))
    try:
        for _ in range(count):
            pool.submit(int)  # nothing to do: each one starts a worker
    except OSError as error:
        pool.shutdown(wait=False)
        if "AF_UNIX path too long" in str(error):  # the forkserver's socket, in TMPDIR
            raise ValueError(f"the temporary folder {tempfile.gettempdir()} is too long a "
                             "path for the grading processes' socket; set TMPDIR to a "
                             "shorter one, such as /tmp") from None
        raise
    return pool
