"""The kit's ``nbgrader collect``: nbgrader's, without passing on what a student links or names.

Registered in nbgrader_config.py as ``c.ExchangeFactory.collect``, so that the command line
and formgrader's Collect button both use it. What differs from nbgrader's default:

- Nothing is followed. The copy walks the submission through folder descriptors and opens
  every file with O_NOFOLLOW: a symbolic link (the submission folder itself, or anything in
  it, at any depth), a fifo or device, and a hard link to a file of another account are
  refused, named in one log line each, and not copied.
- On an exchange shared by several accounts, a submission folder whose owner is not the
  student it names is refused, as is anything in it of another owner (nbgrader only warned).
  ``c.ExchangeCollect.check_owner = False`` remains nbgrader's switch for exchanges whose
  folders are not owned by their students.
- "Latest" is the latest the exchange saw, not the latest a folder's name claims; a name far
  from what the exchange saw is flagged.
- What was refused or flagged is written beside the collected files, in ``RECORD``, which
  ``collect_findings`` reads for the grading doors.

Which time the exchange saw. A student owns their submission folder and everything in it, so
the folder name's timestamp, timestamp.txt and the folder's mtime (``touch -d``) are all theirs
to set. The inode's change time (ctime) is not: the kernel sets it to the clock's current time
on every change of the inode, and no call sets it to a chosen time. A student can only move it
forward, to the moment they touch the folder again, which is what a resubmission does anyway:
the folder then counts, and counts as seen, at that later moment (late if after the due date).
A folder can only be made to look older by changing the clock, which takes root. A copy of the
exchange that does not keep ctimes (a restore from backup) makes every folder as new as the
copy; its names then disagree with what the exchange saw, and each is flagged.
"""

import datetime
import errno
import fnmatch
import glob
import json
import os
import pwd
import shutil
import stat
from collections import defaultdict

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import check_mode, parse_utc

from ..grader.tampering import COLLECT_RECORD as RECORD

# How far a folder's name may be from the time the exchange saw it: nbgrader stamps the name
# when `nbgrader submit` starts and the folder is last changed when its copy ends.
SLACK = datetime.timedelta(minutes=10)
MAX_DEPTH = 64  # folders inside folders: also bounds the descriptors held open at once
NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def owner_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def shared_by_accounts(inbound):
    """Whether the exchange's inbound folder holds entries of several accounts, or of an
    account other than the collector's. A laptop course, where one account submits for
    every sample student and collects, is not shared, and its folders' owners mean nothing."""
    with os.scandir(inbound) as entries:
        owners = {entry.stat(follow_symlinks=False).st_uid for entry in entries}
    return bool(owners - {os.geteuid()})


def seen_at(st):
    """The time the exchange saw a folder (its ctime, see the docstring), as nbgrader's
    timestamps are: naive, in UTC."""
    return datetime.datetime.fromtimestamp(st.st_ctime, datetime.timezone.utc).replace(tzinfo=None)


