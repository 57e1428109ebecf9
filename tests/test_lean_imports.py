"""mhakit/lean_imports.py: what leaving out jsonschema's costly format checks rests on, and
where."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from mhakit.lean_imports import LEFT_OUT

# The packages whose schemas a kit process may validate against: the notebook format,
# nbgrader, and Jupyter's server, events and Lab.
SCHEMA_PACKAGES = ("nbformat", "nbgrader", "jupyter_events", "jupyter_server",
                   "jupyterlab_server", "jupyterlab", "nbconvert", "jupyter_client")
# The formats whose checks are left out: "iri" (also "iri-reference") and "duration".
LEFT_OUT_FORMATS = re.compile(r"""["']?format["']?\s*:\s*["']?(iri|duration)""")


def test_the_suites_own_processes_leave_the_checks_out():
    """tests/__init__.py asks for it before pytest imports any test that imports
    nbformat: each worker, and each grader a test starts with `python -c`, saves 0.9 s."""
    for name in LEFT_OUT:
        assert name in sys.modules and sys.modules[name] is None, name


def test_jsonschema_then_has_no_check_for_those_formats_and_keeps_the_others():
    from jsonschema import FormatChecker

    formats = FormatChecker().checkers
    assert "duration" not in formats  # "iri" too, unless rfc3987 (not installed) checks it
    assert "iri" not in formats or importlib.util.find_spec("rfc3987") is not None
    assert {"email", "ipv4", "date", "regex"} <= set(formats)


@pytest.mark.parametrize("package", SCHEMA_PACKAGES)
def test_no_schema_of_jupyter_names_the_formats_left_out(package):
    """Leaving the packages out removes jsonschema's checks of those formats alone: were a
    schema that a kit process validates against to name one, its check would be skipped."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin, f"{package} is not installed"
    files = [path for path in Path(spec.origin).parent.rglob("*")
             if path.suffix in (".json", ".yaml", ".yml") and path.is_file()]
    naming = [str(path) for path in files
              if LEFT_OUT_FORMATS.search(path.read_text(encoding="utf-8", errors="replace"))]
    assert naming == []
