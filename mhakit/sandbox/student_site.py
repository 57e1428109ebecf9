"""What a grading child reads: the system, Python, and the packages students may import,
gathered in a site of their own. The grader's side: trusted.
"""

import atexit
import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import numpy

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
    fails as it would in a kernel without it)."""
    roots = {module.split(".")[0] for module in packages}
    found, todo, seen = list(NUMPY_DIRS), sorted(roots - BUILT_INTO_CHILD), set()
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in distribution.requires or ():
            if "extra ==" not in requirement:  # extras are not installed for students
                todo.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())
        found += _top_level(distribution)
    return list(dict.fromkeys(found))


def _top_level(distribution):
    """The importable things a distribution installed at the top of its site-packages."""
    base = Path(distribution.locate_file(""))
    tops = {Path(str(f)).parts[0] for f in distribution.files or ()
            if not str(f).startswith("..")}
    return [base / top for top in sorted(tops)
            if not top.endswith((".dist-info", ".egg-info", ".pth")) and top != "__pycache__"
            and ((base / top).is_dir() or top.endswith((".py", ".so")))]


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
