"""mhakit demo: release, self-check, grade the bundled class, print the grade table."""

import pytest

from tests.integrations.test_cli import mhakit


@pytest.mark.slow
def test_the_demo_runs_end_to_end():
    done = mhakit("demo", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "9 of 9 parts pass." in done.stdout and "0 of 9 parts pass." in done.stdout
    alice = next(line for line in lines if "alice_correct" in line)
    carol = next(line for line in lines if "carol_unimplemented" in line)
    assert alice.split()[1] == "100" and carol.split()[1] == "0"