class CheckedCollect(ExchangeCollect):
    """nbgrader's default exchange collect, with the changes the module's docstring lists."""

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        self.owners_checked = self.check_owner and shared_by_accounts(self.inbound_path)
        self.notes = defaultdict(list)  # student: what to flag in their collected record
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(glob.escape(self.inbound_path),
                               f"{student}+{self.coursedir.assignment_id}+*")
        records = [r for r in map(self._examine, sorted(glob.glob(pattern))) if r]
        self.src_records = self._latest(records)

    def _examine(self, path):
        """The record of one inbound folder, or None when it is refused (and said)."""
        name = os.path.basename(path)
        parts = name.rsplit("+", 3)
        student = parts[0]
        try:
            st = os.lstat(path)
        except OSError as error:
            self._refuse(student, f"{name}: {error.strerror}")
            return None
        try:
            claimed = parse_utc(parts[2]) if len(parts) >= 3 else None
        except (ValueError, OverflowError):
            claimed = None
        why = None
        if stat.S_ISLNK(st.st_mode):
            why = "is a symbolic link"
        elif not stat.S_ISDIR(st.st_mode):
            why = "is not a folder"
        elif claimed is None or parts[1] != self.coursedir.assignment_id:
            why = "has a name that is not student+assignment+time"
        elif self.owners_checked and owner_name(st.st_uid) != student:
            why = f"is owned by {owner_name(st.st_uid)}, not {student}"
        if why:
            self._refuse(student, f"{name}: it {why}")
            return None
        record = {"username": student, "filename": name, "timestamp": seen_at(st),
                  "claimed": claimed, "uid": st.st_uid}
        if abs(claimed - record["timestamp"]) > SLACK:
            self.notes[student].append(f"{name}: its name claims {claimed:%Y-%m-%d %H:%M:%S} "
                                       f"UTC, the exchange saw it at "
                                       f"{record['timestamp']:%Y-%m-%d %H:%M:%S} UTC")
        return record

    def _refuse(self, student, line):
        self.log.error("mha-kit collect refused %s", line)
        self.notes[student].append(line)

    def _latest(self, records):
        """Per student, the latest folder by the time the exchange saw, or with
        ``before_duedate`` the latest seen by the due date (the latest at all if none was)."""
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                duedate = None
        chosen = []
        by_student = defaultdict(list)
        for record in records:
            by_student[record["username"]].append(record)
        for found in by_student.values():
            found.sort(key=lambda r: r["timestamp"], reverse=True)
            on_time = [r for r in found if duedate is not None and r["timestamp"] <= duedate]
            chosen.append(on_time[0] if on_time and self.before_duedate else found[0])
        return chosen

    def copy_files(self):
        assignment = self.coursedir.assignment_id
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", assignment,
                             self.coursedir.course_id)
        for student in set(self.notes) - {r["username"] for r in self.src_records}:
            self.log.warning("mha-kit collect: %s has no submission of %s to collect beside "
                             "what was refused", student, assignment)
        for record in self.src_records:
            self._collect_one(record)

    def _collect_one(self, record):
        student, assignment = record["username"], self.coursedir.assignment_id
        dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
        if os.path.isdir(dest) and not self._newer(record, dest):
            self.log.info("No newer submission to collect: %s %s" if self.update else
                          "Submission already exists, use --update to update: %s %s",
                          student, assignment)
            return
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        # The earlier collected copy is replaced only by a whole new one.
        staging = dest + ".mhakit-collecting"
        if os.path.lexists(staging):
            shutil.rmtree(staging)
        refused = []
        try:
            self._copy_submission(record, staging, refused)
        except NotCollected as error:
            shutil.rmtree(staging, ignore_errors=True)
            if os.path.lexists(staging):
                self.log.error("mha-kit collect could not remove %s", staging)
            self._refuse(student, f"{record['filename']}: {error}")
            return
        self._write_record(staging, record, refused)
        if os.path.isdir(dest):
            self.log.info("Updating submission: %s %s", student, assignment)
            shutil.rmtree(dest)
        else:
            self.log.info("Collecting submission: %s %s", student, assignment)
        os.rename(staging, dest)

    def _newer(self, record, dest):
        """Whether ``record`` should replace the submission collected in ``dest``."""
        existing = self._seen_before(dest)
        if self.update and (existing is None or record["timestamp"] > existing):
            return True
        return self.before_duedate and existing != record["timestamp"]

    def _seen_before(self, dest):
        """When the exchange saw the collected submission: from the kit's record, else (a
        submission nbgrader's own collect brought) from its timestamp.txt."""
        try:
            with open(os.path.join(dest, RECORD), encoding="utf-8") as handle:
                return datetime.datetime.fromisoformat(json.load(handle)["seen"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.coursedir.get_existing_timestamp(dest)

    def _copy_submission(self, record, staging, refused):
        src = os.path.join(self.inbound_path, record["filename"])
        fd = os.open(src, NO_FOLLOW | os.O_DIRECTORY)
        try:
            if os.fstat(fd).st_uid != record["uid"]:  # replaced since it was examined
                raise NotCollected("it changed while it was collected")
            _Copy(self, record["uid"], refused).folder(fd, staging, "", 0)
        finally:
            os.close(fd)

    def _write_record(self, staging, record, refused):
        for line in refused:
            self.log.error("mha-kit collect refused %s/%s", record["filename"], line)
        flagged = list(self.notes.get(record["username"], []))
        written = self.coursedir.get_existing_timestamp(staging)  # timestamp.txt, if any
        if written is not None and abs(written - record["timestamp"]) > SLACK:
            flagged.append(f"{record['filename']}: its timestamp.txt says "
                           f"{written:%Y-%m-%d %H:%M:%S} UTC, the exchange saw it at "
                           f"{record['timestamp']:%Y-%m-%d %H:%M:%S} UTC")
        content = {"student": record["username"], "folder": record["filename"],
                   "seen": record["timestamp"].isoformat(),
                   "claimed": record["claimed"].isoformat(), "refused": refused,
                   "flagged": flagged}
        with open(os.path.join(staging, RECORD), "w", encoding="utf-8") as handle:
            json.dump(content, handle, ensure_ascii=False, indent=1)


class NotCollected(Exception):
    """A submission that cannot be collected whole: said, and not collected at all."""


class ChangedUnderfoot(Exception):
    """An entry that is no longer what it was when listed (a student's swap)."""


class _Copy:
    """One submission's copy, from a folder descriptor down, following nothing."""

    def __init__(self, collect, owner, refused):
        self.collect, self.coursedir, self.owner = collect, collect.coursedir, owner
        self.refused, self.left = refused, 1000 * collect.coursedir.max_dir_size
        self.strangers_refused = collect.owners_checked

    def folder(self, fd, dest, relative, depth):
        os.mkdir(dest)
        if self.coursedir.groupshared:
            os.chmod(dest, 0o2770 | stat.S_IMODE(os.stat(dest).st_mode))
        for entry in sorted(os.scandir(fd), key=lambda e: e.name):
            path = f"{relative}{entry.name}"
            st = entry.stat(follow_symlinks=False)
            why = self._refusal(entry.name, path, st, depth)
            if why:
                self.refused.append(f"{path}: {why}")
            elif why is None:
                try:
                    self.entry(fd, entry.name, st, os.path.join(dest, entry.name), path, depth)
                except ChangedUnderfoot:
                    self.refused.append(f"{path}: it changed while it was collected")

    def entry(self, fd, name, st, dest, path, depth):
        if stat.S_ISREG(st.st_mode):
            return self.file(_open_as(name, fd, st, 0), dest)
        inner = _open_as(name, fd, st, os.O_DIRECTORY)
        try:
            self.folder(inner, dest, path + "/", depth + 1)
        finally:
            os.close(inner)

    def _refusal(self, name, path, st, depth):
        """Why an entry is refused; "" when nbgrader's own settings leave it out; None to
        copy it."""
        if stat.S_ISLNK(st.st_mode):
            return "a symbolic link"
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return "neither a file nor a folder (a fifo, socket or device)"
        if self.strangers_refused and st.st_uid != self.owner:
            return f"owned by {owner_name(st.st_uid)}, not the submission's owner"
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and st.st_uid != self.owner:
            return f"a hard link to a file of {owner_name(st.st_uid)}"
        if depth == 0 and name == RECORD:
            return "a file of the kit's name, which only collect writes"
        if stat.S_ISDIR(st.st_mode) and depth + 1 >= MAX_DEPTH:
            return f"a folder more than {MAX_DEPTH} folders deep"
        if any(fnmatch.fnmatch(name, pattern) for pattern in self.coursedir.ignore or ()):
            return ""
        if stat.S_ISREG(st.st_mode):
            include, limit = self.coursedir.include, self.coursedir.max_file_size
            if include and not any(fnmatch.fnmatch(name, pattern) for pattern in include):
                return ""
            if limit and st.st_size > 1000 * limit:
                self.collect.log.warning("Ignoring file too large '%s' (see config option "
                                         "CourseDirectory.max_file_size)", path)
                return ""
        return None

    def file(self, source, dest):
        mode = 0o660 if self.coursedir.groupshared else 0o644
        with os.fdopen(source, "rb") as reader, \
                open(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as writer:
            for piece in iter(lambda: reader.read(1 << 20), b""):
                self.left -= len(piece)
                if self.left < 0:
                    raise NotCollected("it is larger than CourseDirectory.max_dir_size")
                writer.write(piece)


def _open_as(name, dir_fd, st, flags):
    """Open ``name`` in ``dir_fd`` without following it, and only if it is still the inode
    that was listed: a student cannot swap a link in between."""
    try:
        fd = os.open(name, NO_FOLLOW | flags, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.ENXIO):
            raise ChangedUnderfoot(name) from None
        raise
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise ChangedUnderfoot(name)
    return fd
