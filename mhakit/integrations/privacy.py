"""Whether other accounts can read what only the instructor may: checked before grading.

A course holds the answers (``source/``, and in a clone the reference and the hidden
cases), every student's work (``submitted/``, ``autograded/``, ``feedback/``) and the
grades (``gradebook.db``, ``mhakit-results/``). The kit's own answer files (the exercise's
package: hidden cases, catalogue, quiz key; and the reference's package) are found from
the imported modules, wherever they are installed.

"Can read" is decided as the kernel decides it, for every account but root and the
grader: a path is exposed when some such account may search every folder above it and
read it (list it, for a folder). Each account is judged by its own class of the mode
bits (owner, group, other), with the members of each file's group from the account
database, and by the file's POSIX ACL, read from its ``system.posix_acl_access``
attribute (no ``getfacl`` needed; a filesystem without ACLs has none). Accounts outside
the database (a pool uid, say) get the "other" bits, as any unnamed account would.

Cost: the course's folders are walked only where someone else may search them, to three
levels, and each walk stops at the first exposed path. A private course (0700) costs a
few ``lstat`` calls whatever its size; an exposed one stops at its first open folder.

A kit installed where other accounts can read it (a shared environment, as a
JupyterHub administrator installs packages: site-packages at 0755/0644) puts the
answers in the open. pip keeps no restrictive file modes, and a wheel has no install
step that could set them, so the kit cannot make its installed files private by
itself. Two things guard instead: the README installs the kit editable from the
instructor's private course (so the answers live only there), and this check names
installed answer files that others can read, with the fix (``chmod``, when the grader
owns them; otherwise installing the kit in the instructor's own environment). Taking
the answers out of the installed package is a change of layout, left to its own issue.
"""

import grp
import logging
import os
import pwd
import shlex
import stat
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

log = logging.getLogger(__name__)

READ, SEARCH = 4, 1
# The course's parts that hold answers, students' work or grades (gradebook.db where
# gradebook.database_url puts it); the submissions' folders are walked to the depth of
# <student>/<assignment>/<file>.
COURSE_PARTS = {"source": 3, "gradebook.db": 0, "submitted": 3, "autograded": 3,
                "feedback": 3, "mhakit-results": 2}
NOT_A_LOGIN = {"", "nologin", "false", "true", "sync", "shutdown", "halt"}
SHOWN = 3  # exposed paths named in the line
ACL_ATTRIBUTE = "system.posix_acl_access"
ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK = 0x02, 0x04, 0x08, 0x10


@dataclass(frozen=True)
class Exposure:
    line: str      # one line: what other accounts can read, and the command that fixes it
    refuses: bool  # grading must stop (other human accounts exist, and not allowed)


def course_exposure(course, *, allow_shared=False):
    """None when no other account can read the course's private parts or the kit's
    answers; else what they can read, refusing where other people have accounts here.
    ``course`` None: the kit's answers alone (a grading run that writes no course)."""
    course = Path(course).resolve() if course is not None else None
    judge = Judge()
    found = {}
    for target, depth in targets(course):
        first = judge.first_exposed(target, depth)
        if first:
            found[target] = first
    if not found:
        return None
    humans = other_humans()
    line = exposure_line(course, found, judge)
    if humans:
        more = f" and {len(humans) - SHOWN} more" if len(humans) > SHOWN else ""
        line += f" (other people have accounts here: {', '.join(humans[:SHOWN])}{more})"
    return Exposure(line=line, refuses=bool(humans) and not allow_shared)


def targets(course):
    """(path, how deep to walk it): the course itself (its own mode), its private parts,
    and the kit's answer folders, whole."""
    found = [] if course is None else [(course, 0)] + [
        ((course / name).resolve(), depth) for name, depth in COURSE_PARTS.items()]
    return found + [(folder, 8) for folder in answer_roots()]


def answer_roots():
    """The folders of the answers as imported: each loaded exercise's package and its
    reference's package, outside the course or in it."""
    from ..exercise import course_exercises, loaded

    folders = [path for exercise in [*course_exercises(), *loaded()]
               for path in exercise.hidden_paths()]
    return list(dict.fromkeys(Path(path).resolve() for path in folders))


def exposure_line(course, found, judge):
    exposed = list(found.values())
    shown = [f"{path} ({stat.filemode(judge.info(path).st_mode)})" for path in exposed[:SHOWN]]
    more = f" and {len(exposed) - SHOWN} more" if len(exposed) > SHOWN else ""
    roots = list(dict.fromkeys(course if course and target.is_relative_to(course)
                               else target for target in found))
    mine = [root for root in roots if judge.info(root).st_uid == os.geteuid()]
    fix = f"run `chmod -R go-rwx {' '.join(shlex.quote(str(root)) for root in mine)}`"
    if len(mine) < len(roots):
        fix = ("install mha-kit in your own environment (`pip install -e .` in your course)"
               " and remove the shared copy" + (f", and {fix}" if mine else ""))
    return f"other accounts can read {', '.join(shown)}{more}: {fix}"


def other_humans():
    """The names of the accounts, other than the grader's, that people log in with."""
    first, last = login_uid_range()
    me = os.geteuid()
    return sorted(entry.pw_name for entry in pwd.getpwall()
                  if first <= entry.pw_uid <= last and entry.pw_uid != me
                  and os.path.basename(entry.pw_shell) not in NOT_A_LOGIN)


