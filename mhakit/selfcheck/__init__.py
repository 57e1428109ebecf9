"""The self-check, shipped in every release as ``mhakit_student``: the checks' framework,
their runner, the engine's words and the notebook reader. The exercise's shipped package
ships beside it as ``mhakit_student.exercise``.

numpy and the standard library only (IPython's input transformer where it is installed,
as in every Jupyter kernel: see ipython_syntax.py); relative imports only, so the folder
works under any package name.
"""

from .runner import check, main

__all__ = ["check", "main"]
