"""mhakit/lean_imports.py: what leaving out rfc3987_syntax's parsers rests on, and where."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

# The packages whose schemas a kit process may validate against: the notebook format,
# nbgrader, and Jupyter's server, events and Lab.
SCHEMA_PACKAGES = ("nbformat", "nbgrader", "jupyter_events", "jupyter_server",
                   "jupyterlab_server", "jupyterlab", "nbconvert", "jupyter_client")
IRI_FORMAT = re.compile(r"""["']?format["']?\s*:\s*["']?iri""")


def test_the_suites_own_processes_leave_the_parsers_out():
    """tests/__init__.py asks for it before pytest imports any test that imports
    nbformat: each worker, and each grader a test starts with `python -c`, saves 0.9 s."""
    assert "rfc3987_syntax" in sys.modules and sys.modules["rfc3987_syntax"] is None


@pytest.mark.parametrize("package", SCHEMA_PACKAGES)
def test_no_schema_of_jupyter_names_the_format_those_parsers_check(package):
    """Leaving the parsers out removes jsonschema's "iri" check alone: were a schema that
    a kit process validates against to name that format, its check would be skipped."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin, f"{package} is not installed"
    files = [path for path in Path(spec.origin).parent.rglob("*")
             if path.suffix in (".json", ".yaml", ".yml") and path.is_file()]
    naming = [str(path) for path in files
              if IRI_FORMAT.search(path.read_text(encoding="utf-8", errors="replace"))]
    assert naming == []
