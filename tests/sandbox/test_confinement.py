"""mhakit/sandbox/confinement.py: what a child may read, in each mode this machine
builds, and what happens to a grade where none can be built.

tests/sandbox/test_confinement_modes.py plays the modes as an instructor meets them, with
the whole attack corpus; these tests hold the pieces: the plans and the refusal. (What is
hidden, and how a grant leaves it out: test_hidden.py.)
(An accepted unconfined grade is flagged in the gradebook: tests/integrations/.)
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mhakit.sandbox import Limits, confinement, uids
from mhakit.sandbox.confinement import jail_works
from tests.attacks.corpus import ATTACKS
from tests.conftest import grade_answers
from tests.grader.test_grading import FULL, parts


CHILD_READS = """
import json, sys
from mhakit.sandbox import Limits, confinement, plan, uids
import tempfile, subprocess
mode = confinement.chosen_mode(Limits())
folder = tempfile.mkdtemp()
with uids.pool_uid_for(plan.MODES[mode]) as uid:
    config = plan.child_plan(mode, Limits(), plan.child_environment(), folder, pool_uid=uid)
    script = '''
import json, sys
seen = {}
for path in json.loads(sys.argv[-2]):
    try:
        with open(path, "rb") as handle:
            seen[path] = len(handle.read(10)) > 0
    except OSError:
        seen[path] = False
print(json.dumps(seen))
'''
    done = subprocess.run(plan.launcher_command(config, script, extra=[sys.argv[1]]),
                          capture_output=True, text=True, timeout=120)
import shutil
shutil.rmtree(folder, ignore_errors=True)
print(json.dumps({"mode": mode, "seen": json.loads(done.stdout or "{}"), "err": done.stderr}))
"""


@pytest.mark.parametrize("mode", ["jail", "userns", "landlock"])
def test_a_hidden_folder_inside_what_the_child_reads_stays_hidden(mode):
    """As a kit installed next to Python would be: here a stdlib folder, hidden with
    MHAKIT_HIDE, must not open in the child, while the rest of the stdlib does."""
    stdlib = Path(os.__file__).resolve().parent
    hidden, kept = stdlib / "email", stdlib / "json" / "__init__.py"
    paths = [str(hidden / "__init__.py"), str(kept)]
    done = subprocess.run([sys.executable, "-c", CHILD_READS, json.dumps(paths)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, MHAKIT_SANDBOX=mode, MHAKIT_HIDE=str(hidden)))
    if done.returncode != 0 and "Unconfined" in done.stderr and not os.environ.get("CI"):
        pytest.skip(f"this machine cannot build {mode}")
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer["mode"] == mode
    assert answer["seen"] == {paths[0]: False, paths[1]: True}, answer["err"][-2000:]


def test_elsewhere_than_linux_plain_mode_warns_once_per_run():
    script = ("import sys; from mhakit.sandbox import Limits, confinement; "
              "sys.platform = 'darwin'; "
              "print(confinement.chosen_mode(Limits()), confinement.chosen_mode(Limits()))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MHAKIT_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["plain", "plain"]
    assert done.stderr.count("grading unconfined") == 1, done.stderr
    assert "no confinement on this system" in done.stderr


def test_modules_imported_late_still_load_in_the_child(reference_answers):
    """numpy loads some submodules on first use, and students import the standard library:
    both must be found inside the jail, where the child has only Python and numpy."""
    late = ("import statistics, fractions\n"
            "def softmax(x, axis=-1):\n"
            "    np.fft.fft(np.ones(2)); np.polynomial.Polynomial([1, 2]); np.random.default_rng(0)\n"
            "    statistics.mean([1, 2]); fractions.Fraction(1, 3)\n"
            "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n"
            "    return e / np.sum(e, axis=axis, keepdims=True)\n")
    result = grade_answers(dict(reference_answers, answer_softmax=late))
    assert parts(result)["softmax"] == FULL["softmax"], [
        t.output for t in result.tests if t.name.startswith("softmax")][:2]
    assert result.extra["load_errors"] == {}


# ------------------------------------------------ where no mode confines the child

GRADE_ONE = ("import json, sys; from mhakit.grader.grading import grade_notebook; "
             "r = grade_notebook(sys.argv[1], seed=1).as_json(); "
             "print(json.dumps([r['score'], r['extra_data']]))")


def test_unconfined_grading_is_refused_unless_the_risk_is_accepted(tmp_path):
    path = tmp_path / "mha.ipynb"
    path.write_bytes(ATTACKS[0].make())
    plain = dict(os.environ, MHAKIT_SANDBOX="plain")
    refused = subprocess.run([sys.executable, "-c", GRADE_ONE, str(path)], capture_output=True,
                             text=True, env=plain, timeout=300)
    assert refused.returncode == 0, refused.stderr
    import json
    _, extra = json.loads(refused.stdout)
    assert extra["status"] == "grading failed" and "refusing to grade" in extra["error"]
    accepted = subprocess.run([sys.executable, "-c", GRADE_ONE, str(path)], capture_output=True,
                              text=True, env=dict(plain, MHAKIT_ALLOW_UNCONFINED="1"),
                              timeout=300)
    assert accepted.returncode == 0, accepted.stderr
    score, extra = json.loads(accepted.stdout)
    assert score == 100 - FULL["softmax"]
    assert extra["confinement"] == "plain"
    assert any(layer.startswith("UNCONFINED") for layer in extra["isolation"])
    assert not any("namespace" in layer or "Landlock" in layer for layer in extra["isolation"])


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI runs as root on Linux; elsewhere "
                    "the jail may rightly be unavailable")
def test_in_ci_the_jail_is_in_force():
    assert jail_works(Limits()), f"the jail could not be built: {confinement.choice(Limits()).problems}"


def test_a_uid_given_back_is_lent_again_without_a_search(tmp_path, monkeypatch):
    searched = []
    monkeypatch.setattr(uids, "processes_of_uid", lambda uid: searched.append(uid) or [])
    pool = uids.UidPool(base=64900, folder=tmp_path)
    first, second = pool.lend(), pool.lend()
    assert first[0] != second[0] and len(searched) == 2  # two children, two uids
    pool.give_back(first)
    assert pool.lend() == first and len(searched) == 2  # kept locked: no search
    # Its lock is still held: another grader's pool cannot take it meanwhile.
    other = uids.UidPool(base=64900, folder=tmp_path)
    assert other.lend()[0] not in (first[0], second[0])


def test_a_uid_that_was_not_given_back_is_searched_for_again(tmp_path, monkeypatch):
    busy = set()
    monkeypatch.setattr(uids, "processes_of_uid", lambda uid: [1] if uid in busy else [])
    pool = uids.UidPool(base=64900, folder=tmp_path)
    uid, handle = pool.lend()
    handle.close()  # given up, not given back: a process of it may be left
    busy.add(uid)
    assert pool.lend()[0] != uid


def test_a_forked_copy_of_the_grader_never_uses_the_uids_its_parent_keeps(tmp_path, monkeypatch):
    monkeypatch.setattr(uids, "processes_of_uid", lambda uid: [])
    pool = uids.UidPool(base=64900, folder=tmp_path)
    kept = pool.lend()
    pool.give_back(kept)
    monkeypatch.setattr(pool, "_kept_by", -1)  # as a fork sees it: another process kept it
    assert pool.lend()[0] != kept[0]  # the parent still holds its lock
