"""The Gradescope bundle: run in a folder laid out like /autograder, and on a machine like
Gradescope's, where the container forbids namespaces and the kernel may lack Landlock."""

import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from mhakit import __version__
from mhakit.integrations import gradescope
from mhakit.integrations.cli import main
from tests.mha_exercise import POINTS, QUIZ_POINTS, fill, sample_answers
from mhakit.sandbox import plan, uids

from tests.attacks.corpus import ATTACKS, RELEASE, REPO, Attack
from tests.attacks.on_confinement import CONFINEMENT_ATTACKS, cheat
from tests.integrations.test_cli import assert_one_line_error

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundle")
    done = subprocess.run([sys.executable, "-m", "mhakit.integrations.cli", "gradescope", "--out",
                           str(folder / "autograder.zip")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder / "autograder.zip"


def test_the_zip_holds_what_gradescope_runs(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml",
            "mhakit/exercises/mha/reference.py",
            "mhakit/grader/grading.py", "mhakit/exercises/mha/shipped/checks.py",
            "mhakit/exercises/mha/release_layout.json"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    for script in ("setup.sh", "run_autograder"):
        with zipfile.ZipFile(bundle) as archive:
            text = archive.read(script).decode()
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


# --- In a folder laid out like /autograder, with the kit's own Python.

def run_autograder(bundle, tmp_path, notebook):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    if notebook is not None:
        shutil.copy(notebook, root / "submission" / "mha.ipynb")
    env = dict(os.environ, MHAKIT_AUTOGRADER_ROOT=str(root), MHAKIT_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("student,score", [("alice_correct", 100), ("carol_unimplemented", 0)])
def test_run_autograder_writes_valid_results(bundle, course, tmp_path, student, score):
    result = run_autograder(bundle, tmp_path, course / "submitted" / student / "mha" / "mha.ipynb")
    assert result["score"] == score
    assert result["tests"] and all(
        set(test) <= {"name", "score", "max_score", "output", "visibility", "tags"}
        and test["visibility"] in VISIBILITIES for test in result["tests"])
    hidden = [t for t in result["tests"] if t["visibility"] != "visible"]
    assert sum(t["max_score"] for t in hidden) == 100  # the points are on the hidden checks
    # Gradescope shows the names to the student: the sample class is the Chinese release.
    assert "softmax: 随机输入上与参考答案一致" in {t["name"] for t in result["tests"]}


def test_no_notebook_gives_zero_and_says_why(bundle, tmp_path):
    result = run_autograder(bundle, tmp_path, None)
    assert result["score"] == 0 and "mha.ipynb" in result["output"]


def test_run_autograder_hides_the_autograder_folder_from_the_child(bundle, tmp_path):
    run_autograder(bundle, tmp_path, None)
    root = tmp_path / "autograder"
    assert root.stat().st_mode & 0o777 == 0o711  # others may pass through, not list
    for name in ("source", "submission", "results"):
        assert (root / name).stat().st_mode & 0o077 == 0, name


FAKE_PYTHON = """\
#!{python}
import json, os, sys
with open(sys.argv[-1] + "/results/results.json", "w") as handle:
    json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "hide": os.environ["MHAKIT_HIDE"]}},
              handle)
"""


def test_run_autograder_names_what_to_hide_and_runs_from_a_hidden_folder(bundle, tmp_path):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    env = dict(os.environ, MHAKIT_AUTOGRADER_ROOT=str(root), MHAKIT_PYTHON=str(python),
               MHAKIT_HIDE="/elsewhere")
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = read_results(root)
    assert seen["hide"].split(os.pathsep) == [str(root), str(root / "source"), str(
        root / "submission"), str(root / "results"), "/elsewhere"]
    # -I: the kit that runs is the venv's, never the copy in the folder it runs from.
    assert seen["argv"] == ["-I", "-m", "mhakit.integrations.gradescope", str(root)]
    assert seen["cwd"] == str(root / "source")


# --- Refusing and failing, in results.json: one line, score 0, exit status 0.

def read_results(root):
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def test_a_refusal_is_one_line_in_results_json(tmp_path, monkeypatch):
    refused = ("no layer here can hide the course from student code (uid: a probe child "
               "could read /autograder/venv/x); refusing to grade. Rerun with --allow-unconfined "
               "to accept the risk; every result is then flagged for review")
    monkeypatch.setattr(gradescope, "confinement_refusal", lambda: refused)
    (tmp_path / "submission").mkdir()
    assert gradescope.main([str(tmp_path)]) == 0
    result = read_results(tmp_path)
    assert result["score"] == 0 and result["tests"] == []
    assert result["extra_data"]["status"] == "refused"
    assert result["output"] == (f"mha-kit refused to grade here: {refused}. On Gradescope, "
                                "uncomment `export MHAKIT_ALLOW_UNCONFINED=1` in "
                                "run_autograder to accept the risk.")


def test_a_grader_that_fails_still_writes_results_json(tmp_path, monkeypatch):
    def broken(root):
        raise RuntimeError("the disk is full\nsecond line")

    monkeypatch.setattr(gradescope, "run", broken)
    assert gradescope.main([str(tmp_path)]) == 0
    result = read_results(tmp_path)
    assert result["score"] == 0 and result["extra_data"]["status"] == "grading failed"
    assert result["output"] == ("mha-kit could not grade this submission: "
                                "RuntimeError: the disk is full second line")


# --- Uploads as people make them: what the submission folder holds on Gradescope.

def filled(answers, release=RELEASE):
    notebook = fill(nbformat.read(str(release), as_version=4), answers)
    return nbformat.writes(notebook).encode("utf-8")


HONEST = Attack("honest").make()                     # 100 points
BLANK = RELEASE.read_bytes()                         # the release as handed out: 0 points
HONEST_EN = filled(sample_answers()["alice_correct"],
                   RELEASE.parents[1] / "mha_en" / "mha.ipynb")
# What macOS writes for a file's extended attributes: an AppleDouble header (magic, version,
# "Mac OS X", two entries) and then the entries; not JSON, and no notebook.
APPLE_DOUBLE = (struct.pack(">II16sH", 0x00051607, 0x00020000, b"Mac OS X        ", 2)
                + struct.pack(">III", 9, 50, 32) + struct.pack(">III", 2, 82, 286)
                + b"\0" * 32 + b"\0\0\1\0" + b"\0" * 282)


def macos_zip(path, name, data):
    """The zip that Finder's Compress makes of one file: the file, and its AppleDouble
    under __MACOSX/."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
        archive.writestr("__MACOSX/", b"")
        archive.writestr(f"__MACOSX/._{name}", APPLE_DOUBLE)
    return path


def graded_upload(tmp_path, files=(), zips=()):
    """results.json once main() graded a submission folder laid out as Gradescope leaves
    it: ``files`` {path: bytes}, ``zips`` {path: a zip's members {name: bytes}}."""
    root = tmp_path / "autograder"
    submission = root / "submission"
    submission.mkdir(parents=True)
    for name, data in dict(files).items():
        (submission / name).parent.mkdir(parents=True, exist_ok=True)
        (submission / name).write_bytes(data)
    for name, members in dict(zips).items():
        with zipfile.ZipFile(submission / name, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, data in members.items():
                archive.writestr(member, data)
    assert gradescope.main([str(root)]) == 0
    return read_results(root)


def assert_one_line(text):
    assert "\n" not in text and "Traceback" not in text


@pytest.mark.parametrize("extracted", [True, False], ids=["extracted", "zip-as-uploaded"])
def test_a_macos_zip_is_graded_on_its_notebook(tmp_path, extracted):
    """The bug: `mha (1).ipynb` beside `__MACOSX/._mha (1).ipynb` scored 0 as unreadable."""
    archive = macos_zip(tmp_path / "mha (1).ipynb.zip", "mha (1).ipynb", HONEST)
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    if extracted:  # as Gradescope hands over a zip upload
        with zipfile.ZipFile(archive) as opened:
            opened.extractall(root / "submission")
        graded = "mha (1).ipynb"
    else:  # as a zip inside the upload arrives
        shutil.copy(archive, root / "submission")
        graded = "mha (1).ipynb.zip/mha (1).ipynb"
    assert gradescope.main([str(root)]) == 0
    result = read_results(root)
    assert result["score"] == 100
    assert result["extra_data"]["upload"] == {"graded": graded, "not_graded": []}
    assert result["output"] == f"评分的文件：{graded}。"  # the Chinese release's language


def test_a_notebook_inside_a_folder_is_found(tmp_path):
    result = graded_upload(tmp_path, {"hw3/work/mha.ipynb": HONEST, "hw3/README.txt": b"hi"})
    assert result["score"] == 100 and result["output"] == "评分的文件：hw3/work/mha.ipynb。"


def test_of_several_notebooks_the_assignments_name_wins_and_the_others_are_named(tmp_path):
    result = graded_upload(tmp_path, {"mha-Copy1.ipynb": BLANK, "scratch.ipynb": BLANK,
                                      "final/mha.ipynb": HONEST_EN,
                                      "final/.ipynb_checkpoints/mha-checkpoint.ipynb": BLANK})
    assert result["score"] == 100
    assert result["output"] == ("Graded: final/mha.ipynb. Not graded, also uploaded: "
                                "mha-Copy1.ipynb, scratch.ipynb.")  # the notebook's English
    assert result["extra_data"]["upload"]["not_graded"] == ["mha-Copy1.ipynb", "scratch.ipynb"]


def test_the_assignments_name_nearest_the_top_wins(tmp_path):
    result = graded_upload(tmp_path, {"mha.ipynb": HONEST, "old/mha.ipynb": BLANK})
    assert result["score"] == 100
    assert result["output"] == ("评分的文件：mha.ipynb（有 2 个文件都可能是作业，评分的是最靠近"
                                "顶层的那个）。没有评分，也在上传的文件里：old/mha.ipynb。")


def test_of_two_copies_the_latest_is_graded_and_the_result_says_so(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "mha (1).ipynb").write_bytes(HONEST)
    (root / "submission" / "mha(2).ipynb").write_bytes(BLANK)
    (root / "submission" / "notes.ipynb").write_bytes(BLANK)
    os.utime(root / "submission" / "mha(2).ipynb", (1_700_000_000, 1_700_000_000))
    assert gradescope.main([str(root)]) == 0
    result = read_results(root)
    assert result["score"] == 100
    assert result["output"] == ("评分的文件：mha (1).ipynb（有 2 个文件都可能是作业，评分的是"
                                "最近修改的那个）。没有评分，也在上传的文件里：mha(2).ipynb、"
                                "notes.ipynb。")


def test_a_checkpoint_copy_is_never_graded_nor_named(tmp_path):
    result = graded_upload(tmp_path, {"mha.ipynb": BLANK,
                                      ".ipynb_checkpoints/mha-checkpoint.ipynb": HONEST})
    assert result["score"] == 0 and "output" not in result
    assert result["extra_data"]["upload"] == {"graded": "mha.ipynb", "not_graded": []}


def test_a_single_notebook_of_any_name_is_graded(tmp_path):
    result = graded_upload(tmp_path, {"作业三 final.ipynb": HONEST, "data.csv": b"1,2"})
    assert result["score"] == 100 and result["output"] == "评分的文件：作业三 final.ipynb。"


def test_nothing_to_grade_says_in_one_line_what_was_found(tmp_path):
    result = graded_upload(tmp_path, {"mha.py": b"x = 1\n", "._mha.py": APPLE_DOUBLE,
                                      "__MACOSX/._mha.ipynb": APPLE_DOUBLE,
                                      ".ipynb_checkpoints/mha-checkpoint.ipynb": HONEST})
    assert result["score"] == 0 and result["extra_data"]["status"] == "unreadable"
    assert result["output"] == (
        "This submission could not be graded: no notebook (.ipynb) was found in the upload; "
        "upload mha.ipynb. It holds: ._mha.py (macOS metadata), .ipynb_checkpoints/ "
        "(hidden), __MACOSX/ (macOS metadata), mha.py")


def test_several_notebooks_none_named_like_the_assignment_are_listed(tmp_path):
    result = graded_upload(tmp_path, {"a.ipynb": HONEST, "b/c.ipynb": HONEST})
    assert result["score"] == 0
    assert result["output"] == ("This submission could not be graded: 2 notebooks and none "
                                "of them is mha.ipynb or a copy of it: a.ipynb, b/c.ipynb; "
                                "rename the one to grade to mha.ipynb")


def test_links_out_of_the_submission_are_not_followed(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "mha.ipynb").write_bytes(HONEST)
    root = tmp_path / "autograder"
    (root / "submission" / "inside").mkdir(parents=True)
    (root / "submission" / "mha.ipynb").symlink_to(outside / "mha.ipynb")
    (root / "submission" / "folder").symlink_to(outside)
    (root / "submission" / "inside" / "mine.ipynb").write_bytes(BLANK)
    (root / "submission" / "mha (1).ipynb").symlink_to(Path("inside", "mine.ipynb"))
    assert gradescope.main([str(root)]) == 0
    result = read_results(root)
    # The link inside the upload is followed: it is the copy that is graded, and its target
    # is named too, as the file it is.
    assert result["score"] == 0
    assert result["extra_data"]["upload"] == {"graded": "mha (1).ipynb",
                                              "not_graded": ["inside/mine.ipynb"]}
    found = gradescope.survey(root / "submission")
    assert {"folder (a link out of the upload, not followed)",
            "mha.ipynb (a link out of the upload, not followed)"} <= set(found.passed)


def test_a_zip_is_read_bounded_and_never_extracted(tmp_path, monkeypatch):
    zips = {"paths.zip": {"../mha.ipynb": HONEST, "/abs/mha.ipynb": HONEST,
                          "a/../../mha.ipynb": HONEST}}
    result = graded_upload(tmp_path / "paths", zips=zips)
    assert result["score"] == 0 and "a path that leaves the zip" in result["output"]
    root = tmp_path / "paths" / "autograder"
    assert sorted(os.listdir(root)) == ["results", "submission"]
    assert os.listdir(root / "submission") == ["paths.zip"]
    # 21 MB that deflate to a few KB: read no further than a notebook may be large.
    bomb = graded_upload(tmp_path / "bomb", zips={"bomb.zip": {
        "mha.ipynb": b" " * (21 << 20)}})
    assert bomb["output"] == ("This submission could not be graded: the file has 21 MB; a "
                              "notebook may have at most 20 MB. The file that could not be "
                              "graded: bomb.zip/mha.ipynb.")
    monkeypatch.setattr(gradescope, "MAX_ZIP_MEMBERS", 3)
    many = graded_upload(tmp_path / "many", zips={"many.zip": {
        f"{n}.txt": b"" for n in range(3)} | {"mha.ipynb": HONEST}})
    assert many["score"] == 0 and "many.zip (a zip of 4 files; at most 3 are opened)" in many[
        "output"]
    monkeypatch.setattr(gradescope, "MAX_ZIP_BYTES", 1 << 20)
    large = graded_upload(tmp_path / "large", zips={"large.zip": {
        "mha.ipynb": HONEST, "figure.png": os.urandom(3 << 19)}})  # random: it stays large
    assert large["score"] == 0 and (
        "large.zip (a zip of 1.5 MB; one of at most 1 MB is opened)" in large["output"])
    for result in (result, bomb, many, large):
        assert_one_line(result["output"])


def test_a_broken_zip_is_named_and_the_rest_is_graded(tmp_path):
    result = graded_upload(tmp_path, {"hw.zip": b"PK\3\4 not really", "mha.ipynb": HONEST})
    assert result["score"] == 100 and "output" not in result
    found = gradescope.survey(tmp_path / "autograder" / "submission")
    assert found.passed[0].startswith("hw.zip (not a readable zip: ")


@pytest.mark.parametrize("name", ["mha (1).ipynb", "mha(2).ipynb", "mha-Copy1.ipynb",
                                  "mha copy.ipynb", "mha copy 2.ipynb", "mha - Copy (2).ipynb",
                                  "Copy of mha.ipynb", "MHA.ipynb", "mha 副本.ipynb",
                                  "mha - 副本.ipynb", "mha-Copy1 (1).ipynb"])
def test_copies_of_the_notebook_are_recognised(name):
    assert gradescope.copy_of(name, "mha.ipynb")


@pytest.mark.parametrize("name", ["mha_en.ipynb", "mha-checkpoint.ipynb", "mha1.ipynb",
                                  "my mha.ipynb", "mha (1).py"])
def test_other_names_are_no_copies(name):
    assert not gradescope.copy_of(name, "mha.ipynb")


@pytest.mark.parametrize("where", ["no/such/folder/autograder.zip", "a_folder"])
def test_an_out_that_cannot_be_the_zip_is_one_line_and_writes_nothing(where, tmp_path, capsys):
    (tmp_path / "a_folder").mkdir()
    before = sorted(tmp_path.rglob("*"))
    assert main(["gradescope", "--out", str(tmp_path / where)]) == 2
    assert_one_line_error(capsys.readouterr().err, "gradescope")
    assert sorted(tmp_path.rglob("*")) == before


def test_a_zip_that_fails_halfway_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    def cannot_travel():
        raise ValueError("the reference must lie in its folder")

    monkeypatch.setattr(gradescope, "_exercise_files", cannot_travel)
    assert main(["gradescope", "--out", str(tmp_path / "autograder.zip")]) == 2
    assert_one_line_error(capsys.readouterr().err, "gradescope")
    assert list(tmp_path.iterdir()) == []

# --- On a machine like Gradescope's.
#
# The machine is a folder that becomes / in a chroot, inside a mount namespace of its own:
# the system's /usr and /etc read-only, /dev, /proc, /sys and /run, a fresh /tmp, and
# /autograder, which holds the only copy of the course. (Copies elsewhere on this machine,
# the kit's own checkout included, are often world-readable: where only a uid drop hides
# the course, a child would read those, as it could not on Gradescope.) setup.sh runs
# there as Gradescope runs it, less apt-get: the venv comes from Debian's Python 3.11.
# Each grading runs run_autograder there under tests/sandbox/without_namespaces.py, which
# forbids namespaces as a container does, and with --no-landlock plays a kernel without
# Landlock.

BASE_PYTHON = "/usr/bin/python3"
UIDS_INSIDE = "/tmp/mhakit-uids"  # the uid pool's locks, shared with graders outside
WRAPPER = "/opt/mhakit-tests"     # tests/sandbox/without_namespaces.py and its filter
AN_UNPRIVILEGED_UID = 63999       # below the grader's pool, in no group

ENTER = """\
set -euo pipefail
top="$1"; shift
for dir in usr etc; do
    mount --rbind "/$dir" "$top/$dir" && mount -o remount,bind,ro "$top/$dir"
done
for dir in dev proc sys run {extra}; do mount --rbind "/$dir" "$top/$dir"; done
mount --bind {uids} "$top{uids_inside}"
exec chroot "$top" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 "$@"
"""


def need(reason):
    """Fail in CI, where everything these tests need is meant to be there; else skip."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


class Machine:
    def __init__(self, top):
        self.top = top
        self.root = top / "autograder"
        self.site = None  # the venv's site-packages, as seen from outside
        dirs = [name for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
                if Path("/", name).is_dir() and not Path("/", name).is_symlink()]
        self.mount_points = ["usr", "etc", "dev", "proc", "sys", "run", *dirs]
        self.enter = ENTER.format(extra=" ".join(dirs), uids_inside=UIDS_INSIDE,
                                  uids=shlex.quote(str(uids.UID_LOCKS)))
        top.chmod(0o755)
        for name in (*self.mount_points, "autograder"):
            (top / name).mkdir()
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            if Path("/", name).is_symlink():
                (top / name).symlink_to(os.readlink(Path("/", name)))
        (top / "tmp").mkdir()
        (top / "tmp").chmod(0o1777)
        (top / UIDS_INSIDE.lstrip("/")).mkdir(mode=0o700)
        uids.UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        (top / "root").mkdir(mode=0o700)
        wrapper = top / WRAPPER.lstrip("/")
        (wrapper / "tests" / "sandbox").mkdir(parents=True)
        (wrapper / "mhakit" / "sandbox" / "child").mkdir(parents=True)
        wrapper.chmod(0o700)
        shutil.copy(REPO / "tests" / "sandbox" / "without_namespaces.py",
                    wrapper / "tests" / "sandbox")
        shutil.copy(REPO / "mhakit" / "sandbox" / "child" / "seccomp.py",
                    wrapper / "mhakit" / "sandbox" / "child")

    def run(self, *command, env=None, timeout=600):
        """Run ``command`` inside, as root, with only ``env`` beyond PATH, HOME and LANG."""
        assignments = [f"{name}={value}" for name, value in (env or {}).items()]
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "bash",
                               "-c", self.enter, "enter", str(self.top), *assignments, *command],
                              capture_output=True, text=True, timeout=timeout)

    def setup(self, bundle):
        with zipfile.ZipFile(bundle) as archive:
            archive.extractall(self.root / "source")
        # pip's settings of this machine (a mirror, a proxy) reach PyPI from inside too.
        network = {name: value for name, value in os.environ.items()
                   if name.startswith("PIP_") or name.lower().endswith("_proxy")}
        done = self.run("bash", "/autograder/source/setup.sh", env=dict(
            network, MHAKIT_SETUP_SKIP_APT="1", MHAKIT_BASE_PYTHON=BASE_PYTHON))
        assert done.returncode == 0, done.stdout + done.stderr
        self.site = next(self.root.glob("venv/lib/python3*/site-packages"))

    def grade(self, notebook, landlock=True, env=None):
        """Grade one notebook (bytes) as Gradescope would; results.json, as a dict."""
        shutil.rmtree(self.root / "submission", ignore_errors=True)
        shutil.rmtree(self.root / "results", ignore_errors=True)
        (self.root / "submission").mkdir()  # Gradescope's modes: readable by everyone
        (self.root / "submission" / "mha.ipynb").write_bytes(notebook)
        flags = [] if landlock else ["--no-landlock"]
        done = self.run(BASE_PYTHON, f"{WRAPPER}/tests/sandbox/without_namespaces.py", *flags,
                        "--", "bash", "/autograder/source/run_autograder", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return read_results(self.root)

    def remove(self):
        # The mounts lived in namespaces that ended with each command: what is left are
        # empty mount points. Never delete through a mount that still shows the system.
        for name in self.mount_points:
            assert not any((self.top / name).iterdir()), f"{self.top / name} is not empty"
        shutil.rmtree(self.top)


def machine_is_possible():
    if sys.platform != "linux" or os.geteuid() != 0:
        need("a machine like Gradescope's needs root on Linux (CI runs as root)")
    for tool in ("unshare", "chroot", "mount"):
        if shutil.which(tool) is None:
            need(f"{tool} is missing (util-linux, coreutils, mount)")
    if not Path(BASE_PYTHON).exists():
        need(f"{BASE_PYTHON} is missing (Debian's python3.11)")
    version = subprocess.run([BASE_PYTHON, "-c", "import ensurepip, sys; "
                              "print(sys.version_info >= (3, 11))"], capture_output=True, text=True)
    if version.stdout.strip() != "True":
        need(f"{BASE_PYTHON} must be Python 3.11 or later with venv (python3.11-venv): "
             f"{version.stderr.strip()[-300:]}")
    if not plan.SECCOMP_WORKS:
        need("tests/sandbox/without_namespaces.py needs seccomp on x86_64 or aarch64")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "true"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        need(f"no mount namespace here for a machine like Gradescope's: {done.stderr.strip()}")


# Building the machine is a pip install into a chroot (about a minute): the tests that take
# it are marked slow, out of the quick subset.
@pytest.fixture(scope="module")
def machine(bundle, tmp_path_factory):
    machine_is_possible()
    built = Machine(tmp_path_factory.mktemp("gradescope-machine"))
    try:
        built.setup(bundle)
        yield built
    finally:
        built.remove()


FULL = {name: float(sum(points)) for name, points in POINTS.items()}
FULL["quiz"] = float(sum(QUIZ_POINTS.values()))

GRADESCOPE_PATHS = """\
import glob
SITES = glob.glob('/autograder/venv/lib/python3*/site-packages')
SITES += ['/autograder/venv/lib/python3.11/site-packages']
for path in ['/autograder/source/mhakit/exercises/mha/reference.py',
             '/autograder/source/mhakit/grader/grading.py',
             '/autograder/source/mhakit/grader/hidden_checks.py'] + [
        site + below for site in SITES for below in ('/mhakit/exercises/mha/reference.py',
                                                     '/mhakit/grader/hidden_checks.py')]:
    _read(path, 'Gradescope path ' + path)
for folder in ['/autograder/source', '/autograder/results', '/autograder/submission'] + SITES:
    _look_in(folder, 'Gradescope folder ' + folder)
"""

OVERWRITE_RESULTS = """\
import json
FAKE = json.dumps({'score': 100.0, 'output': 'all tests passed', 'tests': []})
for path in ('/autograder/results/results.json', '/autograder/results/more.json',
             '/autograder/submission/results.json'):
    try:
        with open(path, 'w') as handle:
            handle.write(FAKE)
        ROUTE.append('wrote ' + path)
    except Exception:
        pass
"""

GRADESCOPE_ATTACKS = [
    Attack("read-gradescope-paths-and-installed-kit", zero=("dot_product",),
           needs_confinement=True, edits={"answer_dot_product": cheat("dot_product",
                                                                      GRADESCOPE_PATHS)}),
    Attack("overwrite-results-json-with-full-marks", zero=("softmax",), needs_confinement=True,
           edits={"answer_softmax": cheat("softmax", OVERWRITE_RESULTS)}),
]
SUBMISSIONS = ([Attack("honest-sample-answers")] + CONFINEMENT_ATTACKS + GRADESCOPE_ATTACKS
               + [a for a in ATTACKS if a.name == "import-solutions-and-mhakit"])


def expected_parts(attack):
    return {part: 0.0 if part in attack.zero else full for part, full in FULL.items()}


def landlock_layers(result):
    return [layer for layer in result["extra_data"]["isolation"] if layer.startswith("Landlock")]


@pytest.mark.slow
@pytest.mark.parametrize("attack", SUBMISSIONS, ids=[a.name for a in SUBMISSIONS])
def test_without_namespaces_each_submission_scores_as_described(machine, attack):
    # A uid alone, without Landlock, is refused: nothing would bound what the child
    # writes in /tmp (test_where_nothing_hides_the_course_results_json_says_refused).
    if not plan.landlock_abi():
        need("this kernel has no Landlock")
    result = machine.grade(attack.make(), landlock=True)
    extra = result["extra_data"]
    assert extra["confinement"] == "uid", extra
    assert "unprivileged uid and gid of its own, no supplementary groups" in extra["isolation"]
    assert landlock_layers(result), extra["isolation"]
    # Cheats score 0 on their part; the honest ones full marks. The part of the cheat that
    # wrote results.json too: what Gradescope reads is the grader's.
    assert extra["parts"] == expected_parts(attack), extra
    assert result["score"] == sum(expected_parts(attack).values())
    assert extra["graders_hash"] and len(result["tests"]) > 10
    assert sorted(os.listdir(machine.root / "results")) == ["results.json"]
    assert os.listdir(machine.root / "submission") == ["mha.ipynb"]


UNPRIVILEGED_LOOK = """\
import json, os, sys
os.setgroups([])
os.setgid({uid})
os.setuid({uid})
SITE = {site!r}
read, listed, wrote = [], [], []
for path in ['/autograder/source/mhakit/exercises/mha/reference.py',
             '/autograder/source/mhakit/grader/grading.py',
             '/autograder/submission/mha.ipynb', '/autograder/results/results.json',
             SITE + '/mhakit/exercises/mha/reference.py', SITE + '/mhakit/grader/hidden_checks.py',
             SITE + '/mha_kit-{version}.dist-info/RECORD']:
    try:
        open(path, 'rb').close()
        read.append(path)
    except OSError:
        pass
for path in ['/autograder', '/autograder/source', '/autograder/submission',
             '/autograder/results', SITE + '/mhakit', SITE + '/mhakit/exercises/mha']:
    try:
        os.listdir(path)
        listed.append(path)
    except OSError:
        pass
for folder in ['/autograder', '/autograder/results', '/autograder/submission', SITE]:
    try:
        open(folder + '/x', 'w').close()
        wrote.append(folder)
    except OSError:
        pass
import numpy
print(json.dumps({{"read": read, "listed": listed, "wrote": wrote, "numpy": numpy.__file__,
                  "sum": float(numpy.ones(3).sum())}}))
"""


@pytest.mark.slow
def test_setup_leaves_an_unprivileged_uid_only_python_and_numpy(machine):
    machine.grade(Attack("honest-sample-answers").make())  # a submission and its results
    site = "/" + str(machine.site.relative_to(machine.top))
    done = machine.run("/autograder/venv/bin/python", "-I", "-c",
                       UNPRIVILEGED_LOOK.format(uid=AN_UNPRIVILEGED_UID, site=site,
                                                version=__version__))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["sum"] == 3.0 and seen["numpy"].startswith(site + "/numpy/")
    assert seen["read"] == [] and seen["listed"] == [] and seen["wrote"] == []


@pytest.mark.slow
def test_the_kit_installs_its_package_with_the_answers_inside_it(machine):
    """pip puts mhakit in the machine's site-packages, and nothing else: the reference is
    a module of the exercise, not a package of its own."""
    record = next(machine.site.glob("mha_kit-*.dist-info")) / "RECORD"
    files = [line.split(",")[0] for line in record.read_text(encoding="utf-8").splitlines()]
    top = {Path(name).parts[0] for name in files if not name.startswith("..")}
    assert {t for t in top if not t.endswith(".dist-info")} == {"mhakit"}
    assert "mhakit/exercises/mha/reference.py" in files


@pytest.mark.slow
def test_where_nothing_hides_the_course_results_json_says_refused(machine):
    # As if setup.sh had not set the file modes of the kit in the venv: the uid can read
    # it, and without Landlock and namespaces nothing else hides it.
    kit = [machine.site / "mhakit",
           *machine.site.glob("mha_kit-*.dist-info")]
    subprocess.run(["chmod", "-R", "o+rX", *map(str, kit)], check=True)
    try:
        refused = machine.grade(Attack("honest-sample-answers").make(), landlock=False)
        accepted = machine.grade(Attack("honest-sample-answers").make(), landlock=False,
                                 env={"MHAKIT_ALLOW_UNCONFINED": "1"})
    finally:
        done = machine.run("bash", "/autograder/source/setup.sh", "file-modes")
        assert done.returncode == 0, done.stderr
    assert refused["score"] == 0 and refused["tests"] == []
    assert refused["extra_data"]["status"] == "refused"
    assert refused["extra_data"]["error"].startswith("no layer here can hide the course")
    line = refused["output"]
    assert "\n" not in line and "Traceback" not in line
    assert "uid: without Landlock nothing bounds what the child writes" in line, line
    assert "export MHAKIT_ALLOW_UNCONFINED=1" in line
    # Accepting the risk grades, and says so.
    assert accepted["score"] == 100 and accepted["extra_data"]["confinement"] == "plain"
    assert "unconfined" in accepted["extra_data"]["status"]


def test_a_check_that_costs_nothing_says_why_on_gradescope(course):
    """Gradescope shows each test apart: a failed 0-point check there once read like
    one that cost points."""
    from mhakit.grader.grading import grade_notebook
    from mhakit.integrations.gradescope import for_gradescope

    result = grade_notebook(course / "submitted" / "bob_partly_correct" / "mha" / "mha.ipynb",
                            seed=3)
    shown = {test["name"]: test for test in for_gradescope(result)["tests"]}
    failed = [(test, shown[title]) for test, title in zip(
        result.tests, shown) if test.status == "failed"]
    free = [gradescope for test, gradescope in failed if not test.max_score]
    costly = [gradescope for test, gradescope in failed if test.max_score]
    assert free and costly
    assert all(test["output"].startswith("不扣分，只作反馈") for test in free)
    assert not any("不扣分" in test["output"] for test in costly)
