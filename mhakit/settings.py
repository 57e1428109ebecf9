"""Every MHAKIT_* variable that the kit's Python reads, in one object.

The settings live in the environment so that every process of a run sees the same ones:
nbgrader's, the grading workers (started afresh, see integrations/batch.py), a Gradescope
container. ``settings()`` reads them when asked, since a door sets some for the workers it
starts (``pass_on``) and tests change them while a process runs. A value of the wrong
form is one line of ValueError that names the variable.

(The Gradescope scripts read MHAKIT_AUTOGRADER_ROOT, MHAKIT_PYTHON, MHAKIT_BASE_PYTHON and
MHAKIT_SETUP_SKIP_APT in shell; the story's plots read MHAKIT_PLOTS_NO_CJK on the student's
side, where this module is not shipped.)
"""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    exercise: str | None = None          # MHAKIT_EXERCISE: the exercises' folders (os.pathsep)
    sandbox: str | None = None           # MHAKIT_SANDBOX: try this confinement mode only
    hide: tuple = ()                     # MHAKIT_HIDE: more folders no child may read
    landlock: bool = True                # MHAKIT_LANDLOCK=0 leaves Landlock out
    cgroups: bool = True                 # MHAKIT_CGROUP=0 turns cgroups off
    zygote: bool = True                  # MHAKIT_ZYGOTE=0 starts every child afresh
    allow_unconfined: bool = False       # MHAKIT_ALLOW_UNCONFINED=1 accepts plain mode
    warned: bool = False                 # MHAKIT_WARNED=1: this run said so already
    call_seconds: float | None = None    # MHAKIT_CALL_SECONDS: shorter limits, for tests
    cell_seconds: float | None = None    # MHAKIT_CELL_SECONDS
    submission_seconds: float | None = None  # MHAKIT_SUBMISSION_SECONDS
    memory_mb: int | None = None         # MHAKIT_MEMORY_MB
    submission: str | None = None        # MHAKIT_SUBMISSION: the notebook pytest checks
    seed: int | None = None              # MHAKIT_SEED: that check's seed


def _number(environ, name, kind):
    text = environ.get(name)
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a {'whole ' if kind is int else ''}number"
                         ) from None
    if value != value or value < 0 or value == float("inf"):
        raise ValueError(f"{name}={text!r} is not a number of the kind it needs")
    return value


def settings(environ=None):
    """The settings as the environment (``os.environ`` unless given) holds them now."""
    env = os.environ if environ is None else environ
    return Settings(
        exercise=exercise_folder(env),
        sandbox=env.get("MHAKIT_SANDBOX") or None,
        hide=tuple(p for p in env.get("MHAKIT_HIDE", "").split(os.pathsep) if p),
        landlock=env.get("MHAKIT_LANDLOCK") != "0",
        cgroups=env.get("MHAKIT_CGROUP") != "0",
        zygote=env.get("MHAKIT_ZYGOTE") != "0",
        allow_unconfined=env.get("MHAKIT_ALLOW_UNCONFINED") == "1",
        warned=env.get("MHAKIT_WARNED") == "1",
        call_seconds=_number(env, "MHAKIT_CALL_SECONDS", float),
        cell_seconds=_number(env, "MHAKIT_CELL_SECONDS", float),
        submission_seconds=_number(env, "MHAKIT_SUBMISSION_SECONDS", float),
        memory_mb=_number(env, "MHAKIT_MEMORY_MB", int),
        submission=env.get("MHAKIT_SUBMISSION") or None,
        seed=_number(env, "MHAKIT_SEED", int),
    )


def exercise_folder(environ=None):
    """MHAKIT_EXERCISE alone. ``exercise.current()`` asks for it for every line of every
    result's feedback (about 80 per notebook): reading all the settings each time, 13 µs
    against this one's 0.7 µs, cost a class of 1000 about 1 s of the main process's CPU."""
    env = os.environ if environ is None else environ
    return env.get("MHAKIT_EXERCISE") or None


# What pass_on may set, and how each value is written.
_PASSED_ON = {"exercise": ("MHAKIT_EXERCISE", str),
              "allow_unconfined": ("MHAKIT_ALLOW_UNCONFINED", lambda on: "1" if on else "0"),
              "warned": ("MHAKIT_WARNED", lambda on: "1" if on else "0")}


def pass_on(**values):
    """Set these settings for this process and every process it starts from now on (the
    grading workers, nbgrader's subprocesses)."""
    for field, value in values.items():
        name, written = _PASSED_ON[field]
        os.environ[name] = written(value)


def passed_on() -> dict[str, str | None]:
    """What ``pass_on`` may set, as this process's environment holds it now: for a process
    started before it was set (the grading workers come from a forkserver that a run
    starts early), which takes it with ``take_on``."""
    return {name: os.environ.get(name) for name, _ in _PASSED_ON.values()}


def take_on(values: dict[str, str | None]) -> None:
    """Make ``passed_on()`` of another process this one's own."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
