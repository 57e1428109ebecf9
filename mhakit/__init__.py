"""mha-kit's instructor side: hidden graders, isolated grading, nbgrader and CLI glue."""

__version__ = "0.1.0"
