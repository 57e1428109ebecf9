"""mhakit/integrations/batch.py: grading a folder of submissions.

One odd submission never stops the class: `mhakit grade` (with --gradebook: see
test_gradebook.py) on a class where honest students sit next to hostile files, names and
folders. A resumed run keeps what still holds, a killed one keeps what it wrote, and a Dask
cluster grades as a local run does."""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mhakit.sandbox import Limits
from mhakit.sandbox.confinement import jail_works
from tests.attacks.corpus import Attack
from tests.attacks.on_the_class import _forty_megabytes_of_braces, _nested_metadata
from tests.integrations.test_cli import mhakit as mhakit_text  # text out, any subcommand

MHAKIT = [sys.executable, "-m", "mhakit.integrations.cli", "grade"]
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


# ------------------------------------------------ resuming, killing, Dask

def test_a_resumed_run_keeps_what_holds_and_matches_an_uninterrupted_one(course, tmp_path):
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    submitted = course / "submitted"
    assert mhakit_text("grade", str(submitted), "--out", str(whole), "--seed", "4",
                       "--quiet").returncode == 0
    # A run stopped after two students: their results are on disk, the rest are not.
    for student in ("alice_correct", "carol_unimplemented"):
        (resumed / student).mkdir(parents=True)
        kept = json.loads((whole / student / "results.json").read_text(encoding="utf-8"))
        kept["extra_data"]["kept_from_the_first_run"] = True
        (resumed / student / "results.json").write_text(json.dumps(kept), encoding="utf-8")
    done = mhakit_text("grade", str(submitted), "--out", str(resumed), "--seed", "4", "--json")
    assert done.returncode == 0, done.stderr
    assert "2 earlier results still hold, 2 to grade" in done.stderr
    again = json.loads(done.stdout)
    assert again["alice_correct"]["extra_data"].get("kept_from_the_first_run")
    assert not again["bob_partly_correct"]["extra_data"].get("kept_from_the_first_run")
    for student, result in again.items():
        first = json.loads((whole / student / "results.json").read_text(encoding="utf-8"))
        assert result["tests"] == first["tests"] and result["score"] == first["score"]
    assert (resumed / "grades.csv").read_text() == (whole / "grades.csv").read_text()
    # timing.json counts the notebooks this run graded, and only their seconds.
    timing = json.loads((resumed / "timing.json").read_text(encoding="utf-8"))
    assert timing["notebooks"] == 2
    graded_now = [again[s]["extra_data"]["seconds"] for s in ("bob_partly_correct",
                                                              "dave_tries_to_cheat")]
    trips = sum(seconds["round trips"] for seconds in graded_now)
    assert timing["seconds"]["round trips"] == pytest.approx(trips, abs=1e-3)
    assert timing["seconds"]["writing results"] > 0
    assert timing["wall_seconds"] >= sum(sum(s.values()) for s in graded_now) / timing["jobs"]
    # Another seed, or --fresh, grades everything again.
    other = json.loads(mhakit_text("grade", str(submitted), "--out", str(resumed), "--seed",
                                   "5", "--json", "--quiet").stdout)
    assert not any(r["extra_data"].get("kept_from_the_first_run") for r in other.values())


