"""What a grading child reads: the system, Python, and the packages students may import,
gathered in a site of their own. The grader's side: trusted.
"""

import atexit
import functools
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import numpy

from ..selfcheck.imports import needed_distributions, top_level

PYTHON_PREFIX = Path(os.path.realpath(sys.base_prefix))
PYTHON_BINARY = Path(os.path.realpath(sys.executable))
NUMPY_DIRS = [p for p in (Path(numpy.__file__).parent,
                          Path(numpy.__file__).parent.with_name("numpy.libs")) if p.is_dir()]


def readable_roots(packages=("numpy",)):
    """The folders a child reads: the system, Python, and the ``packages`` students may
    import (the site that holds only those, and what its links point to)."""
    roots = ["/usr", str(PYTHON_PREFIX), str(student_site(packages))]
    roots += [str(d) for d in student_dirs(packages)]
    roots += [f"/{name}" for name in ("bin", "lib", "lib64", "sbin")
              if Path(f"/{name}").is_dir() and not Path(f"/{name}").is_symlink()]
    return list(dict.fromkeys(roots))


# Offered by the child's runtime itself, inert (selfcheck/inert_ipython.py): the real
# IPython would bring a shell that starts processes.
BUILT_INTO_CHILD = {"IPython"}


@functools.lru_cache(maxsize=8)
def student_dirs(packages):
    """The folders and modules of ``packages`` (modules, as an exercise's STUDENT_IMPORTS
    names them: each brings its whole package) and of every package they need, as
    installed here: numpy always, and what is not installed is left out (its import then
    fails as it would in a kernel without it). The self-check offers the same
    (selfcheck/imports.py)."""
    roots = {module.split(".")[0] for module in packages} - BUILT_INTO_CHILD
    found = list(NUMPY_DIRS)
    for distribution in needed_distributions(tuple(sorted(roots))):
        found += top_level(distribution)
    return list(dict.fromkeys(found))


@functools.lru_cache(maxsize=8)
def student_site(packages=("numpy",)):
    """A folder that holds the packages students may import (numpy, and what
    ``student_dirs`` finds) and nothing else: the child's only entry on sys.path. (The
    real site-packages also holds the kit.) One per user and package set, shared by every
    grading process: a grading worker ends without running atexit, so a folder of its
    own would outlive it."""
    dirs = student_dirs(tuple(packages))
    key = hashlib.sha256("\0".join(map(str, dirs)).encode()).hexdigest()[:12]
    site = Path(tempfile.gettempdir()) / f"mhakit-site-{os.getuid()}-{key}"
    if _is_student_site(site, dirs):
        return site
    fresh = Path(tempfile.mkdtemp(prefix="mhakit-site-"))
    fresh.chmod(0o755)  # the child's uid must read it; mkdtemp makes it private to root
    for folder in dirs:
        (fresh / folder.name).symlink_to(folder)
    try:
        os.rename(fresh, site)  # atomic: of two processes, one wins and both use it
    except OSError:
        pass
    if _is_student_site(site, dirs):
        shutil.rmtree(fresh, ignore_errors=True)
        return site
    # The shared name is taken by something else: this process keeps a folder of its own.
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    return fresh


def _is_student_site(site, dirs):
    """Whether ``site`` is ours, writable by us alone, and holds just the links to ``dirs``."""
    try:
        info = os.lstat(site)
        links = {entry.name: os.readlink(entry) for entry in os.scandir(site)}
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o022
            and links == {folder.name: str(folder) for folder in dirs})
