"""One layer: the child's resource limits. Stdlib only.

CPU seconds, address space, the size of one file, no core dump, 64 descriptors. Past the
file-size limit a write fails with EFBIG instead of killing the child. (Its processes
are bounded by processes.py.)
"""

import resource
import signal

ORDER = 50
LIMITS = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS,
          "fsize": resource.RLIMIT_FSIZE, "core": resource.RLIMIT_CORE,
          "nofile": resource.RLIMIT_NOFILE}


def plan(setting):
    limits = setting.limits
    return {"cpu": limits.cpu_seconds, "as": limits.memory_bytes, "fsize": limits.file_bytes,
            "core": 0, "nofile": 64}


def describe(_section):
    return ["resource limits (CPU, memory, file size)"]


def apply(section, _plan):
    for name, value in section.items():
        resource.setrlimit(LIMITS[name], (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
