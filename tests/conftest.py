import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mhakit.authoring.build import generate_release, write_source
from mhakit.authoring.nbgrader_command import command as nbgrader_command
from mhakit.grader.grading import grade_cells
from mhakit.authoring.sample_class import write_sample_class
from tests import worker_groups
from tests.mha_exercise import EXERCISE, sample_answers

REPO = Path(__file__).resolve().parent.parent
ANSWER_ORDER = ["answer_dot_product", "answer_attention_scores", "answer_softmax",
                "answer_attention", "answer_split_heads", "answer_concat_heads",
                "answer_output_projection", "answer_multi_head_attention"] + [
                    f"answer_quiz_{n}" for n in range(1, 7)]
# The suite's own nbgrader commands: nbgrader's, minus the two costs that
# mhakit/authoring/nbgrader_command.py leaves out (no test's outcome depends on them, and
# they were about 15% of a full run's CPU). The README's test and the hub's course run
# nbgrader as an instructor does.
NBGRADER = nbgrader_command()


# A parallel run's groups of tests (tests/worker_groups.py).
def pytest_configure(config):
    worker_groups.configure(config)


def pytest_unconfigure(config):
    worker_groups.unconfigure(config)
    building = config.stash.get(COURSE_BUILDING, None)
    if building is not None:
        building.join()


COURSE_BUILDING = pytest.StashKey[threading.Thread]()


def pytest_sessionstart(session):
    """In the controller of a parallel run of the whole suite: the shared course
    (``course``), built in a thread while the workers start and collect, instead of by the
    first worker that asks for it while the others wait (9 s alone, 20 s and more in a
    busy run). A build that fails here is made again by that worker, which then says why."""
    config = session.config
    factory = getattr(config, "_tmp_path_factory", None)
    whole_suite = any(Path(arg).resolve() == REPO / "tests" for arg in config.args)
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None) \
            or factory is None or not whole_suite:
        return
    building = threading.Thread(target=built_once, args=(factory, "course", _build_course),
                                name="course", daemon=True)
    building.start()
    config.stash[COURSE_BUILDING] = building


@pytest.hookimpl(optionalhook=True)  # xdist's: -p no:xdist leaves it out
def pytest_configure_node(node):
    worker_groups.configure_node(node)


def pytest_collection_modifyitems(config, items):
    worker_groups.record(config, items)


@pytest.hookimpl(optionalhook=True)  # xdist's: -p no:xdist leaves it out
def pytest_xdist_make_scheduler(config, log):
    return worker_groups.scheduler(config, log)


@pytest.fixture(scope="session", autouse=True)
def private_answers():
    """The kit's answers kept from other accounts, as the README has an instructor keep
    them: every grading door refuses where other people's accounts can read them, and a
    machine may have such accounts (some tests make them). They stay private after the
    run: putting the modes back would open them under a run that is still going."""
    for folder in [*EXERCISE.hidden_paths(), REPO / "tests" / "second_exercise"]:
        for path in [Path(folder), *Path(folder).rglob("*")]:
            if not path.is_symlink():
                os.chmod(path, stat.S_IMODE(path.lstat().st_mode) & ~0o077)


@pytest.fixture(scope="session")
def reference_answers():
    return sample_answers()["alice_correct"]


def grade_answers(answers, seed=1, **kwargs):
    """Grade a dict {answer cell id: source}, in the notebook's cell order."""
    cells = [(cell_id, answers[cell_id]) for cell_id in ANSWER_ORDER if cell_id in answers]
    cells += [(cell_id, src) for cell_id, src in answers.items()
              if cell_id not in ANSWER_ORDER and not cell_id.startswith("written_")]
    return grade_cells(cells, seed=seed, **kwargs)


def built_once(tmp_path_factory, name, build):
    """The folder ``name`` as ``build(folder)`` makes it, built once for the whole run: the
    workers of a parallel run share it, the first to ask building it while the others wait
    on a lock. (Each worker built its own course before: two runs of nbgrader, 23 s as the
    setup of a worker's first test that took the course, in a parallel run.)"""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's own folder, above each worker's
    folder, done = base / name, base / f"{name}.built"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def _build_course(root):
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    write_source(EXERCISE, root)
    generate_release(root, "mha_en")
    release = generate_release(root, "mha")
    write_sample_class(EXERCISE, release / "mha.ipynb", root / "submitted")


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    """A fresh nbgrader course folder: source, release and the sample class. Shared by all
    the tests of a run, in whatever order a parallel run gives them: a test that writes
    into it works on a copy, and the run fails at the end if one did not."""
    root = built_once(tmp_path_factory, "course", _build_course)
    before = files_under(root, ".")
    yield root
    changed = sorted(set(before.items()) ^ set(files_under(root, ".").items()))
    changed = [name for name, _ in changed if "__pycache__" not in Path(name).parts]
    assert not changed, f"a test changed the shared course: {changed[:10]}"


def files_under(root, *folders):
    """{file in ``folders`` of ``root``, relative to it: a digest of its bytes}."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for folder in folders for path in sorted((root / folder).rglob("*"))
            if path.is_file()}


@pytest.fixture(scope="session")
def numpy_only_python(tmp_path_factory):
    """A Python whose environment holds numpy and nothing else, as a student's might."""
    venv = tmp_path_factory.mktemp("numpy-only-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    import numpy
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"numpy=={numpy.__version__}"], check=True)
    return python


# Debian's Chromium, and one Playwright browser for the whole run: the browser tests and
# the hub test (tests/hub/) share it, since a second sync Playwright cannot start while
# the first one's event loop runs.
@pytest.fixture(scope="session")
def chromium_path():
    from .browser.conftest import ARTIFACTS, USED, chromium_version

    path = shutil.which("chromium")
    if path is None:
        message = ("Debian's chromium is not installed: `apt-get install -y chromium` "
                   "(Playwright's own browser download does not work here)")
        # .ci/run sets MHAKIT_BROWSER_REQUIRED, whether or not the CI system sets CI.
        if os.environ.get("CI") or os.environ.get("MHAKIT_BROWSER_REQUIRED"):
            pytest.fail(f"CI must run the browser tests. {message}")
        pytest.skip(message)
    USED["chromium"] = chromium_version()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "chromium-version.txt").write_text(USED["chromium"] + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import expect, sync_playwright

    from .browser.conftest import CHROMIUM_ARGS, TIMEOUT_MS

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        expect.set_options(timeout=TIMEOUT_MS)
        yield launched
        launched.close()
