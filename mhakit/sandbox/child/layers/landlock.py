"""One layer: Landlock, the kernel's unprivileged file and network sandbox. Stdlib only.

Any process may restrict itself, root or not, inside namespaces or not, so this layer
holds on its own where the others cannot be built (a container that forbids namespaces,
an instructor's own account). Once restricted, the child and whatever it execs or forks
can open only the files below the folders it was given, may not bind or connect TCP
sockets (ABI 4 and later) and may not signal, or reach the abstract sockets of, any
process outside its domain (ABI 6 and later). Landlock also refuses ptrace, and so
/proc/<pid>/cwd, root, fd and environ, of processes outside the domain.

Landlock does not hide that a path exists (stat still works); it refuses to open it. The
grader decides what is readable (../../hidden.py); this layer grants it and no more. It
is added to every mode where the kernel has it, so that it holds on its own when another
layer cannot be built.
"""

import ctypes
import os
import stat

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION, RULE_PATH_BENEATH = 1, 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3 and 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1          # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM
         | MAKE_FIFO | MAKE_SOCK | REFER | TRUNCATE)
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # rights a file can hold

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
ORDER = 30


def plan(setting):
    """The rules: in the jail, all it sees (inside its own root, everything is meant for
    it) and its scratch to write; without one, the system, Python and the packages it
    may import, minus the course, and its scratch to write where that is bounded (else
    nothing: an unbounded folder is read-only)."""
    version = setting.landlock_abi
    if not version:
        return None
    if setting.mode.namespaces:
        return {"abi": version, "read": ["/"], "write": ["/scratch", "/dev/null"], "list": [],
                "listable": []}
    scratch, bounded = str(setting.folder), setting.scratch_bounded
    granted = setting.grants
    return {"abi": version, "write": [scratch] * bounded + ["/dev/null"],
            "read": granted["read"] + [scratch] * (not bounded),
            "list": granted["list"], "listable": granted["listable"]}


def describe(section):
    version = section["abi"]
    return [f"Landlock (ABI {version}): opens files only of the system, Python and numpy, "
            "writes only its scratch folder",
            "Landlock: no TCP bind or connect" if version >= 4
            else f"Landlock ABI {version} has no network rule (ABI 4 has)",
            "Landlock: no signals or abstract sockets outside its domain" if version >= 6
            else f"Landlock ABI {version} has no signal scope (ABI 6 has)"] + [
        f"Landlock: the names in {path} can be listed, not opened"
        for path in section["listable"]]


def apply(section, _plan):
    restrict(section["read"], section["write"], section["abi"], section["list"])


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi():
    """The Landlock ABI this kernel offers; 0 when it has none, or forbids it."""
    return max(int(LIBC.syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)), 0)


def _check(result, what):
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"landlock {what}: {os.strerror(number)}")
    return result


def handled(version):
    """(file rights, network rights, scopes) that this ABI can restrict."""
    files = (1 << 13) - 1
    files |= (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)
    files |= IOCTL_DEV if version >= 5 else 0
    network = NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0
    scopes = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    return files, network, scopes


def restrict(read, write, version, list_only=()):
    """Restrict this process: read (and execute) below ``read``, write below ``write``,
    list the folders below ``list_only``, no TCP, no signals out; each as far as
    ``version`` allows. A path that does not exist is left out; anything else that fails
    raises, and the child must then not run."""
    files, network, scopes = handled(version)
    attr = RulesetAttr(files, network, scopes)
    size = 8 if version < 4 else 16 if version < 6 else 24  # what older kernels know of it
    ruleset = _check(LIBC.syscall(CREATE_RULESET, ctypes.byref(attr), size, 0), "ruleset")
    try:
        for paths, rights in ((list_only, READ_DIR), (read, READ), (write, WRITE)):
            for path in paths:
                _add(ruleset, path, rights & files)
        _check(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(LIBC.syscall(RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


def _add(ruleset, path, rights):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_ONLY
        rule = PathBeneathAttr(rights, fd)
        _check(LIBC.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0),
               f"rule for {path}")
    finally:
        os.close(fd)
