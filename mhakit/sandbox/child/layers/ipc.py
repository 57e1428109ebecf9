"""One layer: a child without an IPC namespace of its own makes no System V IPC object
and no POSIX message queue, and reaches none of the machine's. Stdlib only.

Such objects outlive the process that made them. In the jail and the user-namespace mode
they die with the child's IPC namespace; without one (the uid and landlock modes) a
shared memory segment stays after grading, with its memory, so a submission could fill
the machine one segment at a time, and a child that keeps the grader's uid could read,
change or remove the grader's own segments by their id. Nothing a notebook needs uses
them (numpy does not; Python's shared_memory is a file in /dev/shm, which Landlock
closes), so every call on them fails with EPERM.
"""

import errno

ORDER = 75
SYSTEM_V = ("shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
            "msgget", "msgsnd", "msgrcv", "msgctl")
POSIX = ("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
         "mq_getsetattr")
# arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h
CALLS = {
    "x86_64": {"shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65,
               "semctl": 66, "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
               "msgctl": 71, "semtimedop": 220, "mq_open": 240, "mq_unlink": 241,
               "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
               "mq_getsetattr": 245},
    "aarch64": {"mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
                "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185,
                "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190,
                "semctl": 191, "semtimedop": 192, "semop": 193, "shmget": 194,
                "shmctl": 195, "shmat": 196, "shmdt": 197},
}
SAID = ("seccomp: no System V shared memory, semaphores or message queues and no POSIX "
        "message queues (they would outlive it)")


def wanted(mode):
    return not mode.namespaces


def plan(setting):
    if setting.mode.namespaces or setting.mode.name == "plain" or not setting.seccomp:
        return None
    return {}


def describe(_section):
    return [SAID]


def apply(_section, _plan):
    return [(name, errno.EPERM, None) for name in SYSTEM_V + POSIX]


# A segment and a queue of its own, removed at once where they could be made.
PROBE = """\
def made_segment():
    segment = raw("shmget", 0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    raw("shmctl", segment, 0, None)  # IPC_RMID
def made_queue():
    name = b"mhakit-probe-%d" % os.getpid()
    closed(raw("mq_open", name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None))
    raw("mq_unlink", name)
attempt("shmget", "a System V segment", made_segment)
attempt("mq_open", "a POSIX message queue", made_queue)
"""
