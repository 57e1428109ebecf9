"""The kernel oracle: what a notebook earns when it really runs in a Jupyter kernel.

test_kernel_oracle.py runs a student's notebook in an IPython kernel, as nbgrader's own
``Execute`` does, and then runs this file in that same kernel (``runpy.run_path``, so
that nothing of it lands in the student's namespace):

    report(get_ipython().user_ns, seed)

It runs the kit's own checks, public and hidden (``ordered_checks``, the very objects the
grader plans and replays), in this process, against the functions the kernel holds, with
the grader's seed, and prints one line: the marker and, as JSON, the points of each part,
the checks that cost points, and the self-check's verdict as the student's ``check()``
gives it in this kernel.

The grading rule is that a mistake costs only its own function's points. So while a
function is checked with stand-ins (``stand_ins=True``), the other contract functions
that the reference itself calls on those inputs (the grader's own list of stand-ins,
found by tracing the reference as the grader's planner does) are the reference's, in
the kernel's namespace, for that call only; then the student's come back. Here a piece
is the reference on whatever arguments the student's code gives it: the meaning of the
rule, which the isolated grader has to reach with recorded answers alone.

This file runs inside the student's kernel; it imports only the kit (installed in the
kernel's environment) and the standard library.
"""

import importlib
import json

from mhakit.selfcheck.framework import InProcessStudent

MARKER = "MHAKIT-KERNEL-ORACLE "
_MISSING = object()


def report(namespace, seed):
    """Print the marker and the oracle's findings as one line of JSON."""
    print(MARKER + json.dumps(oracle(namespace, seed)), flush=True)


def oracle(namespace, seed):
    from mhakit.exercise import current
    from mhakit.grader.grading import ordered_checks, seeded
    from mhakit.selfcheck.runner import PASSED, run_check

    exercise = current()
    rng_for = seeded(seed)
    student = KernelStudent(namespace, exercise.reference)
    parts = dict.fromkeys(exercise.parts, 0.0)
    lost = {}
    for chk in ordered_checks(exercise):
        result = run_check(chk, student, rng_for(chk))
        parts[chk.function] += result.score
        if chk.points and result.status != PASSED:
            lost.setdefault(chk.function, []).append(
                f"{chk.name} [{result.status}]: {result.message[:300]}")
    green, rows = self_check(namespace)
    return {"parts": parts, "lost": lost, "green": green, "rows": rows}


def self_check(namespace):
    """(green, rows): the self-check of the release beside the notebook, run on this
    kernel's functions, as the notebook's ``check()`` runs it: the functions' rows, then
    the imports row when a function uses a package that grading does not offer."""
    runner = importlib.import_module("mhakit_student.runner")
    framework = importlib.import_module("mhakit_student.framework")
    rows = runner.summarize(runner.public_results(framework.InProcessStudent(namespace)))
    green = all(status == (runner.ANSWERED if part == runner.QUIZ else runner.PASSED)
                for part, status, _ in rows)
    imports = runner.kernel_imports_row(namespace)
    rows = list(rows) + list(imports)
    return green and not imports, [[part, status, detail[:300]] for part, status, detail in rows]


class KernelStudent(InProcessStudent):
    """The self-check's in-process handle on the kernel's namespace, which also knows
    stand-ins: the reference's pieces in place of the student's, for one call."""

    def __init__(self, namespace, reference):
        super().__init__(namespace)
        self.reference = reference

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        pieces = self.pieces(name, args, kwargs) if stand_ins else []
        saved = {piece: self.namespace.get(piece, _MISSING) for piece in pieces}
        self.namespace.update({piece: self.reference[piece] for piece in pieces})
        try:
            return super().call(name, *args, readonly=readonly, **kwargs)
        finally:
            for piece, value in saved.items():
                if value is _MISSING:
                    self.namespace.pop(piece, None)
                else:
                    self.namespace[piece] = value

    def pieces(self, name, args, kwargs):
        """The contract functions the reference calls when it computes this call: the
        names the grader makes stand-ins of (sandbox/student.py's stand_in_names)."""
        from mhakit.grader.planning import PlanningStudent
        from mhakit.sandbox.student import stand_in_names

        planner = PlanningStudent(self.reference)
        try:
            planner.call(name, *args, stand_ins=True, **kwargs)
        except Exception:  # noqa: BLE001 - the calls traced before it raised still count
            pass
        return stand_in_names(planner.calls[-1])
