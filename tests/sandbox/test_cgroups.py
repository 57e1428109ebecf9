"""mhakit/sandbox/cgroups.py: one cgroup per submission, and one way to end every
process in it, even those that left their session and process group."""

import subprocess
import sys

from mhakit.sandbox import cgroups
from tests.sandbox.test_limits import cgroup_works, need


def test_a_cgroup_kill_ends_processes_that_left_their_session_and_group():
    need(cgroup_works(), "cgroup with memory and pids controllers")
    group = cgroups.create(64 << 20, 8)
    try:
        script = ("import os, sys, time\n"
                  "for procs in sys.argv[1:]:\n"
                  "    open(procs, 'w').write('0')\n"
                  "for _ in range(3):\n"
                  "    if os.fork() == 0:\n"
                  "        os.setsid()\n"
                  "        if os.fork() == 0:\n"
                  "            time.sleep(600)\n"
                  "        os._exit(0)\n"
                  "    os.wait()\n"
                  "print('ready', flush=True)\n"
                  "time.sleep(600)\n")
        started = subprocess.Popen([sys.executable, "-c", script, *group.procs_files],
                                   stdout=subprocess.PIPE, text=True)
        assert started.stdout.readline().strip() == "ready"
        assert len(group.pids()) == 4  # the first process and three orphans in their sessions
        assert group.kill()
        started.wait(timeout=60)
        assert group.pids() == set()
    finally:
        group.kill()
        assert group.remove()
