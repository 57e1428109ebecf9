"""nbgrader's command line as the kit runs it, without two costs that do nothing for it.

``python -m mhakit.authoring.nbgrader_command ARGS`` runs ``nbgrader ARGS`` in this
interpreter, as ``python -m nbgrader ARGS`` does, except that:

- jsonschema leaves out its costly format checks (see lean_imports.py): about 0.9 s of
  CPU in every nbgrader process;
- a gradebook that nbgrader creates learns the revision of its tables (alembic's head)
  from alembic's scripts, read here. nbgrader asks a new process, ``alembic heads``, which
  imports nbgrader all over again: about 2.5 s, once per new course.

Instructors run nbgrader themselves as usual; this is for the kit's own builds (``mhakit
build``, the demo, the test suite's courses).
"""

import runpy
import sys

from ..lean_imports import leave_out_costly_format_checks


def command(*args: str) -> list[str]:
    """The command line that runs ``nbgrader *args`` this way."""
    return [sys.executable, "-m", __name__, *args]


def alembic_head() -> str:
    """The revision ``alembic heads`` prints for nbgrader's scripts, which is what
    nbgrader's ``get_alembic_version`` reads from it."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    head = ScriptDirectory(ALEMBIC_DIR).get_current_head()
    if head is None:
        raise RuntimeError(f"nbgrader's alembic scripts in {ALEMBIC_DIR} have no head")
    return head


def main() -> None:
    leave_out_costly_format_checks()
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head
    sys.argv = ["nbgrader", *sys.argv[1:]]
    runpy.run_module("nbgrader", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
