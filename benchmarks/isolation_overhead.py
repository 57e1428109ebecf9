"""What isolating a submission costs, in every confinement mode this machine offers.

One run grades the same N submissions (the 4 bundled sample students, cycled) with a
fixed seed in each mode below:

  1. "jail": the root jail (``MHAKIT_SANDBOX=jail``), the reference of every ratio;
  2. "userns": the same jail built in a user namespace, without root's privileges;
  3. "landlock": Landlock alone;
  4. "uid": root without namespaces, an unprivileged uid of its own. That uid must read
     the Python it runs, so this mode runs only with a Python outside /root: this one if
     other uids can read it, else the one given with ``--uid-python`` (it must import
     numpy and nbformat, e.g. ``python3 -m venv /opt/mhakit-uid`` then
     ``/opt/mhakit-uid/bin/pip install numpy nbformat``). Otherwise it says why it did
     not run;
  5. "plain": no confinement, accepted with ``MHAKIT_ALLOW_UNCONFINED=1``;
  6. "no isolation", the baseline: the same checks in the same order and with the same
     random inputs, against the student's functions exec'd into a namespace of the
     grading process itself (``InProcessWithStandIns``), with no child process.

Each mode is forced with ``MHAKIT_SANDBOX`` and runs in a subprocess of its own (the mode
is chosen once per process); it grades one warm-up submission, then the parent has
submission i graded in every mode before submission i + 1 (interleaved, the order of the
modes turning each round, so that a busy spell of the machine is shared among them), each
timed with time.perf_counter. The layers in force are printed from each result's
``extra_data["isolation"]``, and ``extra_data["confinement"]`` must name the forced mode:
a mode that fell back or failed is reported in capitals. The table gives seconds per
submission (median and min), the ratio to the root jail and to no isolation, and each
mode's total score, followed by the issue's target (userns costs at most 1.5 times the
root jail). The exit status is 1 if per-submission scores differ between modes, or if a
mode fell back or failed; a mode that this machine cannot run is "not run", with why.

``--bwrap`` adds what a bubblewrap-based child would cost to start: ``bwrap --unshare-all``
around a fresh interpreter that imports numpy, next to the kit's own child start in userns
mode (``ChildProcess(Limits())`` and its first round trip, forked from the warm zygote, and
with ``MHAKIT_ZYGOTE=0``), interleaved, M starts each. It needs ``bwrap`` on PATH (Debian:
``apt-get install bubblewrap``); the kit itself does not use it.

Run it from the repository root:

    .venv/bin/python benchmarks/isolation_overhead.py --submissions 12
    .venv/bin/python benchmarks/isolation_overhead.py --submissions 12 --bwrap \\
        --uid-python /opt/mhakit-uid/bin/python
"""

import argparse
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mhakit.exercise import current
from mhakit.grader.grading import grade_cells, ordered_checks, seeded
from mhakit.grader.result import Status
from mhakit.selfcheck.framework import InProcessStudent
from mhakit.selfcheck.notebook import run_cells
from mhakit.selfcheck.runner import run_check
# Run as a script, Python puts benchmarks/ on the path, not the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.mha_exercise import sample_answers

# rich is imported only where the parent prints: the uid mode's Python may hold only
# numpy and nbformat.

# The notebook's answer cells in order, as tests/conftest.py has them (tests/ is not a
# package the benchmark should depend on).
ANSWER_ORDER = ["answer_dot_product", "answer_attention_scores", "answer_softmax",
                "answer_attention", "answer_split_heads", "answer_concat_heads",
                "answer_output_projection", "answer_multi_head_attention"] + [
                    f"answer_quiz_{n}" for n in range(1, 7)]
MODES = {"jail": "jail (root)", "userns": "userns (unprivileged)", "landlock": "landlock alone",
         "uid": "uid (root, no namespaces)", "plain": "plain (accepted unconfined)",
         "none": "no isolation (baseline)"}
BASELINE, REFERENCE = "none", "jail"
TARGET_MODE, TARGET_RATIO = "userns", 1.5
REPOSITORY = Path(__file__).resolve().parents[1]
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


# ------------------------------------------------------------ one mode, in its subprocess

def grade_in_process(cells, seed):
    """The loop of grading._grade, with no child: (score, layers, confinement)."""
    student = InProcessWithStandIns(cells, current().reference)
    rng_for = seeded(seed)
    score = sum(run_check(chk, student, rng_for(chk)).score for chk in ordered_checks())
    return round(score, 6), student.layers, "none"  # rounded as grading._result rounds


