"""How much a submission may use. Generous for correct code: the reference needs
milliseconds per call."""

from dataclasses import dataclass

from ..settings import settings


@dataclass
class Limits:
    """Generous for correct code: the reference needs milliseconds per call."""

    call_seconds: float = 20.0     # wall clock for one call, every message of it
    cell_seconds: float = 30.0     # wall clock for one code cell's top-level code, as
    #                                nbgrader's own time per cell (Execute.timeout)
    submission_seconds: float = 120.0  # wall clock for the whole submission, restarts included
    cpu_seconds: int = 120         # CPU time for the whole child
    memory_bytes: int = 4 << 30    # address space of each process; with a cgroup, also
    #                                the memory of the whole submission, every process it starts
    file_bytes: int = 16 << 20     # largest file the child may write
    scratch_bytes: int = 64 << 20  # the jail's whole writable space
    processes: int = 16            # processes and threads of the whole submission (its
    #                                cgroup) and of its uid; without a cgroup, none but itself
    max_restarts: int = 8          # fresh children after a crash, per submission
    # the modules that the child may import beside the standard library, each with its
    # package (an exercise's STUDENT_IMPORTS); the child finds these and nothing else
    packages: tuple = ("numpy",)

    @classmethod
    def from_environment(cls):
        """MHAKIT_CALL_SECONDS, MHAKIT_CELL_SECONDS and MHAKIT_SUBMISSION_SECONDS shorten
        the wall-clock limits (tests of endless loops; the first shortens a cell's limit
        too, unless the second is given); MHAKIT_MEMORY_MB sets the memory limit."""
        limits, given = cls(), settings()
        if given.call_seconds:
            limits.call_seconds = given.call_seconds
            limits.cell_seconds = min(limits.cell_seconds, limits.call_seconds)
        if given.cell_seconds:
            limits.cell_seconds = given.cell_seconds
        if given.submission_seconds:
            limits.submission_seconds = given.submission_seconds
        if given.memory_mb:  # tests of memory held by many processes
            limits.memory_bytes = given.memory_mb << 20
        return limits
