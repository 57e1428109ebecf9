"""mhakit grade and mhakit demo, as an instructor runs them."""

import csv
import json
import subprocess
import sys

import pytest

from autograder.integrations.batch import csv_columns

CSV_COLUMNS = csv_columns()

MHAKIT = [sys.executable, "-m", "autograder.integrations.cli"]


def mhakit(*args, cwd=None):
    return subprocess.run(MHAKIT + list(args), capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_one_notebook_prints_a_results_json(course):
    notebook = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    done = mhakit("grade", str(notebook), "--seed", "5")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # stdout carries the result and nothing else
    assert result["score"] == 100
    assert result["extra_data"]["seed"] == 5
    assert all(t["name"].split(":")[0] in CSV_COLUMNS for t in result["tests"])


def test_a_folder_writes_results_and_grades_csv(course, tmp_path):
    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "5",
                  "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    students = {"alice_correct", "bob_partly_correct", "carol_unimplemented",
                "dave_tries_to_cheat"}
    assert set(printed) == students
    for student in students:
        saved = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert saved["score"] == printed[student]["score"]
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert list(rows["alice_correct"]) == list(CSV_COLUMNS)
    assert rows["alice_correct"]["total"] == "100"
    assert rows["carol_unimplemented"]["total"] == "0"
    assert float(rows["bob_partly_correct"]["total"]) == printed["bob_partly_correct"]["score"]
    assert rows["dave_tries_to_cheat"]["softmax"] == "0"


