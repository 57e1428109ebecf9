"""The child's scratch space, bounded in every mode. The grader's side: trusted.

In the jail and the user-namespace mode the scratch lies on the child's own size-limited
tmpfs (child/layers/namespaces.py; child/layers/scratch.py says the bound). Without namespaces the child's folder is a plain folder in
the host's temporary folder, and a plain folder bounds nothing: RLIMIT_FSIZE bounds one
file, and a child may write many. There:

- a grader that may mount (root with CAP_SYS_ADMIN, on a server or in CI) mounts a tmpfs
  of ``Limits.scratch_bytes`` on the folder, owned by the child, and unmounts it when the
  child is done: the child writes and reads back files as in a kernel;
- a grader that may not (an ordinary user, a container without CAP_SYS_ADMIN) cannot
  bound a folder's size at all, so Landlock lets the child open its folder for reading
  only: it may write no file anywhere, and its scratch holds 0 bytes. A submission that
  writes a file fails there with PermissionError, as on a read-only disk.

Either way Landlock keeps the child's writes inside its folder (the world-writable /tmp,
/var/tmp and /dev/shm stay closed to it); a mode without Landlock bounds nothing, and
the probe (probe.py) refuses it.
"""

import ctypes
import logging
import os
import shutil
import stat

LOG = logging.getLogger(__name__)
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
INODES = 4096  # files and folders a scratch may hold: each costs the kernel memory too
LIBC = ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(folder, size, uid):
    """Mount a tmpfs of ``size`` bytes on ``folder``, for ``uid`` alone; False (said at
    debug level) where this grader may not mount."""
    owner = os.geteuid() if uid is None else uid
    options = f"size={size},nr_inodes={INODES},mode=700,uid={owner},gid={owner}"
    if os.geteuid() != 0 or LIBC.mount(b"tmpfs", os.fsencode(folder), b"tmpfs",
                                       MS_NOSUID | MS_NODEV, options.encode()) != 0:
        LOG.debug("no tmpfs for the child's scratch %s: %s", folder,
                  os.strerror(ctypes.get_errno()) if os.geteuid() == 0 else "not root")
        return False
    return True


def unmount(folder):
    """Unmount a tmpfs this grader mounted on ``folder``, whatever still holds it open;
    True when nothing is mounted there any more. A failure is said."""
    if not os.path.ismount(folder):
        return True
    if LIBC.umount2(os.fsencode(folder), MNT_DETACH) != 0:
        LOG.warning("could not unmount the grading child's scratch %s: %s", folder,
                    os.strerror(ctypes.get_errno()))
        return False
    return True


def remove_tree(folder):
    """Remove a child's folder whatever modes the child left on what it made there: a
    folder it made read-only, or unsearchable, is made ours again first. Says so when
    something is still left (a log warning), never silently."""
    folder = os.path.abspath(folder)

    def own_folder(path):
        """Only a real folder inside ``folder`` (never /tmp above it, never what a link
        the child left points to) has its mode put back."""
        try:
            inside = os.path.commonpath([path, folder]) == folder
            return inside and stat.S_ISDIR(os.lstat(path).st_mode)
        except (OSError, ValueError):
            return False

    def left(_function, path, error):
        LOG.warning("could not remove %s from the grading child's folder %s: %s",
                    path, folder, error[1])

    tried = set()

    def again(function, path, error):
        if path in tried:  # once only: a second failure is not the modes
            return left(function, path, error)
        tried.add(path)
        for fix in (os.path.dirname(path), path):  # the folder it is in, then itself
            if own_folder(fix):
                try:
                    os.chmod(fix, 0o700)
                except OSError:
                    pass
        try:
            if function in (os.rmdir, os.unlink, os.remove):
                function(path)
            elif own_folder(path):  # its listing failed: that folder, again from the top
                shutil.rmtree(path, onerror=again)
        except FileNotFoundError:
            pass
        except OSError as error:
            left(function, path, (type(error), error, None))

    if not os.path.lexists(folder):
        return True
    if not unmount(folder):
        return False
    shutil.rmtree(folder, onerror=again)
    if os.path.lexists(folder):
        LOG.warning("the grading child's folder %s is still there after its removal", folder)
        return False
    return True
