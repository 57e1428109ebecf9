"""The public half of the graders, shipped to students as ``mhakit_selfcheck``.

numpy and the standard library only; relative imports only, so the folder works under
any package name.
"""

from .runner import check, main

__all__ = ["check", "main"]
