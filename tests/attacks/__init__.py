"""The attack corpus: submissions that try to fool or break the grader (shared data, not
tests). corpus.py defines an Attack and gathers the attacks of each class from the on_*.py
files, which import from it: so corpus is imported first, whichever module a test names.
"""

from . import corpus  # noqa: F401 - first: it gathers on_*.py, which import from it
