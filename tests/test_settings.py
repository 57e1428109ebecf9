"""mhakit/settings.py: every MHAKIT_* variable the kit's Python reads, in one object."""

import os
import re
from pathlib import Path

import pytest

from mhakit.settings import Settings, exercise_folder, pass_on, passed_on, settings, take_on

KIT = Path(__file__).resolve().parent.parent / "mhakit"


def test_an_empty_environment_gives_the_defaults():
    assert settings({}) == Settings()
    assert settings({}).landlock and settings({}).zygote and not settings({}).allow_unconfined


def test_each_variable_reads_into_its_field():
    given = settings({"MHAKIT_EXERCISE": "/x/ex", "MHAKIT_SANDBOX": "userns",
                      "MHAKIT_HIDE": os.pathsep.join(["/a", "", "/b"]), "MHAKIT_LANDLOCK": "0",
                      "MHAKIT_CGROUP": "0", "MHAKIT_ZYGOTE": "0", "MHAKIT_ALLOW_UNCONFINED": "1",
                      "MHAKIT_WARNED": "1", "MHAKIT_CALL_SECONDS": "1.5",
                      "MHAKIT_CELL_SECONDS": "2", "MHAKIT_SUBMISSION_SECONDS": "30",
                      "MHAKIT_MEMORY_MB": "512", "MHAKIT_SUBMISSION": "nb.ipynb",
                      "MHAKIT_SEED": "7"})
    assert given == Settings(exercise="/x/ex", sandbox="userns", hide=("/a", "/b"),
                             landlock=False, cgroups=False, zygote=False,
                             allow_unconfined=True, warned=True, call_seconds=1.5,
                             cell_seconds=2.0, submission_seconds=30.0, memory_mb=512,
                             submission="nb.ipynb", seed=7)


@pytest.mark.parametrize("environ, folder", [({}, None), ({"MHAKIT_EXERCISE": ""}, None),
                                             ({"MHAKIT_EXERCISE": "/x/ex"}, "/x/ex")])
def test_the_exercise_alone_reads_as_the_settings_read_it(environ, folder):
    # exercise.current() reads only this one, for speed: unset and empty mean the kit's.
    assert exercise_folder(environ) == folder == settings(environ).exercise


@pytest.mark.parametrize("name, value", [("MHAKIT_CALL_SECONDS", "soon"),
                                         ("MHAKIT_MEMORY_MB", "1.5"), ("MHAKIT_SEED", "-3"),
                                         ("MHAKIT_SUBMISSION_SECONDS", "nan")])
def test_a_value_of_the_wrong_form_is_one_line_that_names_its_variable(name, value):
    with pytest.raises(ValueError, match=f"^{name}=") as raised:
        settings({name: value})
    assert "\n" not in str(raised.value)


def test_pass_on_sets_what_the_next_process_reads(monkeypatch):
    for name in ("MHAKIT_EXERCISE", "MHAKIT_ALLOW_UNCONFINED", "MHAKIT_WARNED"):
        monkeypatch.setenv(name, "")  # read as unset; and put back as it was after the test
    pass_on(exercise="/x/ex", allow_unconfined=True, warned=True)
    assert os.environ["MHAKIT_ALLOW_UNCONFINED"] == "1" and os.environ["MHAKIT_WARNED"] == "1"
    assert settings() == Settings(exercise="/x/ex", allow_unconfined=True, warned=True)


def test_what_one_process_passes_on_another_takes_on_whole(monkeypatch):
    """A worker forked from a process that predates the run's pass_on takes the run's
    values, and loses one the run does not have."""
    monkeypatch.setenv("MHAKIT_WARNED", "")
    monkeypatch.delenv("MHAKIT_ALLOW_UNCONFINED", raising=False)
    pass_on(warned=True)
    run = passed_on()
    assert run["MHAKIT_WARNED"] == "1" and run["MHAKIT_ALLOW_UNCONFINED"] is None
    monkeypatch.setenv("MHAKIT_WARNED", "0")
    monkeypatch.setenv("MHAKIT_ALLOW_UNCONFINED", "1")  # the older process's own
    take_on(run)
    assert os.environ["MHAKIT_WARNED"] == "1" and "MHAKIT_ALLOW_UNCONFINED" not in os.environ


def test_no_other_module_reads_an_mhakit_variable_itself():
    """Only the story's plots, which ship to students without this module, read one."""
    reading = re.compile(r"(environ(\.get)?\s*[\[(]|getenv\()\s*[\"']MHAKIT_")
    readers = sorted(str(path.relative_to(KIT)) for path in KIT.rglob("*.py")
                     if reading.search(path.read_text(encoding="utf-8")))
    assert readers == ["exercises/mha/shipped/plots.py"]