def test_a_dask_cluster_gives_the_same_grades_as_a_local_run(course, tmp_path):
    distributed = pytest.importorskip("dask.distributed",
                                      reason="dask is an optional extra: pip install '.[dask]'")
    from mhakit.integrations.batch import grade_folder

    local = grade_folder(course / "submitted", tmp_path / "local", seed=9, quiet=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = grade_folder(course / "submitted", tmp_path / "remote", seed=9, quiet=True,
                              dask=cluster.scheduler_address)
    assert set(remote) == set(local)
    for student in local:
        assert remote[student].score == local[student].score
        assert remote[student].tests == local[student].tests
        assert remote[student].extra["submission_hash"] == \
            local[student].extra["submission_hash"]
    assert (tmp_path / "remote" / "grades.csv").read_text() == \
        (tmp_path / "local" / "grades.csv").read_text()


@pytest.mark.slow
def test_a_grading_run_killed_halfway_keeps_its_results_and_a_rerun_finishes(course, tmp_path):
    import json
    import signal
    import time

    submitted = tmp_path / "submitted"
    sample = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    for index in range(12):
        target = submitted / f"student{index:02d}" / "mha" / "mha.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copy(sample, target)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "mhakit.integrations.cli", "grade", str(submitted), "--out",
               str(out), "--quiet", "--seed", "3", "--jobs", "2"]
    run = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(list(out.glob("*/results.json"))) < 3 and time.monotonic() < deadline:
        if run.poll() is not None:
            break
        time.sleep(0.05)
    # Every process of the run, its workers, their warm parents and the children: the
    # run's own, not every process of the sandbox's uids, which other tests may have.
    run_processes = descendants(run.pid)
    children = [pid for pid in run_processes if is_child(pid)]  # read while they live
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    finished = list(out.glob("*/results.json"))
    assert 3 <= len(finished) < 12, "the run should have been killed halfway"
    for path in finished:  # atomic writes: every result on disk is whole
        assert json.loads(path.read_text(encoding="utf-8"))["score"] == 100
    assert len(children) >= 2, run_processes
    if jail_works(Limits()):  # the children die with the grader: nothing of the run is left
        deadline = time.monotonic() + 10
        while still_running(run_processes) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not still_running(run_processes)
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12 and {row["total"] for row in rows} == {"100"}


def started(pid):
    """(parent pid, start time in clock ticks) of a process, or None once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[19]


def descendants(pid):
    """{pid: its start time} of every process below ``pid``."""
    below = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        found = started(stat.parent.name)
        if found is not None:
            below.setdefault(found[0], []).append((int(stat.parent.name), found[1]))
    found, todo = {}, [pid]
    while todo:
        for child, start in below.get(todo.pop(), ()):
            found[child] = start
            todo.append(child)
    return found


def is_child(pid):
    """Whether ``pid`` is a grading child, or a warm parent of them: both are started as
    ``python -I -S`` (sandbox/process.py)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-I", b"-S"]
    except OSError:
        return False


def still_running(processes):
    """Those of ``processes`` ({pid: start time}) that are the same processes still."""
    return [pid for pid, start in processes.items()
            if (now := started(pid)) is not None and now[1] == start]


PROBED_ONCE = """
import json, sys
from dataclasses import replace
from mhakit.exercise import current
from mhakit.integrations.batch import grade_folder
from mhakit.sandbox import Limits, confinement

if __name__ == "__main__":
    current()
    probed = confinement.choice(Limits())
    facts = dict(probed.probed.get(probed.mode) or {})
    facts["tried"] = list(facts.get("tried") or []) + ["what only the main process heard"]
    confinement.adopt(replace(probed, probed={**probed.probed, probed.mode: facts}))
    results = grade_folder(sys.argv[1], sys.argv[2], seed=3, jobs=2, quiet=True)
    print(json.dumps({student: r.extra["isolation"] for student, r in results.items()}))
"""


def test_the_grading_workers_take_the_main_process_probe_and_do_not_probe_again(course,
                                                                                 tmp_path):
    """A worker that probed for itself would describe its own probe child's refusals,
    without the line that only the main process's (edited) choice holds."""
    done = subprocess.run([sys.executable, "-c", PROBED_ONCE, str(course / "submitted"),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    isolation = json.loads(done.stdout)
    assert len(isolation) >= 4
    for student, layers in isolation.items():
        assert any("what only the main process heard" in layer for layer in layers), student


def test_a_class_run_leaves_no_childs_folder_behind(course, tmp_path, request):
    """Each grading worker keeps a spare child, started for the next notebook; the last
    spare goes when the worker ends. (Its finaliser, registered in the forkserver, was
    cleared in every worker, and each run left one folder per worker in /tmp.)"""
    # A temporary folder of the run's own, since other tests' children have theirs in
    # /tmp; a short path, which multiprocessing's socket needs (tmp_path is too long).
    temporary = Path(tempfile.mkdtemp(prefix="mhakit-test-"))
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    for jobs in ("1", "2"):
        done = subprocess.run(MHAKIT + [str(course / "submitted"), "--out",
                                        str(tmp_path / f"out{jobs}"), "--quiet", "--jobs", jobs],
                              capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, TMPDIR=str(temporary)))
        assert done.returncode == 0, done.stderr
        assert list(temporary.glob("mhakit-*")), "the run kept nothing in its TMPDIR"
        assert list(temporary.glob("mhakit-child-*")) == [], jobs
