"""mhakit/integrations/cli.py: mhakit grade, as an instructor runs it: one notebook, a
folder, bad input, the language option. (mhakit demo: test_demo.py.)"""

import csv
import json
import os
import subprocess
import sys

import pytest

from mhakit.exercise import current
from mhakit.grader.result import Result, status_of
from mhakit.integrations.sinks.grades_csv import csv_columns
from mhakit.integrations.cli import main, ungraded_line, unwritable_folder
from tests.attacks.corpus import REPO

CSV_COLUMNS = csv_columns(current())

MHAKIT = [sys.executable, "-m", "mhakit.integrations.cli"]


def mhakit(*args, cwd=None, env=None):
    return subprocess.run(MHAKIT + list(args), capture_output=True, text=True, cwd=cwd,
                          timeout=600, env=env)


def fresh_python(code, env=None):
    """``python -c code`` in a new interpreter, as the `mhakit` command starts one."""
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def without_blas_setting():
    return {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}


def assert_one_line_error(stderr, command):
    """What a mistake on the command line must give: one line that names the command,
    never a traceback."""
    assert "Traceback" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"mhakit {command}: "), stderr


def test_one_notebook_prints_a_results_json(course):
    notebook = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    done = mhakit("grade", str(notebook), "--seed", "5")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # stdout carries the result and nothing else
    assert result["score"] == 100
    assert result["extra_data"]["seed"] == 5
    assert all(t["name"].split(":")[0] in CSV_COLUMNS for t in result["tests"])
    assert "confinement:" not in done.stderr  # said only when asked (--verbose)


@pytest.mark.parametrize("options, named", [
    (["--out", "results"], "--out"), (["--jobs", "2"], "--jobs"),
    (["--dask", "tcp://127.0.0.1:1"], "--dask"), (["--fresh"], "--fresh"),
    (["--fresh", "--out", "results"], "--out, --fresh")])
def test_a_folder_option_with_one_notebook_is_refused_before_any_work(options, named, course,
                                                                     tmp_path, monkeypatch,
                                                                     capsys):
    from mhakit.integrations import gate

    def must_not_probe(*args, **kwargs):
        raise AssertionError("probed before refusing the options")

    monkeypatch.setattr(gate, "refusal_before_grading", must_not_probe)
    monkeypatch.chdir(tmp_path)
    notebook = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    assert main(["grade", str(notebook), *options]) == 2
    out, err = capsys.readouterr()
    assert_one_line_error(err, "grade")
    assert err.startswith(f"mhakit grade: {named}: for folders of submissions"), err
    assert out == "" and list(tmp_path.iterdir()) == []  # no results folder, no JSON


def test_a_folder_run_without_out_writes_to_the_default_folder(course, tmp_path):
    done = mhakit("grade", str(course / "submitted"), "--quiet", "--seed", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "mhakit-results" / "grades.csv").is_file()
    assert "wrote mhakit-results/<student>/results.json" in done.stderr


