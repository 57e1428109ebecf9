"""The exercise's half of the self-check, shipped to students: the public checks, and the
story, demonstrations and plots the lesson's cells call. numpy only (matplotlib for the
plots); its modules import the self-check, which in a release is the package around
them (in the kit they import it by the kit's name for it, and the build rewrites that)."""

from .checks import CHECKS, KNOWN

# What a student's cells may import, beside the standard library, and still be graded as
# they ran: the lesson itself plots, and every kernel has IPython's display. Each is a
# module, and its whole package is offered; grading has the modules named here imported
# ahead for the submissions that use their package.
STUDENT_IMPORTS = ("numpy", "matplotlib.pyplot", "IPython.display")

__all__ = ["CHECKS", "KNOWN", "STUDENT_IMPORTS"]