def grade_isolated(cells, seed):
    result = grade_cells(cells, seed=seed)
    extra = result.extra
    if result.status is Status.FAILED:
        raise RuntimeError(f"grading failed: {extra.get('error')}")
    return result.score, extra["isolation"], extra["confinement"]


def numpy_changes(before):
    """Names in numpy's namespace that a submission rebound in this process.

    Only names bound before grading: numpy adds submodules (numpy.random) lazily.
    """
    now = vars(np)
    return sorted(k for k in before if now.get(k) is not before[k])


MARK = "@@isolation-overhead "  # on the lines meant for the parent, not a submission's


def tell(message):
    print(MARK + json.dumps(message), flush=True)


def serve_mode(mode, count, seed):
    """In the mode's own subprocess: grade a warm-up, say so, then grade each submission
    whose index the parent sends on stdin, answering with its seconds and score."""
    grade = grade_in_process if mode == BASELINE else grade_isolated
    numpy_before = dict(vars(np))
    work = submissions(count)
    try:
        _, layers, confinement = grade(work[0][1], seed)  # warm-up: imports, probe, zygote
    except RuntimeError as error:
        return tell({"error": str(error)})
    tell({"layers": layers, "confinement": confinement,
          "python": f"{sys.executable} (Python {sys.version.split()[0]}, numpy {np.__version__})"})
    for line in sys.stdin:
        start = time.perf_counter()
        score, layers, confinement = grade(work[int(line)][1], seed)
        tell({"seconds": time.perf_counter() - start, "score": score, "layers": layers,
              "confinement": confinement, "numpy_rebound": numpy_changes(numpy_before)})
    return None


# ------------------------------------------------------------ the parent: start each mode

def others_can_read(path):
    """Could a uid other than the owner's open ``path`` (every folder above it searchable)?"""
    path = Path(os.path.realpath(path))
    return (all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents)
            and bool(path.stat().st_mode & stat.S_IROTH))


def interpreter_for(mode, args):
    """(the Python to run ``mode`` with, None) or (None, why it is not run here)."""
    if mode in ("jail", "uid") and os.geteuid() != 0:
        return None, "needs root"
    if mode != "uid":
        return sys.executable, None
    if args.uid_python:
        return args.uid_python, None
    base = os.path.realpath(sys.base_prefix)
    if others_can_read(base) and others_can_read(os.path.realpath(sys.executable)):
        return sys.executable, None
    return None, (f"its unprivileged uid cannot read this Python ({base}); pass "
                  "--uid-python with a Python outside /root that has numpy and nbformat")


def mode_environment(mode, python):
    env = dict(os.environ)
    for name in ("MHAKIT_SANDBOX", "MHAKIT_ALLOW_UNCONFINED", "MHAKIT_WARNED"):
        env.pop(name, None)  # a forced mode that fails must fail, not run unconfined
    if mode != BASELINE:
        env["MHAKIT_SANDBOX"] = mode
    if mode == "plain":
        env["MHAKIT_ALLOW_UNCONFINED"] = "1"
    if python != sys.executable:  # another interpreter: the kit from this checkout
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY),
                                                          env.get("PYTHONPATH")]))
    # Children get one BLAS thread; give the grader the same in every mode, so that
    # the modes differ by isolation only.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    return env


