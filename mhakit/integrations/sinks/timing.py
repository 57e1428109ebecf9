"""timing.json: how long the run took, and where the time went, added up over the
notebooks it graded (each result's seconds, see phases.py) and the writing of results."""

import json
import os
import time

from ...phases import WRITING, added
from ..sink import write_atomically

ORDER = 50
FILES = ("timing.json",)


class Timing:
    def __init__(self, out, jobs, watch):
        self.out, self.jobs, self.watch = out, jobs, watch
        self.graded = []

    def take(self, taken):
        if taken.how == "graded":
            self.graded.append(taken.result)

    def finish(self, results):
        phases = added(result.extra.get("seconds") for result in self.graded)
        phases[WRITING] += self.watch.seconds.get(WRITING, 0.0)
        count = len(self.graded)
        write_atomically(self.out / "timing.json", json.dumps({
            "notebooks": count, "jobs": self.jobs or os.cpu_count() or 1,
            "wall_seconds": round(time.perf_counter() - self.watch.started, 4),
            "seconds": {name: round(value, 4) for name, value in phases.items()},
            "seconds_per_notebook": {name: round(value / count, 5) if count else 0.0
                                     for name, value in phases.items()},
        }, indent=1))


def sink(run):
    return Timing(run.out, run.jobs, run.watch)
