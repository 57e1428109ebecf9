"""Where grading's time goes: seconds per phase of grading one submission.

``grade_cells`` measures every submission and files the seconds in its result
(``extra_data["seconds"]``); ``mhakit grade`` adds them up for the run in timing.json, and
benchmarks/grading_speed.py prints them per notebook. A phase inside another one stops
the outer one's clock, so the phases add up to the time measured and nothing counts twice.

This module imports nothing of the kit: the sandbox, the grader and the doors all use it.
"""

import time
from contextlib import contextmanager
from contextvars import ContextVar

PLANNING = "planning"
READING = "reading the notebook"
CHILD_START = "child start and loading the cells"
ROUND_TRIPS = "round trips"
COMPARING = "comparison and diagnosis"
TEARDOWN = "teardown"
NOTES = "style and import notes"
WRITING = "writing results"
OTHER = "other"
ORDER = (PLANNING, READING, CHILD_START, ROUND_TRIPS, COMPARING, TEARDOWN, NOTES, WRITING,
         OTHER)

_running = ContextVar("mhakit_stopwatch", default=None)


class Stopwatch:
    """Seconds per phase; ``phase`` blocks nest, each counting its own time only."""

    def __init__(self):
        self.seconds = {}
        self._stack = []  # [phase name, when its clock last started]
        self.started = time.perf_counter()

    def enter(self, name):
        now = time.perf_counter()
        if self._stack:
            self._add(self._stack[-1], now)
        self._stack.append([name, now])

    def leave(self):
        now = time.perf_counter()
        self._add(self._stack.pop(), now)
        if self._stack:
            self._stack[-1][1] = now

    def _add(self, entry, now):
        self.seconds[entry[0]] = self.seconds.get(entry[0], 0.0) + now - entry[1]

    def total(self):
        """Its phases, and OTHER for the rest of the time since it started."""
        seconds = dict(self.seconds)
        seconds[OTHER] = max(0.0, time.perf_counter() - self.started - sum(seconds.values()))
        return seconds


@contextmanager
def measuring():
    """The Stopwatch of the submission being graded: a new one, or the one already
    running in this context (reading a notebook, then grading its cells)."""
    watch = _running.get()
    if watch is not None:
        yield watch
        return
    watch = Stopwatch()
    token = _running.set(watch)
    try:
        yield watch
    finally:
        _running.reset(token)


@contextmanager
def phase(name):
    """Count the block's time to ``name``, when a Stopwatch runs; else nothing."""
    watch = _running.get()
    if watch is None:
        yield
        return
    watch.enter(name)
    try:
        yield
    finally:
        watch.leave()


def rounded(seconds):
    """A result's record of its phases: milliseconds are enough, and keep it short."""
    return {name: round(value, 4) for name, value in seconds.items() if value >= 0.00005}


def added(records):
    """The sum of several results' records, phase by phase, in ORDER."""
    total = dict.fromkeys(ORDER, 0.0)
    for record in records:
        for name, value in (record or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[name] = total.get(name, 0.0) + float(value)
    return total
