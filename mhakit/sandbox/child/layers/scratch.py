"""One layer: the child's working folder, its scratch, and its bound. Stdlib only.

In the jail it is /scratch, on the child's own size-limited tmpfs (namespaces.py).
Without namespaces it is a folder of the host's, bounded by a tmpfs the grader mounted
on it, or else read-only under Landlock: see ../../scratch.py. The child starts there.
"""

import os

ORDER = 25  # once its root is built

TMPFS = "a size-limited tmpfs"
READ_ONLY = "Landlock: its folder is read-only, no file may be written"


def plan(setting):
    if setting.mode.namespaces:
        return {"path": "/scratch", "bytes": setting.limits.scratch_bytes, "how": TMPFS}
    if setting.mode.name == "plain":  # unconfined: the result says so once, elsewhere
        return {"path": str(setting.folder), "bytes": 0, "how": None}
    bounded = setting.scratch_bounded
    return {"path": str(setting.folder), "bytes": setting.limits.scratch_bytes * bounded,
            "how": TMPFS if bounded else READ_ONLY}


def describe(section):
    if section["how"] is None:
        return []
    return [f"scratch: at most {section['bytes'] >> 20} MB ({section['how']})"]


def apply(section, _plan):
    os.chdir(section["path"])


# The bound: a tmpfs no larger than it, or (at 0) no file written at all.
PROBE = """\
bound = secrets["layers"]["scratch"]["bytes"]
made = ".mhakit-probe-scratch-%d" % os.getpid()
try:
    os.close(os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.unlink(made)
    room = os.statvfs(".").f_blocks * os.statvfs(".").f_frsize
    if not bound or room > bound:
        seen.append("write %d bytes in its scratch, past its bound of %d" % (room, bound))
except OSError:
    pass
tried.append("a file in its scratch")
"""