def test_a_flat_folder_of_notebooks_works(course, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    for student in ("alice_correct", "carol_unimplemented"):
        source = course / "submitted" / student / "mha" / "mha.ipynb"
        (flat / f"{student}.ipynb").write_bytes(source.read_bytes())
    done = mhakit("grade", str(flat), "--out", str(tmp_path / "out"), "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    assert {k: v["score"] for k, v in json.loads(done.stdout).items()} == {
        "alice_correct": 100, "carol_unimplemented": 0}


def test_a_file_that_is_not_a_notebook_gets_zero_and_a_reason(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("this is not json", encoding="utf-8")
    done = mhakit("grade", str(bad))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["score"] == 0
    assert result["extra_data"]["status"] == "unreadable"


@pytest.mark.parametrize("args", [["grade", "no/such/path"], ["grade", "."], ["build",
                                                                               "--course", "/"]])
def test_bad_input_gives_a_clear_error_and_exit_2(args, tmp_path):
    done = mhakit(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("mhakit ")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_demo_runs_end_to_end():
    done = mhakit("demo", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "9 of 9 parts pass." in done.stdout and "0 of 9 parts pass." in done.stdout
    alice = next(line for line in lines if "alice_correct" in line)
    carol = next(line for line in lines if "carol_unimplemented" in line)
    assert alice.split()[1] == "100" and carol.split()[1] == "0"


def test_a_resumed_run_keeps_what_holds_and_matches_an_uninterrupted_one(course, tmp_path):
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    submitted = course / "submitted"
    assert mhakit("grade", str(submitted), "--out", str(whole), "--seed", "4",
                  "--quiet").returncode == 0
    # A run stopped after two students: their results are on disk, the rest are not.
    for student in ("alice_correct", "carol_unimplemented"):
        (resumed / student).mkdir(parents=True)
        kept = json.loads((whole / student / "results.json").read_text(encoding="utf-8"))
        kept["extra_data"]["kept_from_the_first_run"] = True
        (resumed / student / "results.json").write_text(json.dumps(kept), encoding="utf-8")
    done = mhakit("grade", str(submitted), "--out", str(resumed), "--seed", "4", "--json")
    assert done.returncode == 0, done.stderr
    assert "2 earlier results still hold, 2 to grade" in done.stderr
    again = json.loads(done.stdout)
    assert again["alice_correct"]["extra_data"].get("kept_from_the_first_run")
    assert not again["bob_partly_correct"]["extra_data"].get("kept_from_the_first_run")
    for student, result in again.items():
        first = json.loads((whole / student / "results.json").read_text(encoding="utf-8"))
        assert result["tests"] == first["tests"] and result["score"] == first["score"]
    assert (resumed / "grades.csv").read_text() == (whole / "grades.csv").read_text()
    # Another seed, or --fresh, grades everything again.
    other = json.loads(mhakit("grade", str(submitted), "--out", str(resumed), "--seed", "5",
                              "--json", "--quiet").stdout)
    assert not any(r["extra_data"].get("kept_from_the_first_run") for r in other.values())


def test_a_class_report_comes_with_every_folder_run(course, tmp_path):
    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"Class report: {len(results)} submissions" in report
    with open(out / "checks.csv", newline="", encoding="utf-8") as handle:
        rows = {row["check"]: row for row in csv.DictReader(handle)}
    failed_split = sum(t["status"] == "failed" for r in results.values() for t in r["tests"]
                       if t["name"] == "split_heads: matches the reference on random inputs")
    assert int(rows["split_heads: matches the reference on random inputs"]["failed"]) == failed_split
    counts = [int(line.split()[-1]) for line in report.split("```")[1].strip().splitlines()]
    assert sum(counts) == len(results)
    assert (out / "scores.png").stat().st_size > 1000
    assert "█" in done.stderr  # the same histogram, in the terminal
    # bob forgot the max subtraction and the transpose in split_heads: both are named.
    with open(out / "mistakes.csv", newline="", encoding="utf-8") as handle:
        mistakes = {row["mistake"]: int(row["students"]) for row in csv.DictReader(handle)}
    tagged = {tag for r in results.values() for t in r["tests"] for tag in t.get("tags", [])}
    assert {"softmax/no-max-subtraction", "split_heads/reshape-without-transpose"} <= set(mistakes)
    assert set(mistakes) == tagged
    assert "`split_heads/reshape-without-transpose` | 1 |" in report


def test_a_dask_cluster_gives_the_same_grades_as_a_local_run(course, tmp_path):
    distributed = pytest.importorskip("dask.distributed",
                                      reason="dask is an optional extra: pip install '.[dask]'")
    from autograder.integrations.batch import grade_folder

    local = grade_folder(course / "submitted", tmp_path / "local", seed=9, quiet=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = grade_folder(course / "submitted", tmp_path / "remote", seed=9, quiet=True,
                              dask=cluster.scheduler_address)
    assert set(remote) == set(local)
    for student in local:
        assert remote[student]["score"] == local[student]["score"]
        assert remote[student]["tests"] == local[student]["tests"]
        assert remote[student]["extra_data"]["submission_hash"] == \
            local[student]["extra_data"]["submission_hash"]
    assert (tmp_path / "remote" / "grades.csv").read_text() == \
        (tmp_path / "local" / "grades.csv").read_text()


def test_each_student_gets_a_feedback_file_that_names_the_mistakes(course, tmp_path):
    from tests.mha_exercise import CATALOGUE

    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6", "--quiet")
    assert done.returncode == 0, done.stderr
    hints = {m.id: m for ms in CATALOGUE.values() for m in ms}
    markdown = (out / "bob_partly_correct" / "feedback.md").read_text(encoding="utf-8")
    page = (out / "bob_partly_correct" / "feedback.html").read_text(encoding="utf-8")
    assert "85 / 100" in markdown and "85 / 100" in page
    for mistake in ("softmax/no-max-subtraction", "split_heads/reshape-without-transpose"):
        assert hints[mistake].zh in markdown  # the sample notebooks are the Chinese release
    assert "<pre>" in page and "<script" not in page
    alice = (out / "alice_correct" / "feedback.md").read_text(encoding="utf-8")
    assert "100 / 100" in alice and "✗" not in alice


def test_the_language_option_overrides_the_notebooks_own(course, tmp_path):
    from tests.mha_exercise import CATALOGUE

    hint = next(m for m in CATALOGUE["softmax"] if m.id == "softmax/no-max-subtraction")
    out = tmp_path / "out"
    for language, title, words in (("zh", "mha 作业反馈", hint.zh),
                                   ("en", "Feedback on the mha assignment", hint.en)):
        done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6",
                      "--quiet", "--language", language)
        assert done.returncode == 0, done.stderr
        result = json.loads((out / "bob_partly_correct" / "results.json").read_text("utf-8"))
        assert result["extra_data"]["language"] == language  # not kept from the run before
        markdown = (out / "bob_partly_correct" / "feedback.md").read_text(encoding="utf-8")
        assert markdown.startswith(f"# {title}") and words in markdown
    refused = mhakit("grade", str(course / "submitted"), "--language", "fr")
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
