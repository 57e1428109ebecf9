"""mhakit demo: release, self-check, grade the bundled class, print the grade table."""

import pytest

from mhakit.integrations.cli import main
from mhakit.integrations.demo import unusable_keep
from tests.integrations.test_cli import assert_one_line_error, mhakit


@pytest.mark.slow
def test_the_demo_runs_end_to_end():
    done = mhakit("demo", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "9 of 9 parts pass." in done.stdout and "0 of 9 parts pass." in done.stdout
    alice = next(line for line in lines if "alice_correct" in line)
    carol = next(line for line in lines if "carol_unimplemented" in line)
    assert alice.split()[1] == "100" and carol.split()[1] == "0"


@pytest.mark.parametrize("holds", ["a course", "a file"])
def test_keep_refuses_a_folder_that_holds_anything(holds, tmp_path, capsys):
    if holds == "a course":
        keep = tmp_path / "course"
        (keep / "submitted" / "alice").mkdir(parents=True)
        (keep / "grades.csv").write_text("student,total\nalice,97\n", encoding="utf-8")
    else:
        keep = tmp_path / "notes.txt"
        keep.write_text("not a folder", encoding="utf-8")
    before = {path: path.read_bytes() if path.is_file() else None for path in tmp_path.rglob("*")}
    assert main(["demo", "--keep", str(keep)]) == 2
    assert_one_line_error(capsys.readouterr().err, "demo")
    assert {path: path.read_bytes() if path.is_file() else None
            for path in tmp_path.rglob("*")} == before


def test_keep_takes_a_new_or_an_empty_folder(tmp_path):
    assert unusable_keep(tmp_path / "new" / "course") is None
    assert unusable_keep(tmp_path) is None
