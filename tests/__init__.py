# Every process of the suite that imports nbformat or nbgrader (the pytest workers, the
# graders they start with `python -c`) would spend about 0.9 s of CPU on format checks that
# nothing here uses, as the `mhakit` command would: see mhakit/lean_imports.py.
from mhakit.lean_imports import leave_out_costly_format_checks

leave_out_costly_format_checks()
