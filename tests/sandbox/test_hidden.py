"""mhakit/sandbox/hidden.py: what a child must never read, as the sandbox is told it
and as it finds it itself, and how a grant or a cover leaves it out."""

import shutil
from pathlib import Path

import pytest

from mhakit import exercise
from mhakit.sandbox import hidden, probe


@pytest.fixture
def told(monkeypatch):
    """A sandbox told nothing yet; whatever a test tells it is forgotten after."""
    monkeypatch.setattr(hidden, "_TOLD", {"paths": [], "sentinels": []})
    monkeypatch.delenv("MHAKIT_HIDE", raising=False)


def test_what_it_is_told_is_hidden_and_its_sentinels_are_probed(told, tmp_path):
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "answers.py").write_text("x = 1\n")
    assert tmp_path / "secret" not in hidden.course_paths()
    hidden.hide(tmp_path / "secret", sentinels=[tmp_path / "secret" / "answers.py"])
    hidden.hide(tmp_path / "secret")  # told twice, counted once
    assert hidden.course_paths().count(tmp_path / "secret") == 1
    targets = probe.probe_targets()
    assert str(tmp_path / "secret" / "answers.py") in targets["read"]
    assert str(tmp_path / "secret") in targets["list"] and str(tmp_path / "secret") in targets["write"]


def test_the_kit_itself_is_hidden_and_probed_without_being_told(told):
    kit = Path(hidden.__file__).resolve().parents[1]
    assert kit in hidden.course_paths()
    assert str(Path(hidden.__file__).resolve()) in probe.probe_targets()["read"]


def test_an_exercise_that_loads_tells_the_sandbox_its_folder_and_reference(told, tmp_path):
    folder = tmp_path / "mha"
    shutil.copytree(exercise.BUILT_IN / "mha", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    loaded = exercise.load(folder)
    assert folder in hidden.course_paths() and loaded.hidden_paths()[0] == folder
    assert set(loaded.hidden_paths()) <= set(hidden.course_paths())
    assert loaded.reference_file.resolve() in hidden.sentinels()


def test_a_grant_leaves_out_every_hidden_path_and_keeps_the_rest(tmp_path):
    for name in ("numpy/core.py", "kit/grading.py", "kit.dist-info/RECORD", "six.py",
                 "deep/a/secret.txt", "deep/a/b.txt", "deep/c.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    grants = hidden.without([tmp_path], [tmp_path / "kit", tmp_path / "deep/a/secret.txt"])
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in grants["read"]) == [
        "deep/a/b.txt", "deep/c.txt", "kit.dist-info", "numpy", "six.py"]
    # The folders split to leave the hidden ones out may only be listed.
    assert grants["list"] == [str(tmp_path), str(tmp_path / "deep"), str(tmp_path / "deep/a")]
    # A root inside a hidden folder (numpy in a venv inside the course) is granted alone.
    assert hidden.without([tmp_path / "numpy"], [tmp_path]) == {
        "read": [str(tmp_path / "numpy")], "list": []}


def test_only_hidden_paths_that_a_bind_would_show_are_covered():
    binds = [("/usr", "/usr"), ("/opt/py", "/opt/py")]
    assert hidden.covered(binds, [Path("/usr/lib/kit"), Path("/home/course"),
                                  Path("/opt/python")]) == ["/usr/lib/kit"]
