"""The student's half of the kit, shipped in the release as ``mhakit_student``: the public
checks and the self-check, and the story's data, demonstrations and plots.

numpy and the standard library only; relative imports only, so the folder works under
any package name.
"""

from .runner import check, main

__all__ = ["check", "main"]
