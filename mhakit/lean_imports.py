"""An import that the kit's own processes leave out, for the time it costs.

jsonschema checks the "iri" format with rfc3987_syntax when that is installed (Jupyter's
packages pull it in), and importing rfc3987_syntax builds dozens of Earley parsers: about
0.9 s of CPU in every process that imports nbformat or nbgrader, before anything runs
(python-jsonschema/jsonschema#1428). Neither nbformat nor nbgrader validates with a
format checker, and no schema they or Jupyter ship names that format.

This module imports nothing of the kit: the command line and the test suite call it first.
"""

import sys


def leave_out_iri_parsers() -> None:
    """Make jsonschema's own import of rfc3987_syntax fail, so that it skips that one
    format, as it does where the package is absent. Only this process is affected, and
    only if nothing has imported jsonschema yet."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
