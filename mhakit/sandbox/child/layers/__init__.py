"""The child's confinement, one layer per file. Each file is stdlib only: the launcher
(../launcher.py) and the zygote load it by its path, where nothing of the kit can be
imported, and the grader imports it as a module of this package.

A layer file says everything about its layer:

- ``ORDER``: when it applies, lowest first (the cgroup before the root moves; the uid
  after Landlock, whose rules the grader's uid opens; the resource limits after the uid);
- ``plan(setting)``, the grader's side: its section of the child's plan, a dict that
  crosses as JSON, or None where the mode does not build it. ``setting`` is the
  sandbox's Setting (../../plan.py): the mode, the limits, the folder, the uid;
- ``apply(section, plan)``, in the child: builds the layer from its section, or raises,
  and the child does not run. It returns the seccomp refusals the layer wants (see
  ../seccomp.py), or None: the launcher installs one filter of them all, last, because a
  filter stacked on another would run on every call the child makes;
- ``enter(section)``, optional, in the process that stays behind as the waiter, before
  it forks the child;
- ``describe(section)``: the layer in plain words, for every result;
- ``PROBE`` and ``wanted(mode)``, optional: what the probe child tries (Python;
  ../../probe.py says which names it may use), in the modes that must have the layer,
  built or not (without ``wanted``: every mode that is probed). A mode whose probe child
  gets through is not used: a plan that lost a layer is refused, not trusted;
- ``CALLS``, optional: {architecture: {call: number}} for calls its refusals name that
  ../seccomp.py does not number.

A new layer is a new file here; nothing else lists the layers.
"""

import importlib
import pkgutil


def all_layers():
    """{name: module}, in the order the layers apply."""
    found = [importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__)]
    return {module.__name__.rpartition(".")[2]: module
            for module in sorted(found, key=lambda module: module.ORDER)}
