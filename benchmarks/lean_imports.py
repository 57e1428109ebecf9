"""What leaving out jsonschema's costly format checks saves (mhakit/lean_imports.py).

A fresh interpreter imports nbformat (what every `mhakit` command and every test worker
does) in three ways, taking turns, R rounds: leaving out nothing, leaving out
rfc3987_syntax alone (the kit before isoduration joined it), and leaving out what
``lean_imports.LEFT_OUT`` names. For each it prints the median and min CPU seconds
(user + system) of the whole process, Python's own start included, and the ratio of the
medians to leaving out rfc3987_syntax alone.

    .venv/bin/python benchmarks/lean_imports.py --rounds 30
"""

import argparse
import resource
import statistics
import subprocess
import sys

from mhakit.lean_imports import LEFT_OUT

WAYS = {"nothing left out": (), "rfc3987_syntax left out": ("rfc3987_syntax",),
        "LEFT_OUT left out": LEFT_OUT}
BASE = "rfc3987_syntax left out"


def child_cpu(left_out, module):
    """CPU seconds of a new interpreter that leaves out ``left_out``, then imports ``module``."""
    code = (f"import sys\nfor name in {tuple(left_out)!r}:\n    sys.modules[name] = None\n"
            f"import {module}\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--module", default="nbformat", help="what to import (default: nbformat)")
    args = parser.parse_args()
    seconds = {way: [] for way in WAYS}
    for round_number in range(args.rounds):
        order = list(WAYS)[round_number % len(WAYS):] + list(WAYS)[:round_number % len(WAYS)]
        for way in order:
            seconds[way].append(child_cpu(WAYS[way], args.module))
    base = statistics.median(seconds[BASE])
    print(f"import {args.module} in a fresh interpreter, {args.rounds} rounds (CPU, ms):")
    for way, values in seconds.items():
        median = statistics.median(values)
        print(f"  {way:<26} median {median * 1000:6.0f}  min {min(values) * 1000:6.0f}  "
              f"{median / base:.2f} of {BASE}")


if __name__ == "__main__":
    main()
