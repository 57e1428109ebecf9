"""自查作业 | Self-check for the assignment.

    python selfcheck.py mha.ipynb

checks the saved notebook with the public checks, prints a table and exits non-zero
while anything fails. Inside the notebook, `check()` does the same for the functions as
they are defined right now. Needs only numpy.
"""

import sys

from mhakit_student import check, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