def login_uid_range(defs="/etc/login.defs"):
    """(UID_MIN, UID_MAX) of the system's people, as useradd reads them."""
    found = {"UID_MIN": 1000, "UID_MAX": 60000}
    try:
        lines = Path(defs).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for words in (line.split() for line in lines):
        if len(words) >= 2 and words[0] in found and words[1].isdigit():
            found[words[0]] = int(words[1])
    return found["UID_MIN"], found["UID_MAX"]


class Judge:
    """The kernel's permission check, for every account but root and the grader, over
    the paths of one run (their ``lstat`` and ACLs read once)."""

    STRANGER = -1  # any account the database does not single out: the "other" bits

    def __init__(self):
        self.me = os.geteuid()
        self.stats, self.acls, self.reach, self.chains, self.groups = {}, {}, {}, {}, {}

    @cached_property
    def members(self):
        """{gid: uids of its members}, primary groups included."""
        names = {entry.pw_name: entry.pw_uid for entry in pwd.getpwall()}
        members = {}
        for entry in pwd.getpwall():
            members.setdefault(entry.pw_gid, set()).add(entry.pw_uid)
        for group in grp.getgrall():
            members.setdefault(group.gr_gid, set()).update(
                names[name] for name in group.gr_mem if name in names)
        return members

    def groups_of(self, uid):
        if uid not in self.groups:
            self.groups[uid] = {gid for gid, uids in self.members.items() if uid in uids}
        return self.groups[uid]

    def info(self, path):
        if path not in self.stats:
            self.stats[path] = os.lstat(path)
        return self.stats[path]

    def acl(self, path):
        """{tag: {id: permission}} of the file's access ACL, or None."""
        if path not in self.acls:
            self.acls[path] = read_acl(path)
        return self.acls[path]

    def accounts(self, path):
        """The accounts the file's modes and ACL single out, and the stranger."""
        info, acl = self.info(path), self.acl(path) or {}
        singled = {info.st_uid, *acl.get(ACL_USER, {})}
        for gid in {info.st_gid, *acl.get(ACL_GROUP, {})}:
            singled |= self.members.get(gid, set())
        return {uid for uid in singled if uid not in (0, self.me)} | {self.STRANGER}

    def grants(self, path, uid, want):
        info, acl = self.info(path), self.acl(path)
        mode = info.st_mode
        if uid == info.st_uid:
            return (mode >> 6) & want == want
        groups = set() if uid == self.STRANGER else self.groups_of(uid)
        if acl is None:
            bits = mode >> 3 if info.st_gid in groups else mode
            return bits & want == want
        mask = (mode >> 3) & 7 if ACL_MASK in acl else 7
        if uid in acl.get(ACL_USER, {}):
            return acl[ACL_USER][uid] & mask & want == want
        held = [perm for gid, perm in acl.get(ACL_GROUP, {}).items() if gid in groups]
        if info.st_gid in groups:
            held.append(acl[ACL_GROUP_OBJ][None])
        if held:
            return any(perm & mask & want == want for perm in held)
        return mode & want == want

    def reaches(self, uid, folder):
        """Whether ``uid`` may search every folder from / down to ``folder``."""
        key = (uid, folder)
        if key not in self.reach:
            parent = folder.parent
            self.reach[key] = ((parent == folder or self.reaches(uid, parent))
                               and self.grants(folder, uid, SEARCH))
        return self.reach[key]

    def chain_accounts(self, path):
        """The accounts singled out by ``path`` or a folder above it."""
        if path not in self.chains:
            above = set() if path.parent == path else self.chain_accounts(path.parent)
            self.chains[path] = above | self.accounts(path)
        return self.chains[path]

    def readers(self, path):
        """The accounts (uids, or STRANGER) other than root and the grader that may read
        ``path`` (list it, for a folder)."""
        return {uid for uid in self.chain_accounts(path)
                if self.reaches(uid, path.parent) and self.grants(path, uid, READ)}

    def first_exposed(self, path, depth):
        """The first path at or under ``path`` (to ``depth`` levels) that others may
        read; None when there is none, or ``path`` does not exist."""
        try:
            info = self.info(path)
        except FileNotFoundError:
            return None
        except OSError as error:
            log.warning("could not check who can read %s: %s", path, error)
            return None
        if self.readers(path):
            return path
        if depth == 0 or not stat.S_ISDIR(info.st_mode):
            return None
        if not any(self.reaches(uid, path) for uid in self.chain_accounts(path)):
            return None  # no one else gets past this folder: nothing below is open
        try:
            entries = sorted(entry.name for entry in os.scandir(path)
                             if not entry.is_symlink())  # a link's target lies elsewhere
        except OSError as error:
            log.warning("could not list %s to check who can read it: %s", path, error)
            return None
        for name in entries:
            found = self.first_exposed(path / name, depth - 1)
            if found:
                return found
        return None


def read_acl(path):
    """{tag: {id: permission}} from the ACL attribute (None when the file has none)."""
    try:
        data = os.getxattr(path, ACL_ATTRIBUTE, follow_symlinks=False)
    except OSError:
        return None  # no ACL, or a filesystem without them: the mode bits are all
    acl = {}
    for offset in range(4, len(data) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", data, offset)
        named = ident if tag in (ACL_USER, ACL_GROUP) else None
        acl.setdefault(tag, {})[named] = perm
    return acl
