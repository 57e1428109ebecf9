"""Imports that the kit's own processes leave out, for the time they cost.

jsonschema checks some string formats with optional packages, each imported as
jsonschema loads when it is installed (Jupyter's packages pull them in). Two of them cost
far more than the rest:

- "iri", checked with rfc3987_syntax, whose import builds dozens of Earley parsers: about
  0.9 s of CPU (python-jsonschema/jsonschema#1428);
- "duration", checked with isoduration, which imports arrow: about 25 ms.

That is paid in every process that imports nbformat or nbgrader, before anything runs.
Neither nbformat nor nbgrader validates with a format checker, and no schema they or
Jupyter ship names either format (tests/test_lean_imports.py looks).

This module imports nothing of the kit: the command line and the test suite call it first.
"""

import sys

# The packages behind those two formats, by the names jsonschema imports them with.
LEFT_OUT = ("rfc3987_syntax", "isoduration")


def leave_out_costly_format_checks() -> None:
    """Make jsonschema's own imports of ``LEFT_OUT`` fail, so that it skips those formats,
    as it does where the packages are absent. Only this process is affected, and only if
    nothing has imported jsonschema yet."""
    for name in LEFT_OUT:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
