"""mhakit/selfcheck/notebook_file.py: a hostile notebook file is refused before reading
it costs the grading process much memory."""

import json
import subprocess
import sys

import pytest

from tests.attacks.corpus import Attack
from tests.attacks.on_the_class import _forty_megabytes_of_braces


GRADE_AND_MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run([sys.executable, "-c",
    "import json, sys; from mhakit.grader.grading import grade_notebook; "
    "print(json.dumps(grade_notebook(sys.argv[1], seed=1).as_json()['extra_data']))", sys.argv[1]],
    capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB, the grading process's
print(json.dumps({"extra": json.loads(done.stdout), "peak_kb": peak}))
"""


@pytest.mark.parametrize("name", ["forty-megabytes-of-braces", "a-million-empty-objects"])
def test_the_grading_process_bounds_its_memory_on_a_hostile_notebook(tmp_path, name):
    if name == "forty-megabytes-of-braces":
        data = _forty_megabytes_of_braces()
    else:  # 3 MB: under the size limit, over the limit on JSON containers
        data = Attack("braces", notebook=lambda nb: dict(nb, metadata={"x": "@@"})).make(
        ).replace(b'"@@"', b"[" + b"{}," * 1_000_000 + b"{}]")
    path = tmp_path / "mha.ipynb"
    path.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", GRADE_AND_MEASURE, str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    assert measured["extra"]["status"] == "unreadable"
    # Before the limits, the 40 MB file took the grading process to about 1 GB.
    assert measured["peak_kb"] < 300 << 10, measured["peak_kb"]
