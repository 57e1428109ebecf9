"""One odd submission never stops the class: `mhakit grade` with and without --gradebook,
on a class where honest students sit next to hostile files, names and folders."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.attacks.corpus import Attack
from tests.attacks.on_the_class import _forty_megabytes_of_braces, _nested_metadata

MHAKIT = [sys.executable, "-m", "autograder.integrations.cli", "grade"]
HONEST = ("ann", "ben", "cleo")
NOT_UTF8 = b"frank\xff"   # a folder name that is not UTF-8
SHOWN = "frank\\xff"      # how the kit shows it


def _list_metadata(notebook):
    notebook["cells"][3]["metadata"] = []
    return notebook


HOSTILE = {  # student folder -> (notebook file name -> bytes)
    "eve_surrogate_in_an_error": {"mha.ipynb": Attack("s", edits={"answer_softmax": (
        "def softmax(x, axis=-1):\n    raise ValueError('a lone \\ud800 surrogate')\n")}).make()},
    "gina_two_notebooks": {"mha.ipynb": Attack("honest").make(),
                           "mha-Copy1.ipynb": b"not even json"},
    "hank_nested_700_deep": {"mha.ipynb": Attack("deep", notebook=_nested_metadata(700)).make()},
    "ivy_list_metadata": {"mha.ipynb": Attack("list", notebook=_list_metadata).make()},
    "jack_forty_megabytes": {"mha.ipynb": _forty_megabytes_of_braces()},
    "[red]kim[bold]": {"mha.ipynb": Attack("honest").make()},  # rich markup in a name
    "report.md": {"mha.ipynb": Attack("honest").make()},       # a file the batch writes
}


def mhakit(*args, cwd):
    return subprocess.run(MHAKIT + list(args), cwd=cwd, capture_output=True, timeout=900)


def folder_of(submitted, name):
    raw = os.fsencode(str(submitted)) + b"/" + (name if isinstance(name, bytes) else
                                               name.encode()) + b"/mha"
    return Path(os.fsdecode(raw))


@pytest.fixture
def odd_class(course, tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "source", "assignments", "gradebook.db"):
        source = course / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, root / name)
    submitted = root / "submitted"
    honest = Attack("honest").make()
    students = {name: {"mha.ipynb": honest} for name in HONEST}
    students.update(HOSTILE)
    students[NOT_UTF8] = {"mha.ipynb": honest}
    for name, files in students.items():
        folder = folder_of(submitted, name)
        folder.mkdir(parents=True)
        for file_name, data in files.items():
            (folder / file_name).write_bytes(data)
    return root


def read_grades(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def check_the_class(out, grades):
    assert set(grades) == set(HONEST) | set(HOSTILE) - {"report.md"} | {SHOWN, "report.md~2"}
    for student in HONEST + (SHOWN, "gina_two_notebooks", "ivy_list_metadata",
                             "[red]kim[bold]", "report.md~2"):
        assert grades[student]["total"] == "100", grades[student]
        assert grades[student]["status"].startswith("graded"), grades[student]
    eve = grades["eve_surrogate_in_an_error"]
    assert eve["total"] == "88" and eve["softmax"] == "0"
    assert "mha-Copy1.ipynb" in grades["gina_two_notebooks"]["status"]
    assert "not UTF-8" in grades[SHOWN]["status"]
    hank, jack = grades["hank_nested_700_deep"], grades["jack_forty_megabytes"]
    assert hank["total"] == "0" and hank["status"].startswith("unreadable: ")
    assert "705 levels deep" in hank["status"]  # 700 and the notebook's own 5
    assert jack["total"] == "0" and "40 MB" in jack["status"] and "20 MB" in jack["status"]
    for student in grades:
        assert "\n" not in grades[student]["status"]
        result = json.loads((out / student / "results.json").read_bytes().decode("utf-8"))
        assert result["extra_data"]["status"] == grades[student]["status"].split(":")[0].split(
            ";")[0]
        for name in ("feedback.md", "feedback.html"):
            (out / student / name).read_bytes().decode("utf-8")  # valid UTF-8, written
    gina = json.loads((out / "gina_two_notebooks" / "results.json").read_text("utf-8"))
    assert any("mha-Copy1.ipynb" in note for note in gina["extra_data"]["batch_notes"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"Class report: {len(grades)} submissions" in report
    for student in ("hank_nested_700_deep", "jack_forty_megabytes", "gina_two_notebooks", SHOWN):
        line = next(line for line in report.splitlines() if line.startswith(f"| {student} |"))
        assert "graded" in line or "unreadable" in line


def test_mhakit_grade_grades_everyone_and_reports_the_odd_ones(odd_class):
    done = mhakit("submitted", "--out", "out", "--seed", "3", "--quiet", cwd=odd_class)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    out = odd_class / "out"
    check_the_class(out, read_grades(out))
    # The table on the terminal holds every student, the odd names as they are.
    shown = mhakit("submitted", "--out", "out", "--seed", "3", cwd=odd_class)
    assert shown.returncode == 0, shown.stderr.decode(errors="replace")[-3000:]
    assert b"[red]kim" in shown.stdout and SHOWN.encode() in shown.stdout


def test_a_rerun_regrades_whatever_results_json_it_finds_broken(odd_class):
    out = odd_class / "out"
    assert mhakit("submitted", "--out", "out", "--seed", "3", "--quiet",
                  cwd=odd_class).returncode == 0
    planted = {"ann": b"{\"score\": ", "ben": json.dumps({"extra_data": []}).encode(),
               "cleo": b"[" * 5000 + b"]" * 5000,
               "ivy_list_metadata": b"\xff\xfe not utf-8"}
    kept = json.loads((out / "gina_two_notebooks" / "results.json").read_text("utf-8"))
    hostile = dict(kept, score=1e309, tests="none")  # the right hash, the wrong shape
    planted["[red]kim[bold]"] = json.dumps(hostile).encode()
    for student, data in planted.items():
        (out / student / "results.json").write_bytes(data)
    done = mhakit("submitted", "--out", "out", "--seed", "3", "--quiet", cwd=odd_class)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    check_the_class(out, read_grades(out))
    for student in planted:
        assert json.loads((out / student / "results.json").read_text("utf-8"))["score"] == 100


def test_with_a_gradebook_everyone_it_can_hold_is_in_it(odd_class):
    from nbgrader.api import Gradebook, MissingEntry

    for attempt in range(2):  # and a rerun, over the first run's results, does not abort
        done = mhakit("submitted", "--out", "out", "--seed", "3", "--quiet", "--gradebook",
                      ".", cwd=odd_class)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        grades = read_grades(odd_class / "out")
        check_the_class(odd_class / "out", grades)
        assert "not in the gradebook" in grades[SHOWN]["status"]
        with Gradebook(f"sqlite:///{odd_class / 'gradebook.db'}") as gradebook:
            for student in HONEST + ("gina_two_notebooks", "ivy_list_metadata",
                                     "[red]kim[bold]", "report.md"):
                submission = gradebook.find_submission("mha", student)
                code = sum(g.auto_score or 0 for nb in submission.notebooks
                           for g in nb.grades if g.name.startswith("test_"))
                assert code == 100, (student, code)
            for student, words in (("hank_nested_700_deep", "levels deep"),
                                   ("jack_forty_megabytes", "20 MB")):
                submission = gradebook.find_submission("mha", student)
                comments = [c.auto_comment or "" for nb in submission.notebooks
                            for c in nb.comments]
                assert comments and all(c.startswith("mha-kit: unreadable: ") and words in c
                                        for c in comments), comments
                assert all(g.needs_manual_grade for nb in submission.notebooks
                           for g in nb.grades)
            with pytest.raises(MissingEntry):
                gradebook.find_submission("mha", SHOWN)


def seeds(out):
    return {path.parent.name: json.loads(path.read_text("utf-8"))["extra_data"]["seed"]
            for path in out.glob("*/results.json")}


def test_a_resumed_run_keeps_the_seed_of_the_results_it_kept(course, tmp_path):
    out = tmp_path / "out"
    submitted = str(course / "submitted")
    assert mhakit(submitted, "--out", str(out), "--quiet", cwd=tmp_path).returncode == 0
    first = seeds(out)
    assert len(first) == 4 and len(set(first.values())) == 1
    for student in ("bob_partly_correct", "dave_tries_to_cheat"):  # a run stopped halfway
        (out / student / "results.json").unlink()
    resumed = mhakit(submitted, "--out", str(out), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert b"2 earlier results still hold, 2 to grade" in resumed.stderr
    assert seeds(out) == first  # one seed for the class, not a second one
    fresh = mhakit(submitted, "--out", str(out), "--quiet", "--fresh", cwd=tmp_path)
    assert fresh.returncode == 0
    again = seeds(out)
    assert len(set(again.values())) == 1 and set(again.values()) != set(first.values())
    chosen = mhakit(submitted, "--out", str(out), "--quiet", "--seed", "12", cwd=tmp_path)
    assert chosen.returncode == 0 and set(seeds(out).values()) == {12}
