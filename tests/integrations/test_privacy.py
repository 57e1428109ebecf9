"""mhakit/integrations/privacy.py: who else can read the course and the answers.

The courses here are real folders with real modes, under a folder in /tmp that every
account may enter (pytest's own tmp_path is private to root, which would hide every
mistake). Where it matters the check is held to the kernel: a real account, made with
useradd, tries to read each file, and the check must say "exposed" exactly when it could.
"""

import grp
import os
import pwd
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from mhakit.exercises.mha import reference
from mhakit.integrations import privacy
from tests.mha_exercise import EXERCISE

RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
NAME = f"mhakit-p{os.getpid()}"  # unique per run: other engineers' runs share the machine
PARTS = ("source", "gradebook.db", "submitted", "autograded")


def need_root():
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, and these tests make accounts")
        pytest.skip("making accounts (useradd) needs root")


def sh(*command):
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done


@pytest.fixture
def open_root():
    """A folder in /tmp that any account may enter: what lies in it is judged on its own."""
    root = Path(tempfile.mkdtemp(prefix="mhakit-privacy-", dir="/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def make_course(root, mode=0o700):
    """A course with every private part, and two exercises' answers beside it; each folder
    and file as a umask of 022 leaves it, inside a course of ``mode``."""
    course = root / "course"
    for folder in ("source/mha", "submitted/alice/mha", "autograded/alice/mha"):
        (course / folder).mkdir(parents=True)
        (course / folder / "mha.ipynb").write_text("{}")
    (course / "gradebook.db").write_bytes(b"SQLite format 3\0")
    for folder in ("kit/exercise", "kit/second_exercise"):
        (root / folder).mkdir(parents=True)
        (root / folder / "answers.py").write_text("KEY = 'B'\n")
    (root / "kit").chmod(0o700)
    course.chmod(mode)
    return course


@pytest.fixture
def course(open_root, monkeypatch):
    """A private course, the kit's answer folders private too, and no one else's account."""
    course = make_course(open_root)
    monkeypatch.setattr(privacy, "answer_roots",
                        lambda: [open_root / "kit" / "exercise", open_root / "kit" / "second_exercise"])
    monkeypatch.setattr(privacy, "other_humans", lambda: [])
    return course


def others_present(monkeypatch, *names):
    monkeypatch.setattr(privacy, "other_humans", lambda: list(names))


def fix_command(line):
    return re.search(r"run `(chmod -R go-rwx [^`]+)`", line).group(1)


# ------------------------------------------------------------------ what the check says

def test_a_private_course_passes_though_its_files_are_0644_inside(course):
    assert (course / "gradebook.db").stat().st_mode & 0o777 == 0o644
    assert privacy.course_exposure(course) is None


def test_a_course_under_a_private_folder_passes_whatever_its_own_modes(tmp_path, monkeypatch):
    course = make_course(tmp_path, mode=0o755)
    monkeypatch.setattr(privacy, "answer_roots", lambda: [])
    assert any(not folder.stat().st_mode & 0o001 for folder in tmp_path.parents)  # pytest's
    assert privacy.course_exposure(course) is None


@pytest.mark.parametrize("part", PARTS)
def test_each_exposed_part_of_the_course_is_named_alone(course, part):
    course.chmod(0o711)  # others may pass through, not list
    for other in PARTS:
        (course / other).chmod(0o700 if (course / other).is_dir() else 0o600)
    (course / part).chmod(0o755 if (course / part).is_dir() else 0o644)
    found = privacy.course_exposure(course)
    assert found is not None and f"{course / part} (" in found.line
    assert [other for other in PARTS if f"{course / other} (" in found.line] == [part]
    assert f"chmod -R go-rwx {course}" in found.line and not found.refuses


def test_a_file_others_can_reach_through_a_folder_they_cannot_list_is_named(course):
    course.chmod(0o711)
    for part in PARTS:
        (course / part).chmod(0o711 if (course / part).is_dir() else 0o600)
    (course / "submitted" / "alice").chmod(0o711)
    (course / "submitted" / "alice" / "mha").chmod(0o711)  # mha.ipynb stays 0644
    found = privacy.course_exposure(course)
    assert f"{course / 'submitted' / 'alice' / 'mha' / 'mha.ipynb'} (-rw-r--r--)" in found.line


def test_a_listable_course_names_its_root_and_the_parts_below(course):
    course.chmod(0o755)
    found = privacy.course_exposure(course)
    assert found.line.startswith(f"other accounts can read {course} (drwxr-xr-x), "
                                 f"{course / 'source'} (drwxr-xr-x), "
                                 f"{course / 'gradebook.db'} (-rw-r--r--) and 2 more: ")


@pytest.mark.parametrize("folder", ["exercise", "second_exercise"])
def test_the_kits_answers_are_named_when_others_can_read_them(course, folder):
    kit = course.parent / "kit"
    kit.chmod(0o755)
    (kit / ("second_exercise" if folder == "exercise" else "exercise")).chmod(0o700)
    (kit / folder).chmod(0o711)  # not listable: the answer file itself is named
    found = privacy.course_exposure(course)
    assert f"{kit / folder / 'answers.py'} (-rw-r--r--)" in found.line
    assert f"chmod -R go-rwx {kit / folder}" in found.line
    assert str(course) not in found.line


def test_the_fix_the_line_gives_makes_the_check_pass(course):
    course.chmod(0o755)
    (course / "gradebook.db").chmod(0o666)
    (course.parent / "kit").chmod(0o755)
    found = privacy.course_exposure(course)
    command = fix_command(found.line)
    assert command == (f"chmod -R go-rwx {course} {course.parent / 'kit' / 'exercise'} "
                       f"{course.parent / 'kit' / 'second_exercise'}")
    subprocess.run(["bash", "-c", command], check=True)
    assert privacy.course_exposure(course) is None
    assert (course / "gradebook.db").stat().st_mode & 0o777 == 0o600


def test_a_kit_installed_by_someone_else_is_fixed_by_an_install_of_ones_own(course):
    need_root()
    kit = course.parent / "kit"
    kit.chmod(0o755)
    os.chown(kit / "second_exercise", 65534, 65534)  # a site-packages another account owns
    found = privacy.course_exposure(course)
    assert f"{kit / 'second_exercise'} (drwxr-xr-x)" in found.line
    assert "install mha-kit in your own environment" in found.line
    assert f"and run `chmod -R go-rwx {kit / 'exercise'}`" in found.line  # ours: chmod


def test_the_kits_answer_folders_are_found_where_the_modules_were_imported():
    roots = privacy.answer_roots()
    assert EXERCISE.folder in roots
    assert any(Path(reference.__file__).resolve().is_relative_to(root) for root in roots)
    assert all(root.is_dir() for root in roots)


# --------------------------------------------------------- whether an exposure refuses

def test_on_a_machine_of_one_person_an_exposure_is_a_warning(course):
    course.chmod(0o755)
    found = privacy.course_exposure(course)
    assert not found.refuses and "other people" not in found.line


def test_with_other_people_on_the_machine_an_exposure_refuses_and_names_them(course, monkeypatch):
    others_present(monkeypatch, "bob", "carol")
    assert privacy.course_exposure(course) is None  # private: nothing to refuse
    course.chmod(0o755)
    found = privacy.course_exposure(course)
    assert found.refuses and found.line.endswith("(other people have accounts here: bob, carol)")
    assert "\n" not in found.line
    others_present(monkeypatch, "ann", "bob", "carol", "dan", "eve")
    assert privacy.course_exposure(course).line.endswith(
        "(other people have accounts here: ann, bob, carol and 2 more)")


def test_allow_shared_turns_the_refusal_into_a_warning(course, monkeypatch):
    others_present(monkeypatch, "bob")
    course.chmod(0o755)
    found = privacy.course_exposure(course, allow_shared=True)
    assert not found.refuses and "bob" in found.line


def test_people_are_the_accounts_in_login_defs_range_with_a_login_shell(tmp_path, monkeypatch):
    defs = tmp_path / "login.defs"
    defs.write_text("# UID_MIN 1\nUID_MIN\t\t 2000\nUID_MAX 3000\n")
    assert privacy.login_uid_range(defs) == (2000, 3000)
    assert privacy.login_uid_range(tmp_path / "absent") == (1000, 60000)
    entries = [pwd.struct_passwd((name, "x", uid, uid, "", "/home", shell, ))
               for name, uid, shell in (("ann", 2001, "/bin/bash"), ("svc", 2002, "/usr/sbin/nologin"),
                                        ("old", 1500, "/bin/sh"), ("nobody", 65534, "/bin/sh"),
                                        ("me", os.geteuid(), "/bin/bash"))]
    monkeypatch.setattr(privacy.pwd, "getpwall", lambda: entries)
    monkeypatch.setattr(privacy, "login_uid_range", lambda: (2000, 3000))
    monkeypatch.setattr(privacy.os, "geteuid", lambda: 2003)
    assert privacy.other_humans() == ["ann"]


def test_a_private_course_costs_a_few_looks_however_many_submissions(course, monkeypatch):
    for index in range(500):
        (course / "submitted" / f"s{index}" / "mha").mkdir(parents=True)
    looked = []
    real = privacy.Judge.info
    monkeypatch.setattr(privacy.Judge, "info",
                        lambda judge, path: looked.append(path) or real(judge, path))
    assert privacy.course_exposure(course) is None
    assert len(set(looked)) < 30
    course.chmod(0o711)  # submitted/ listable by none, but passable: each folder once
    for part in PARTS:
        (course / part).chmod(0o711 if part == "submitted" else 0o600 if part.endswith(
            ".db") else 0o700)
    for student in (course / "submitted").iterdir():
        student.chmod(0o700)
    looked.clear()
    assert privacy.course_exposure(course) is None
    assert 500 < len(set(looked)) < 540


# ------------------------------------------------------------- held to the kernel

ANY = 0xFFFFFFFF  # the id of an ACL entry that names no one


def write_acl(path, entries):
    """A POSIX access ACL, as setfacl writes it: (tag, permission, id) entries, which
    the kernel takes in the order of their tags."""
    data = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident)
                                           for tag, perm, ident in sorted(entries))
    os.setxattr(path, privacy.ACL_ATTRIBUTE, data)


