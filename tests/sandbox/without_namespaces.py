"""Run a command the way a container runs it: no namespaces, and optionally no Landlock.

    python tests/sandbox/without_namespaces.py [--no-landlock] -- command args...

A seccomp filter refuses unshare and setns (EPERM), clone with any CLONE_NEW* flag
(EPERM), and clone3 (ENOSYS, so that the C library falls back to clone, whose flags the
filter can read). Dropping CAP_SYS_ADMIN alone would not do: such root still makes user
namespaces. With --no-landlock, landlock_create_ruleset fails with ENOSYS, as on a kernel
built without it. The filter holds for the command and everything it starts.
"""

import errno
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mhakit" / "sandbox" / "child"))
import seccomp


def main(argv):
    no_landlock = "--no-landlock" in argv[:argv.index("--")]
    command = argv[argv.index("--") + 1:]
    refusals = [("unshare", errno.EPERM, None), ("setns", errno.EPERM, None),
                ("clone", errno.EPERM, seccomp.NAMESPACE_FLAGS), ("clone3", errno.ENOSYS, None)]
    if no_landlock:
        refusals.append(("landlock_create_ruleset", errno.ENOSYS, None))
    seccomp.install(refusals)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
