"""What isolating a submission costs: the jail, the plain plan, and no isolation at all.

One run grades the same N submissions (the 4 bundled sample students, cycled) one after
another, with a fixed seed, in three modes:

  1. "jail": ``grade_cells`` as configured on this machine (the jail when it can be
     built; the layers in force are printed from ``extra_data["isolation"]``);
  2. "plain": ``grade_cells`` with ``MHAKIT_SANDBOX=plain``, the weaker plan;
  3. "no isolation", the baseline: the same checks in the same order and with the same
     random inputs, against the student's functions exec'd into a namespace of the
     grading process itself (``InProcessWithStandIns``), with no child process.

Each mode runs in a subprocess of its own (``jail_works()`` caches its answer per
process, and each mode should start equally cold), grades one warm-up submission, then
times every submission with time.perf_counter. The table gives seconds per submission
(median and min), the overhead against no isolation, and each mode's total score. The
per-submission scores must be the same in all three modes; if they are not, the script
says so and exits with status 1.

Run it from the repository root:

    .venv/bin/python benchmarks/isolation_overhead.py --submissions 12
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from autograder.grading import grade_cells, ordered_checks, reference_functions
from autograder.public.framework import InProcessStudent
from autograder.public.notebook import run_cells
from autograder.public.runner import run_check
from autograder.sample_class import sample_answers

# The notebook's answer cells in order, as tests/conftest.py has them (tests/ is not a
# package the benchmark should depend on).
ANSWER_ORDER = ["answer_dot_product", "answer_attention_scores", "answer_softmax",
                "answer_attention", "answer_split_heads", "answer_concat_heads",
                "answer_output_projection", "answer_multi_head_attention"] + [
                    f"answer_quiz_{n}" for n in range(1, 7)]
MODES = {"jail": "jail", "plain": "plain", "none": "no isolation"}
BASELINE = "none"
_MISSING = object()  # a contract function the student never defined


class InProcessWithStandIns(InProcessStudent):
    """IsolatedStudent's interface, with the student's code in this very process.

    framework.InProcessStudent, plus ``stand_ins``: for that call, the other contract
    functions are the reference ones.
    """

    @property
    def layers(self):
        return ["none"]

    def __init__(self, cells, reference):
        super().__init__({"__name__": "__student__"})
        self.load_errors = run_cells(cells, self.namespace)
        self.reference = reference

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        saved = self._stand_in(name) if stand_ins else {}
        try:
            return super().call(name, *args, readonly=readonly, **kwargs)
        finally:
            self._restore(saved)

    def _stand_in(self, name):
        """Put the reference in place of every other contract function; return what was there."""
        saved = {other: self.namespace.get(other, _MISSING)
                 for other in self.reference if other != name}
        self.namespace.update({other: self.reference[other] for other in saved})
        return saved

    def _restore(self, saved):
        for other, value in saved.items():
            if value is _MISSING:  # leave it undefined again, as the student had it
                self.namespace.pop(other, None)
            else:
                self.namespace[other] = value


def submissions(count):
    """[(label, cells)] for `count` submissions, cycling the sample students."""
    samples = list(sample_answers().items())
    chosen = []
    for index in range(count):
        name, answers = samples[index % len(samples)]
        # The notebook's cell order, then any extra cells, as tests/conftest.py does.
        cells = [(cell_id, answers[cell_id]) for cell_id in ANSWER_ORDER if cell_id in answers]
        cells += [(cell_id, src) for cell_id, src in answers.items()
                  if cell_id not in ANSWER_ORDER and not cell_id.startswith("written_")]
        chosen.append((f"{name}_{index // len(samples):02d}", cells))
    return chosen


def grade_in_process(cells, seed):
    """The loop of grading._grade, with no child: (score, layers)."""
    student = InProcessWithStandIns(cells, reference_functions())
    score = sum(run_check(chk, student, np.random.default_rng([seed, index])).score
                for index, chk in ordered_checks())
    return round(score, 6), student.layers  # rounded as grading._result rounds


def grade_isolated(cells, seed):
    result = grade_cells(cells, seed=seed)
    if result["extra_data"]["status"] == "grading failed":
        raise RuntimeError(f"grading failed: {result['extra_data'].get('error')}")
    return result["score"], result["extra_data"]["isolation"]


def numpy_changes(before):
    """Names in numpy's namespace that a submission rebound in this process.

    Only names bound before grading: numpy adds submodules (numpy.random) lazily.
    """
    now = vars(np)
    return sorted(k for k in before if now.get(k) is not before[k])


def run_mode(mode, count, seed):
    """In the mode's own subprocess: grade a warm-up, then time every submission."""
    grade = grade_in_process if mode == BASELINE else grade_isolated
    numpy_before = dict(vars(np))
    work = submissions(count)
    _, layers = grade(work[0][1], seed)  # warm-up: imports, the jail probe, caches
    times, scores = [], []
    for _, cells in work:
        start = time.perf_counter()
        score, layers = grade(cells, seed)
        times.append(time.perf_counter() - start)
        scores.append(score)
    return {"mode": mode, "times": times, "scores": scores, "layers": layers,
            "total_seconds": sum(times), "total_score": round(sum(scores), 6),
            "numpy_rebound": numpy_changes(numpy_before)}


