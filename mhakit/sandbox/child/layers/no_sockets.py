"""One layer: a child without a network namespace makes no socket. Stdlib only.

Nothing it needs speaks to one, Landlock bounds TCP only from ABI 4 and never UDP, and a
Unix socket of the grader's uid (D-Bus, systemd's) would run commands outside every
layer. Its socket to the grader is handed to it already made. io_uring, which would make
a socket past the filter, goes too.
"""

import errno

ORDER = 80
NO_SOCKETS = [("socket", errno.EPERM, None)] + [
    (name, errno.ENOSYS, None) for name in ("io_uring_setup", "io_uring_enter", "io_uring_register")]
SAID = "seccomp: no new socket of any kind (TCP, UDP, Unix, raw)"


def wanted(mode):
    return not mode.namespaces


def plan(setting):
    if setting.mode.namespaces or setting.mode.name == "plain" or not setting.seccomp:
        return None
    return {}


def describe(_section):
    return [SAID]


def apply(_section, _plan):
    return NO_SOCKETS


# Every family, and a ring.
PROBE = """\
for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM),
                     (socket.AF_UNIX, socket.SOCK_STREAM)):
    attempt("socket", "of family %d" % family, lambda: socket.socket(family, kind).close())
rings()
"""