class ModeWorker:
    """The parent's end of one mode's subprocess of this script; ``report`` is what it
    said: "skipped" or "error" when it has no timings."""

    def __init__(self, mode, args):
        self.mode, self.process = mode, None
        python, skipped = interpreter_for(mode, args)
        self.report = {"mode": mode, "skipped": skipped} if skipped else {"mode": mode}
        if skipped:
            return
        self.errors = tempfile.TemporaryFile("w+")  # a file: a pipe could fill and block it
        command = [python, str(Path(__file__).resolve()), "--mode", mode,
                   "--submissions", str(args.submissions), "--seed", str(args.seed)]
        self.process = subprocess.Popen(
            command, env=mode_environment(mode, python), cwd=REPOSITORY, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)
        ready = self._hear()  # once its warm-up is graded
        if ready is not None:
            self.report.update(ready, confinement=[ready["confinement"]], times=[], scores=[])

    def _hear(self):
        """The worker's next message; None, with the report's "error", if it failed."""
        for line in self.process.stdout:
            if line.startswith(MARK):
                message = json.loads(line[len(MARK):])
                if "error" not in message:
                    return message
                self.report["error"] = message["error"]
                return None
        self.errors.seek(0)
        tail = " | ".join(self.errors.read().strip().splitlines()[-3:])
        self.report["error"] = f"exit {self.process.wait()}: {tail}"
        return None

    def running(self):
        return self.process is not None and "error" not in self.report

    def grade(self, index):
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        heard = self._hear()
        if heard is None:
            return
        self.report["times"].append(heard["seconds"])
        self.report["scores"].append(heard["score"])
        self.report.update(layers=heard["layers"], numpy_rebound=heard["numpy_rebound"])
        if heard["confinement"] not in self.report["confinement"]:
            self.report["confinement"].append(heard["confinement"])

    def finish(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()
        if self.report.get("scores"):
            self.report["total_score"] = round(sum(self.report["scores"]), 6)
        return self.report


def measure(args):
    """Every mode's report: workers warmed up one after another, then submission i graded
    in every mode before submission i + 1 (interleaved, the order turning each round)."""
    from rich.console import Console

    workers = []
    for mode, label in MODES.items():
        Console(stderr=True).print(f"{label}: starting, grading its warm-up submission")
        workers.append(ModeWorker(mode, args))
    Console(stderr=True).print(f"timing {args.submissions} submissions in each mode")
    for index in range(args.submissions):
        turn = index % len(workers)
        for worker in workers[turn:] + workers[:turn]:
            if worker.running():
                worker.grade(index)
    return {worker.mode: worker.finish() for worker in workers}


# ------------------------------------------------------------ the parent: what it prints

def problem_of(mode, data):
    """Why ``mode`` has no trustworthy timings: None, or (kind, text)."""
    if "skipped" in data:
        return "not run", data["skipped"]
    if "error" in data:
        return "FAILED", data["error"]
    if data["confinement"] != [mode]:
        return "FELL BACK", f"forced {mode}, graded in {', '.join(data['confinement'])}"
    return None


def print_layers(console, reports):
    """Each mode's layers (extra_data["isolation"]), those of every confined mode once."""
    ran = {m: d["layers"] for m, d in reports.items()
           if m != BASELINE and not problem_of(m, d)}
    common = [layer for layer in next(iter(ran.values()), [])
              if all(layer in layers for layers in ran.values())] if len(ran) > 1 else []
    if common:
        console.print("[bold]layers of every confined mode that ran[/] (plain included):")
        for layer in common:
            console.print(f"    - {layer}")
    for mode, data in reports.items():
        problem = problem_of(mode, data)
        if problem:
            style = "yellow" if problem[0] == "not run" else "bold red"
            console.print(f"[{style}]{MODES[mode]}: {problem[0]}: {problem[1]}[/]")
            continue
        if mode == BASELINE:
            console.print(f"[bold]{MODES[mode]}[/]: no child, student code runs in the grader")
            continue
        own = [layer for layer in data["layers"] if layer not in common]
        console.print(f"[bold]{MODES[mode]}[/] (extra_data confinement: "
                      f"{data['confinement'][0]}), and:")
        for layer in own:
            console.print(f"    - {layer}")


def median_of(reports, mode):
    data = reports.get(mode, {})
    return statistics.median(data["times"]) if not problem_of(mode, data) else None


def speed_table(reports, count, seed):
    from rich import box
    from rich.table import Table

    base, jail = median_of(reports, BASELINE), median_of(reports, REFERENCE)
    table = Table(box=box.SIMPLE_HEAD,
                  title=f"Grading {count} submissions in every mode, interleaved (seed {seed})")
    for header in ("mode", "median s / sub", "min s / sub", "× root jail", "× no isolation",
                   f"total score ({count} subs)"):
        table.add_column(header, justify="left" if header == "mode" else "right")
    for mode, data in reports.items():
        median = median_of(reports, mode)
        if median is None:
            table.add_row(MODES[mode], *["—"] * 4, problem_of(mode, data)[0])
            continue
        table.add_row(MODES[mode], f"{median:.3f}", f"{min(data['times']):.3f}",
                      f"{median / jail:.2f}×" if jail else "—",
                      f"{median / base:.1f}×" if base else "—", f"{data['total_score']:g}")
    return table


def target_line(reports):
    """The issue's target, and whether this run meets it."""
    said = (f"target: the unprivileged mode ({TARGET_MODE}) costs at most {TARGET_RATIO:g} "
            "times the root jail per submission")
    mine, jail = median_of(reports, TARGET_MODE), median_of(reports, REFERENCE)
    if mine is None or jail is None:
        return f"[bold red]{said}: NOT MEASURED ({TARGET_MODE} or jail has no timings)[/]"
    ratio = mine / jail
    mins = min(reports[TARGET_MODE]["times"]) / min(reports[REFERENCE]["times"])
    verdict = "[bold green]met[/]" if ratio <= TARGET_RATIO else "[bold red]NOT MET[/]"
    return (f"{said}: {TARGET_MODE}/jail = {ratio:.2f}× by medians ({mins:.2f}× by minima)"
            f" — {verdict}")


def graded(reports):
    """The modes that graded every submission, whatever confined them."""
    return {m: d for m, d in reports.items() if "error" not in d and "skipped" not in d}


def scores_differ(reports):
    """Submission indexes whose score is not the same in every mode that graded them."""
    columns = [data["scores"] for data in graded(reports).values()]
    return [i for i, row in enumerate(zip(*columns)) if len(set(row)) != 1]


def print_scores(console, reports, count):
    """Say whether every mode gave every submission the same score; True if so."""
    differing = scores_differ(reports)
    if not differing:
        console.print(f"per-submission scores: identical in all {len(graded(reports))} "
                      "modes that ran")
        return True
    labels = [label for label, _ in submissions(count)]
    console.print("[bold red]PER-SUBMISSION SCORES DIFFER BETWEEN MODES[/]")
    for i in differing:
        console.print(f"[red]  {labels[i]}: " + ", ".join(
            f"{MODES[m]} {d['scores'][i]:g}" for m, d in graded(reports).items()) + "[/]")
    return False


def report(console, reports, args):
    """Print everything measured; 1 if scores differ or a mode fell back or failed."""
    print_layers(console, reports)
    console.print(speed_table(reports, args.submissions, args.seed))
    console.print("(ratios use medians; each mode graded one warm-up submission first, then "
                  "submission i in every mode before submission i + 1)")
    console.print(target_line(reports))
    pythons = {data["python"] for data in reports.values() if "python" in data}
    for mode, data in reports.items():
        if len(pythons) > 1 and "python" in data:
            console.print(f"python of {MODES[mode]}: {data['python']}")
    rebound = reports[BASELINE].get("numpy_rebound")
    if rebound:
        names = ", ".join(f"numpy.{name}" for name in rebound)
        console.print(f"note: without isolation, submissions rebound {names} "
                      "in the grading process itself")
    agree = print_scores(console, reports, args.submissions)
    problems = {mode: problem_of(mode, data) for mode, data in reports.items()}
    broken = [mode for mode, problem in problems.items() if problem and problem[0] != "not run"]
    if broken:
        console.print(f"[bold red]MODES THAT FELL BACK OR FAILED: {', '.join(broken)}[/]")
    return 0 if agree and not broken else 1


# ------------------------------------------------------------ --bwrap: one child's start

def kit_child_start(limits):
    """Seconds to start one of the kit's children and have its first answer."""
    from mhakit.sandbox.process import ChildProcess

    start = time.perf_counter()
    child = ChildProcess(limits)
    try:
        child.send({"op": "load", "preamble": "", "cells": []})
        header, _ = child.receive(time.monotonic() + limits.call_seconds, limit=0)
        seconds = time.perf_counter() - start
        if header.get("op") != "loaded" or child.mode != "userns":
            raise RuntimeError(f"child in mode {child.mode} answered {header}")
    finally:
        child.close()
    return seconds


def fresh_command(sandboxed):
    """A fresh interpreter that imports numpy and says so; in bwrap if ``sandboxed``."""
    from mhakit.sandbox import student_site

    site = student_site.student_site()  # the folder that holds numpy only, as the kit's child has
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); import numpy; "
            "print('ready', flush=True)")
    python = [str(student_site.PYTHON_BINARY), "-I", "-S", "-c", code]
    if not sandboxed:
        return python
    command = ["bwrap"]
    for name in ("bin", "lib", "lib64", "sbin"):  # merged /usr: the loader is under /lib64
        if Path(f"/{name}").is_symlink():
            command += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    for root in student_site.readable_roots():  # /usr, Python, numpy: what the kit's jail shows
        command += ["--ro-bind", root, root]
    return command + ["--dev", "/dev", "--unshare-all", "--die-with-parent", *python]