def test_a_malformed_setting_is_one_line_before_any_work(tmp_path):
    done = mhakit("grade", str(tmp_path), env=dict(os.environ, MHAKIT_CALL_SECONDS="soon"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == "mhakit: MHAKIT_CALL_SECONDS='soon' is not a number"


def test_verbose_says_on_stderr_how_the_confinement_was_chosen(course):
    notebook = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    done = mhakit("--verbose", "grade", str(notebook), "--seed", "5")
    assert done.returncode == 0, done.stderr
    mode = json.loads(done.stdout)["extra_data"]["confinement"]
    said = [line.removeprefix("mhakit: INFO: confinement: ") for line in done.stderr.splitlines()
            if line.startswith("mhakit: INFO: confinement: ")]
    assert said[0].startswith("trying ") and mode in said[0], done.stderr
    chosen = [line for line in said if line.startswith(f"{mode}: ")]
    assert chosen and "reached nothing of the course" in chosen[0], done.stderr
    # every stronger mode tried before it says why it was not used
    stronger = said[0].removeprefix("trying ").split(", strongest first")[0].split(", ")
    for other in stronger[:stronger.index(mode)]:
        assert any(line.startswith(f"{other}: not used: ") for line in said), done.stderr


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


def test_a_notebook_that_cannot_be_read_prints_its_result_and_exits_1(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("this is not json", encoding="utf-8")
    done = mhakit("grade", str(bad))
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["score"] == 0
    assert result["extra_data"]["status"] == "unreadable"
    assert_one_line_error(done.stderr, "grade")
    assert "could not be graded (unreadable: " in done.stderr


def test_a_file_that_is_no_notebook_at_all_is_refused(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("grade these by Friday", encoding="utf-8")
    assert main(["grade", str(notes)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_one_line_error(captured.err, "grade")
    assert "notes.txt is not a notebook" in captured.err


def test_a_folder_run_ends_with_the_line_that_names_the_ungradable(course, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    source = course / "submitted" / "alice_correct" / "mha" / "mha.ipynb"
    (flat / "alice.ipynb").write_bytes(source.read_bytes())
    (flat / "bob.ipynb").write_text("this is not json", encoding="utf-8")
    done = mhakit("grade", str(flat), "--out", str(tmp_path / "out"), "--quiet")
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("1 could not be graded: bob (unreadable: "), last
    assert "alice" not in last


def test_the_ungradable_line_names_a_few_and_counts_the_rest():
    def result(status, error=None):
        return Result(0, (), {"error": error}, status_of(status))

    results = {"ann": result("graded"), "ben": result("graded (crashes)"),
               "cy": result("unreadable", "not JSON"), "di": result("grading failed", "died"),
               "ed": result("unreadable", "x" * 500), "fa": result("refused", "no layer"),
               "gu": result("unreadable", "empty")}
    line = ungraded_line(results)
    assert line.startswith("5 could not be graded: cy (unreadable: not JSON), "
                           "di (grading failed: died), ed (unreadable: xxx")
    assert line.endswith(" and 2 more (see grades.csv)")
    assert len(line) < 200
    assert ungraded_line({"ann": result("graded")}) is None


@pytest.mark.parametrize("out", ["/proc/forbidden", "a_file"])
def test_an_out_that_cannot_be_written_is_refused_before_grading(out, course, tmp_path,
                                                                 monkeypatch, capsys):
    from mhakit.integrations import batch

    def must_not_grade(*args, **kwargs):
        raise AssertionError("graded before checking --out")

    monkeypatch.setattr(batch, "grade_folder", must_not_grade)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("", encoding="utf-8")
    assert main(["grade", str(course / "submitted"), "--out", out]) == 2
    assert_one_line_error(capsys.readouterr().err, "grade")
    assert (tmp_path / "a_file").is_file()


def test_a_writable_out_is_created_and_keeps_no_probe(tmp_path):
    out = tmp_path / "new" / "results"
    assert unwritable_folder(out) is None
    assert out.is_dir() and list(out.iterdir()) == []


@pytest.mark.parametrize("args", [["grade", "no/such/path"], ["grade", "."], ["build",
                                                                               "--course", "/"]])
def test_bad_input_gives_a_clear_error_and_exit_2(args, tmp_path):
    done = mhakit(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("mhakit ")
    assert "Traceback" not in done.stderr



def parse_error(argv, capsys):
    """What argparse prints for a command line it refuses: its usage, then one line."""
    with pytest.raises(SystemExit) as refused:
        main(argv)
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("argv, command", [(["grade", "--jbos", "2"], "grade"),
                                           (["gradescope", "--oot", "x.zip"], "gradescope"),
                                           (["--jbos", "grade", "x"], None)])
def test_an_unknown_option_shows_the_usage_of_its_command(argv, command, capsys):
    err = parse_error(argv, capsys)
    prog = f"mhakit {command}" if command else "mhakit"
    assert f"usage: {prog} " in err
    assert err.strip().splitlines()[-1].startswith(f"{prog}: error: unrecognized arguments: ")


@pytest.mark.parametrize("jobs", ["-3", "0", "two"])
def test_jobs_must_be_a_positive_count_before_anything_runs(jobs, capsys):
    err = parse_error(["grade", "no/such/folder", "--jobs", jobs], capsys)
    assert err.strip().splitlines()[-1] == (
        f"mhakit grade: error: argument --jobs: must be a whole number of at least 1, not {jobs}")
    assert "max_workers" not in err


@pytest.mark.parametrize("address, says", [
    ("tcp://127.0.0.1:1", "no Dask scheduler answered at tcp://127.0.0.1:1 within 5 s"),
    ("foo://127.0.0.1:1", "--dask foo://127.0.0.1:1 is not a scheduler's address")])
def test_a_dask_scheduler_that_is_not_there_is_one_line(address, says, tmp_path):
    submitted = tmp_path / "submitted"
    submitted.mkdir()
    (submitted / "alice.ipynb").write_text("{}", encoding="utf-8")
    out = tmp_path / "out"
    done = mhakit("grade", str(submitted), "--dask", address, "--out", str(out), "--quiet")
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "grade")
    assert says in done.stderr
    assert not (out / "grades.csv").exists()


def test_a_temporary_folder_too_long_for_the_workers_socket_is_one_line(tmp_path):
    """multiprocessing puts its forkserver's socket in TMPDIR, and a Unix socket's path
    holds at most 107 bytes: a longer folder stopped the run with a traceback."""
    submitted = tmp_path / "submitted"
    submitted.mkdir()
    (submitted / "alice.ipynb").write_text("{}", encoding="utf-8")
    long_folder = tmp_path / ("t" * 110)
    long_folder.mkdir()
    out = tmp_path / "out"
    done = mhakit("grade", str(submitted), "--out", str(out), "--quiet",
                  env=dict(os.environ, TMPDIR=str(long_folder)))
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "grade")
    assert "set TMPDIR to a shorter one" in done.stderr
    assert not (out / "grades.csv").exists()


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


def test_build_with_one_language_writes_that_assignment_only(tmp_path):
    # A course in one language has one assignment, so formgrader shows it out of 100.
    import shutil

    from tests.conftest import REPO

    shutil.copy(REPO / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    done = mhakit("build", "--course", str(tmp_path), "--source-only", "--language", "en")
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in (tmp_path / "source").iterdir()) == ["mha_en"]


def test_the_command_line_skips_the_costly_format_checks_and_nbformat_still_validates():
    # In a fresh interpreter, as `mhakit` starts: the command line's module comes first.
    code = (
        "import sys\n"
        "import mhakit.integrations.cli\n"
        "import jsonschema, nbformat\n"
        "assert sys.modules['rfc3987_syntax'] is None and sys.modules['isoduration'] is None\n"
        "assert 'arrow' not in sys.modules\n"
        "notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1 + 1')])\n"
        "nbformat.validate(notebook)\n"
        "broken = nbformat.v4.new_notebook()\n"
        "broken.cells.append({'cell_type': 'code'})\n"
        "try:\n"
        "    nbformat.validate(broken)\n"
        "except nbformat.ValidationError:\n"
        "    print('refused')\n")
    done = fresh_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"


def test_several_exercises_in_mhakit_exercise_load_and_exercise_goes_first(
        monkeypatch, tmp_path, capsys):
    """MHAKIT_EXERCISE read as PATH is: each folder loads, and the command's --exercise
    is the first of them for its workers and nbgrader's subprocesses."""
    from mhakit.exercise import BUILT_IN

    second = (REPO / "tests" / "second_exercise").resolve()
    kits = (BUILT_IN / "mha").resolve()
    monkeypatch.setenv("MHAKIT_EXERCISE", f"{second}{os.pathsep}{kits}")
    assert main(["--exercise", str(kits), "grade", str(tmp_path / "nothing-here")]) == 2
    assert "mhakit: exercise" not in capsys.readouterr().err  # the path's own error
    assert os.environ["MHAKIT_EXERCISE"] == os.pathsep.join([str(kits), str(second)])
    monkeypatch.setenv("MHAKIT_EXERCISE", f"{second}{os.pathsep}{tmp_path / 'no-exercise'}")
    assert main(["grade", str(tmp_path / "nothing-here")]) == 2
    assert f"mhakit: exercise {tmp_path / 'no-exercise'}" in capsys.readouterr().err


@pytest.mark.parametrize("given, held", [(None, "1"), ("3", "3")])
def test_the_command_asks_numpy_for_one_blas_thread_unless_told(given, held):
    """A BLAS thread per core spins for a tenth of a second in every grading process that
    imports numpy, and never has work there; a value the instructor set is kept."""
    env = without_blas_setting()
    if given:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import os, sys\n"
            "from mhakit.integrations.cli import main\n"
            "assert 'numpy' not in sys.modules  # else the setting would come too late\n"
            "main(['grade', 'no-such-folder'])\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'])\n")
    done = fresh_python(code, env)
    assert done.stdout.strip() == held, done.stderr


def test_a_program_that_calls_main_keeps_its_blas_threads():
    """The kernels a test or a notebook starts after calling main are left as they were."""
    code = ("import os, numpy\n"
            "from mhakit.integrations.cli import main\n"
            "main(['grade', 'no-such-folder'])\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    done = fresh_python(code, without_blas_setting())
    assert done.stdout.strip() == "None", done.stderr
