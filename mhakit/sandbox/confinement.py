"""Which mode confines grading children on this machine, chosen once by probing. The
grader's side: trusted.

Modes, strongest first (plan.MODES; each layer is a file of its own in child/layers/):

- "jail": root with namespaces. New mount, PID, network, IPC and UTS namespaces, a root of
  the child's own that shows only /usr, Python and numpy, an unprivileged uid of its own.
- "userns": the same jail built by an ordinary user inside a user namespace, keeping the
  user's uid but no capabilities. (Ubuntu 24.04 and later restrict these through AppArmor.)
- "uid": root that cannot make namespaces (a container): an unprivileged uid and gid of
  its own, no supplementary groups.
- "landlock": Landlock alone, for an ordinary user without user namespaces, or for root
  whose Python an unprivileged uid cannot read (root then keeps its uid, without any
  capability).

Landlock is added to every mode where the kernel has it. Where the child keeps the
grader's uid (userns, landlock), seccomp refuses what Landlock leaves to that uid; where
it has no network namespace (uid, landlock) it makes no socket. Its scratch is bounded in
every mode (scratch.py); without Landlock the uid mode could write to /tmp, and is
refused. A mode counts only if a probe child, confined as a submission would be, reaches
nothing of the course (probe.py). When no mode passes, grading refuses (``Unconfined``)
unless the risk is accepted with ``MHAKIT_ALLOW_UNCONFINED=1`` (``mhakit grade
--allow-unconfined``); then the "plain" mode runs student code as the grader's own user,
and every result says so. On systems other than Linux, where the kit has no layer, plain
mode runs with a warning.

``MHAKIT_SANDBOX=<mode>`` tries that one mode only ("plain" included);
``MHAKIT_LANDLOCK=0`` leaves Landlock out; ``MHAKIT_HIDE`` names more folders to hide.
"""

import logging
import os
import sys
from dataclasses import dataclass, field

from ..settings import pass_on, settings
from .limits import Limits
from .plan import MODES
from .probe import probe

LOG = logging.getLogger(__name__)


class Unconfined(RuntimeError):
    """No layer here hides the course from student code, and the risk was not accepted."""


@dataclass(frozen=True)
class Choice:
    """What one process learned by probing: the mode its children run in (None: none
    confines), what each mode's probe child could still do (``probed``: {mode: facts}),
    and why stronger modes were not built (``problems``). A class run probes once, in its
    main process, and hands this to its grading workers (adopt), which run on the same
    machine as the same user."""
    mode: str | None
    probed: dict = field(default_factory=dict)
    problems: tuple = ()


class _Chosen:
    """This process's Choice, made once: the one place that holds it."""
    choice: Choice | None = None


def candidates() -> list[str]:
    forced = settings().sandbox
    if forced:
        return [forced] if forced in MODES else []
    if sys.platform != "linux":
        return []
    return ["jail", "userns", "uid", "landlock"] if os.geteuid() == 0 else ["userns", "landlock"]


def choice(limits: Limits) -> Choice:
    """This process's Choice, probing first if it has not."""
    if _Chosen.choice is None:
        _Chosen.choice = first_that_confines(limits)
    return _Chosen.choice


def adopt(taken: Choice | None) -> None:
    """Take another process's Choice instead of probing (a grading worker's start); None
    forgets this process's own, so that the next child probes again (for tests)."""
    _Chosen.choice = taken


def chosen_mode(limits: Limits) -> str:
    """The strongest mode whose probe child could not reach the course, once per process.
    Raises Unconfined when none could and the risk was not accepted."""
    taken = choice(limits)
    if taken.mode is not None:
        return taken.mode
    if sys.platform == "linux" and not settings().allow_unconfined:
        raise Unconfined(unconfined_message(taken))
    if not settings().warned:  # once per run: the workers are told
        pass_on(warned=True)
        LOG.warning(unconfined_message(taken, accepted=True))
    return "plain"


def first_that_confines(limits: Limits, modes: list[str] | None = None) -> Choice:
    """A Choice: the strongest of ``modes`` (by default the candidates) whose probe child
    reached nothing. Each mode tried is explained at INFO level (``mhakit --verbose``)."""
    tried = [mode for mode in (modes or candidates()) if mode != "plain"]
    forced = " (as MHAKIT_SANDBOX asks)" if settings().sandbox else ""
    LOG.info("confinement: trying %s, strongest first%s", ", ".join(tried) or "no mode", forced)
    problems: list[str] = []
    for mode in tried:
        probed = probe(mode, limits)
        problems += probed.problems
        if probed.ok:
            refused = probed.facts.get("tried") or []
            LOG.info("confinement: %s: its probe child reached nothing of the course%s; "
                     "every child of this process runs in it", mode,
                     f" (and was refused {', '.join(refused)})" if refused else "")
            return Choice(mode, {mode: probed.facts}, tuple(problems))
        LOG.info("confinement: %s: not used: %s", mode,
                 "; ".join(probed.problems) or "its probe failed")
    return Choice(None, {}, tuple(problems))


def unconfined_message(taken: Choice, accepted: bool = False) -> str:
    why = "; ".join(dict.fromkeys(taken.problems)) or (
        "MHAKIT_SANDBOX=plain asks for none" if settings().sandbox == "plain"
        else "the kit has no confinement on this system" if sys.platform != "linux"
        else "no mode was tried")
    if accepted:
        return (f"grading unconfined, student code can read the course ({why}); "
                "every result is flagged for review")
    return (f"no layer here can hide the course from student code ({why}); refusing to "
            "grade. Rerun with --allow-unconfined (nbgrader: c.BoundedNotebookReader."
            "allow_unconfined = True in "
            "nbgrader_config.py) to accept the risk; every result is then flagged for review")


def refusal(allow_unconfined: bool = False, limits: Limits | None = None) -> str | None:
    """Why grading must not start here (nothing can hide the course from student code),
    or None. For the doors to ask once, before the first notebook; accepting the risk is
    passed on to worker processes through the environment."""
    if allow_unconfined:
        pass_on(allow_unconfined=True)
    try:
        chosen_mode(limits or Limits())
    except Unconfined as refused:
        return str(refused)
    return None


def confined(limits: Limits) -> bool:
    """Is the child confined here (any mode but plain)? For tests and benchmarks."""
    try:
        return chosen_mode(limits) != "plain"
    except Unconfined:
        return False


def jail_works(limits: Limits) -> bool:
    """Is the strongest mode, root's jail, in force here?"""
    return confined(limits) and chosen_mode(limits) == "jail"
