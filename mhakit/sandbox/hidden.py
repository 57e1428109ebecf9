"""What a grading child must never read, and how each mode keeps it out of reach.

The sandbox knows nothing of exercises or graders: it is told. Whoever holds a secret
(an exercise's folder and reference, when it loads) calls ``hide`` before the first
child is planned. To what it is told it adds what it can see for itself: the kit's own
folder, the folder the grader works in, nbgrader's default exchange and whatever
``MHAKIT_HIDE`` names (os.pathsep between).

A told file is also a sentinel: the probe child (probe.py) must fail to open it.
"""

import functools
import os
from pathlib import Path

from ..settings import settings

KIT = Path(__file__).resolve().parents[1]
NBGRADER_EXCHANGE = Path("/usr/local/share/nbgrader/exchange")  # nbgrader's default, in /usr
_TOLD: dict[str, list] = {"paths": [], "sentinels": []}


def hide(*paths, sentinels=()):
    """From now on no child may read ``paths`` (folders or files); ``sentinels`` are files
    among them that the probe tries to open. Told twice, a path counts once."""
    for key, given in (("paths", paths), ("sentinels", sentinels)):
        for path in given:
            real = Path(os.path.realpath(path))
            if real not in _TOLD[key]:
                _TOLD[key].append(real)


def sentinels():
    """The files the probe must fail to open: this very file (the kit's), and those told."""
    return [Path(__file__).resolve(), *_TOLD["sentinels"]]


def course_paths():
    """Every path a child must never read: what it was told, and what it sees itself."""
    key = (os.getcwd(), settings().hide, NBGRADER_EXCHANGE.exists(), tuple(_TOLD["paths"]))
    return list(_course_paths(*key))


@functools.lru_cache(maxsize=8)
def _course_paths(cwd, named, exchange, told):
    # Every child's plan asks, twice; resolving the paths is most of what that costs.
    cwd = Path(cwd).resolve()
    paths = [KIT, *told]
    if not Path("/usr").is_relative_to(cwd):  # grading from / or /usr: not a secret
        paths.append(cwd)
    paths += [NBGRADER_EXCHANGE] if exchange else []
    paths += [Path(p) for p in named]
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in paths if p is not None))


def without(roots, hidden):
    """({"read": paths, "list": folders}): the same files as ``roots``, less every path of
    ``hidden`` inside one of them. Landlock only grants, and a grant holds for a whole
    tree, so a root that holds a hidden path is replaced by its entries, recursively; the
    folders so split may only be listed, since Python's importer lists the folders it
    imports from. (Listing is granted down their trees: the names in a hidden folder
    inside a root can be listed, never opened.)"""
    hidden = {os.path.realpath(p) for p in hidden}
    granted, split = [], []

    def grant(path):
        real = os.path.realpath(path)
        if real in hidden:
            return
        if not any(h.startswith(real.rstrip("/") + "/") for h in hidden):
            granted.append(real)
            return
        try:
            entries = sorted(os.listdir(real))
        except OSError:
            return
        split.append(real)
        for entry in entries:
            grant(os.path.join(real, entry))

    for root in roots:
        # A root inside a hidden folder (numpy in a virtual environment inside the
        # course) is granted alone: the rest of that folder stays hidden.
        grant(root)
    return {"read": list(dict.fromkeys(granted)), "list": list(dict.fromkeys(split))}


@functools.lru_cache(maxsize=8)
def grants(roots, hidden):
    # ``without`` lists folders; every child of a run asks with the same paths. A file
    # made later in a folder so listed is left out: denied, never shown.
    return without(roots, hidden)


def listable(split):
    """Hidden paths whose names the child may list, below the folders ``split`` that
    Landlock lets it list (see ``without``)."""
    return [str(h) for h in course_paths()
            if any(str(h).startswith(folder.rstrip("/") + "/") for folder in split)]


def covered(binds, hidden):
    """Hidden paths that a bind would show, to be covered in the jail."""
    return [str(h) for h in hidden
            if any(str(h).startswith(source.rstrip("/") + "/") for source, _ in binds)]