@pytest.fixture
def reader():
    """A real account that is not a person's (no login shell), in a group of its own
    and in a team; beside it, a group with no members."""
    need_root()
    team, empty = f"{NAME}t", f"{NAME}e"
    sh("groupadd", team)
    sh("groupadd", empty)
    try:
        sh("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", team, NAME)
        yield pwd.getpwnam(NAME)
    finally:
        subprocess.run(["userdel", NAME], capture_output=True)
        subprocess.run(["groupdel", team], capture_output=True)
        subprocess.run(["groupdel", empty], capture_output=True)


def kernel_lets_read(account, path):
    done = subprocess.run([RUNUSER, "-u", account, "--", "cat", str(path)], capture_output=True)
    return done.returncode == 0


LAYOUTS = {  # name: (the folder's mode, the file's mode, the file's group, ACL, expected)
    "0644 under 0755": (0o755, 0o644, None, None, True),
    "0644 under 0700": (0o700, 0o644, None, None, False),
    "0644 under 0711": (0o711, 0o644, None, None, True),
    "0600 under 0755": (0o755, 0o600, None, None, False),
    "0640, a group it is in": (0o755, 0o640, "t", None, True),
    "0640, a group of no one": (0o755, 0o640, "e", None, False),
    "0600, an ACL naming it": (0o755, 0o600, None, "user", True),
    "0600, an ACL naming it, masked": (0o755, 0o600, None, "masked", False),
    "0600, an ACL naming its team": (0o755, 0o600, None, "team", True),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_check_agrees_with_the_kernel_for_a_real_account(course, reader, layout):
    folder_mode, file_mode, group, acl, expected = LAYOUTS[layout]
    course.chmod(0o711)
    for part in PARTS:
        (course / part).chmod(0o711 if (course / part).is_dir() else 0o600)
    database = course / "gradebook.db"
    if group:
        os.chown(database, -1, grp.getgrnam(NAME + group).gr_gid)
    database.chmod(file_mode)
    if acl:
        named = (0x08, 4, grp.getgrnam(NAME + "t").gr_gid) if acl == "team" else (
            0x02, 4, reader.pw_uid)
        write_acl(database, [(0x01, 6, ANY), named, (0x04, 0, ANY),
                             (0x10, 0 if acl == "masked" else 4, ANY), (0x20, 0, ANY)])
    course.chmod(folder_mode)
    found = privacy.course_exposure(course)
    exposed = found is not None and f"{database} (" in found.line
    assert kernel_lets_read(NAME, database) == exposed == expected


def test_a_real_persons_account_makes_an_exposure_refuse(course, monkeypatch):
    need_root()
    monkeypatch.undo()  # the real account list, as grading reads it
    monkeypatch.setattr(privacy, "answer_roots", lambda: [])
    person = f"{NAME}h"
    sh("useradd", "--no-create-home", "--shell", "/bin/bash", person)
    try:
        assert person in privacy.other_humans()
        course.chmod(0o755)
        assert kernel_lets_read(person, course / "gradebook.db")
        found = privacy.course_exposure(course)
        assert found.refuses and f"{course} (drwxr-xr-x)" in found.line
        assert not privacy.course_exposure(course, allow_shared=True).refuses
    finally:
        sh("userdel", person)
    assert person not in privacy.other_humans()
