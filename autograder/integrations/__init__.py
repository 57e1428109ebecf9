"""See autograder/__init__.py: old dotted paths of the kit's nbgrader classes."""
