"""The kit's old package name, kept for one purpose: a course whose nbgrader_config.py was
written before the kit moved to ``mhakit`` still loads. nbgrader finds the kit's classes
by the dotted paths that file names, and these few modules give the old paths the same
classes. Nothing else lives here; `mhakit doctor` says which lines to rename.
"""

import warnings

OLD, NEW = "autograder.", "mhakit."


def moved(name):
    """Say, once per module, that ``name`` is an old path, and what it is now."""
    warnings.warn(f"nbgrader_config.py names {name}, the kit's old package: it is "
                  f"{NEW}{name.removeprefix(OLD)} now (`mhakit doctor` lists the lines)",
                  FutureWarning, stacklevel=3)
