"""Where a class run's results go: each place is one module of this package.

``batch.grade_folder`` finds the submissions and grades them; each result, once it is
final, goes to every sink (``take``), and when the class is done every sink hears the
whole class (``finish``). A sink module has:

- ``sink(run)``: the sink for this run, or None when the run does not want it (the
  gradebook's, without ``--gradebook``);
- ``FILES``: the names it writes beside the students' folders, which no student's folder
  may take (batch.RESERVED);
- ``ORDER``: where it comes among the others. The students' own files come first: a
  student whose files could not be written goes to the later sinks as not graded.

Each sink is given a ``sink.Run`` and takes ``sink.Taken`` results (``sink.Sink``). A new
output is a new module here, found by ``for_run``; nothing else changes.
"""

import importlib
import pkgutil


def _modules():
    found = [importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__)]
    return sorted(found, key=lambda module: (module.ORDER, module.__name__))


MODULES = _modules()
RESERVED = frozenset(name for module in MODULES for name in module.FILES)


def for_run(run):
    """The sinks this run writes to, in their ORDER."""
    return [made for module in MODULES if (made := module.sink(run)) is not None]
