"""The stopwatch that splits grading's time into phases (mhakit/phases.py)."""

import time

from mhakit.phases import OTHER, ORDER, Stopwatch, added, measuring, phase, rounded


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_nested_phase_stops_the_outer_ones_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    with measuring() as watch:
        clock.now += 1  # before any phase: other
        with phase("outer"):
            clock.now += 2
            with phase("inner"):
                clock.now += 5
            clock.now += 3
        seconds = watch.total()
    assert seconds == {"outer": 5, "inner": 5, OTHER: 1}


def test_without_a_stopwatch_a_phase_costs_nothing_and_counts_nothing():
    with phase("anything"):
        pass
    with measuring() as watch:
        pass
    assert set(watch.total()) == {OTHER}


def test_an_inner_measuring_shares_the_outer_stopwatch():
    with measuring() as outer:
        with measuring() as inner:
            assert inner is outer


def test_records_add_up_phase_by_phase_and_ignore_what_is_not_a_number():
    total = added([{"round trips": 0.5}, {"round trips": 0.25, "teardown": 0.1},
                   {"round trips": "x", "teardown": True}, None])
    assert list(total)[:len(ORDER)] == list(ORDER)
    assert total["round trips"] == 0.75 and total["teardown"] == 0.1


def test_a_record_keeps_tenths_of_a_millisecond():
    watch = Stopwatch()
    watch.seconds = {"a": 0.123456, "b": 0.00001}
    assert rounded(watch.seconds) == {"a": 0.1235}