def mode_environment(mode):
    env = dict(os.environ)
    env.pop("MHAKIT_SANDBOX", None)  # "jail" means this machine's normal configuration
    if mode == "plain":
        env["MHAKIT_SANDBOX"] = "plain"
    # Children get one BLAS thread; give the grader the same in every mode, so that
    # the modes differ by isolation only.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    return env


def measure(mode, args):
    """Run one mode in a fresh subprocess of this script; return its JSON report."""
    command = [sys.executable, str(Path(__file__).resolve()), "--mode", mode,
               "--submissions", str(args.submissions), "--seed", str(args.seed)]
    done = subprocess.run(command, env=mode_environment(mode), capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mode {mode} failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def speed_table(reports, count, seed):
    base = statistics.median(reports[BASELINE]["times"])
    table = Table(box=box.SIMPLE_HEAD,
                  title=f"Grading {count} submissions one after another (seed {seed})")
    for header in ("mode", "median s / sub", "min s / sub", "overhead ms / sub",
                   "× no isolation", f"total score ({count} subs)"):
        table.add_column(header, justify="left" if header == "mode" else "right")
    for mode, report in reports.items():
        median = statistics.median(report["times"])
        table.add_row(MODES[mode], f"{median:.3f}", f"{min(report['times']):.3f}",
                      f"{(median - base) * 1000:+.0f}", f"{median / base:.1f}×",
                      f"{report['total_score']:g}")
    return table


def scores_agree(reports):
    """Submission indexes whose score is not the same in every mode."""
    columns = [report["scores"] for report in reports.values()]
    return [i for i, row in enumerate(zip(*columns)) if len(set(row)) != 1]


def report(console, reports, args):
    for mode, data in reports.items():
        console.print(f"[bold]{MODES[mode]}[/] layers: " + "; ".join(data["layers"]))
    if reports["jail"]["layers"] == reports["plain"]["layers"]:
        console.print("[yellow]the jail could not be built here: mode 'jail' ran the plain plan[/]")
    console.print(speed_table(reports, args.submissions, args.seed))
    console.print("(overhead and × use medians; each mode graded one warm-up submission first)")
    rebound = reports[BASELINE]["numpy_rebound"]
    if rebound:
        names = ", ".join(f"numpy.{name}" for name in rebound)
        console.print(f"note: without isolation, submissions rebound {names} "
                      "in the grading process itself")
    differing = scores_agree(reports)
    if not differing:
        console.print("per-submission scores: identical in all three modes")
        return 0
    labels = [label for label, _ in submissions(args.submissions)]
    console.print("[bold red]PER-SUBMISSION SCORES DIFFER BETWEEN MODES[/]")
    for i in differing:
        console.print(f"[red]  {labels[i]}: " + ", ".join(
            f"{MODES[m]} {r['scores'][i]:g}" for m, r in reports.items()) + "[/]")
    return 1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=12, metavar="N",
                        help="submissions to grade per mode, cycling the samples (default 12)")
    parser.add_argument("--seed", type=int, default=1, help="grading seed (default 1)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # internal: one mode
    args = parser.parse_args(argv)
    if args.submissions < 1:
        parser.error("--submissions must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.submissions, args.seed)))
        return 0
    # rich assumes 80 columns when piped; the table is wider than that.
    console = Console() if Console().is_terminal else Console(width=120)
    reports = {}
    for mode, label in MODES.items():  # one after another, never in parallel
        Console(stderr=True).print(f"timing {label} ({args.submissions} submissions)")
        reports[mode] = measure(mode, args)
    return report(console, reports, args)


if __name__ == "__main__":
    sys.exit(main())