def fresh_start(command):
    """Seconds from starting ``command`` to its first line; then it is waited for."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    seconds = time.perf_counter() - start
    _, errors = process.communicate(timeout=60)
    if line.strip() != "ready":
        raise RuntimeError(f"{command[0]} failed (exit {process.returncode}): {errors.strip()}")
    return seconds


STARTS = {  # what is timed, by kind
    "zygote": "kit, userns: fork from the warm zygote (as graded)",
    "cold": "kit, userns: launcher + fresh interpreter (MHAKIT_ZYGOTE=0)",
    "bwrap": "bwrap --unshare-all: fresh interpreter + import numpy",
    "bare": "no sandbox: fresh interpreter + import numpy",
}


def one_start(kind, limits):
    if kind in ("zygote", "cold"):
        os.environ["MHAKIT_ZYGOTE"] = "0" if kind == "cold" else "1"
        return kit_child_start(limits)
    return fresh_start(fresh_command(sandboxed=kind == "bwrap"))


def run_starts(count):
    """In a subprocess forced to userns: every kind once to warm up, then ``count``
    rounds, each kind once per round (interleaved). Seconds per start, by kind."""
    from mhakit.sandbox import Limits

    limits, times = Limits(), {kind: [] for kind in STARTS}
    for kind in STARTS:  # warm-up: the mode's probe, the zygote, the page cache
        one_start(kind, limits)
    for _ in range(count):
        for kind in STARTS:
            times[kind].append(one_start(kind, limits))
    return times


def measure_starts(args):
    command = [sys.executable, str(Path(__file__).resolve()), "--starts-only",
               "--starts", str(args.starts)]
    done = subprocess.run(command, env=mode_environment("userns", sys.executable),
                          capture_output=True, text=True, check=False, cwd=REPOSITORY)
    if done.returncode != 0:
        raise RuntimeError(f"child starts failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def starts_table(times, count):
    from rich import box
    from rich.table import Table

    zygote = statistics.median(times["zygote"])
    table = Table(box=box.SIMPLE_HEAD, title=f"One child start to its first answer "
                  f"({count} starts each, interleaved)")
    for header in ("child start", "median ms", "min ms", "× kit zygote"):
        table.add_column(header, justify="left" if header == "child start" else "right")
    for kind, label in STARTS.items():
        median = statistics.median(times[kind])
        table.add_row(label, f"{median * 1000:.1f}", f"{min(times[kind]) * 1000:.1f}",
                      f"{median / zygote:.1f}×")
    return table


def report_starts(console, args):
    from rich.console import Console

    if shutil.which("bwrap") is None:
        console.print("[yellow]--bwrap: bwrap is not on PATH (Debian package bubblewrap): "
                      "child starts not measured[/]")
        return 0
    Console(stderr=True).print(f"timing child starts ({args.starts} of each kind)")
    try:
        times = measure_starts(args)
    except RuntimeError as error:
        console.print(f"[bold red]CHILD STARTS FAILED: {error}[/]")
        return 1
    console.print(starts_table(times, args.starts))
    console.print("(the kit's start is ChildProcess(Limits()) and one round trip, its close "
                  "not counted; in grading a spare child is started while the previous "
                  "submission is graded)")
    return 0


# ------------------------------------------------------------ main

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=12, metavar="N",
                        help="submissions to grade per mode, cycling the samples (default 12)")
    parser.add_argument("--seed", type=int, default=1, help="grading seed (default 1)")
    parser.add_argument("--uid-python", metavar="PYTHON",
                        help="a Python outside /root, with numpy and nbformat, for mode uid")
    parser.add_argument("--bwrap", action="store_true",
                        help="also time child starts: bubblewrap against the kit's zygote")
    parser.add_argument("--starts", type=int, default=20, metavar="M",
                        help="child starts per kind with --bwrap (default 20)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # internal: one mode
    parser.add_argument("--starts-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.submissions < 1 or args.starts < 1:
        parser.error("--submissions and --starts must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.mode:
        serve_mode(args.mode, args.submissions, args.seed)
        return 0
    if args.starts_only:
        print(json.dumps(run_starts(args.starts)))
        return 0
    from rich.console import Console

    # rich assumes 80 columns when piped; the tables and layers are wider than that.
    console = Console() if Console().is_terminal else Console(width=130)
    reports = measure(args)
    status = report(console, reports, args)
    if args.bwrap:
        status = max(status, report_starts(console, args))
    return status


if __name__ == "__main__":
    sys.exit(main())
