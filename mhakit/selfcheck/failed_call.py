"""The call a failed check ended on, also when it raised: what a namer is given.

A student handle keeps ``last_call`` only for a call that returned. A function that
raises on batched inputs and works on a single item is a mistake worth naming too, and
naming it needs the call's inputs, so ``Watched`` remembers the last call a check tried.
"""

from .framework import StudentRaised


class _Raised:
    """Stands for the result of a call that raised."""

    def __repr__(self):
        return "RAISED"


RAISED = _Raised()


class Watched:
    """A student handle that remembers the last call a check tried; everything else is
    the handle's own."""

    def __init__(self, student):
        self._student = student
        self._tried = None

    def call(self, name, *args, readonly=False, stand_ins=False, **kwargs):
        # Only a plain call is offered for naming: calling again a read-only one without
        # its flag could hide why it raised.
        self._tried = None if readonly or stand_ins else (name, args, kwargs)
        return self._student.call(name, *args, readonly=readonly, stand_ins=stand_ins,
                                  **kwargs)

    def __getattr__(self, attribute):
        return getattr(self._student, attribute)

    def failed_call(self, failure):
        """(function, args, kwargs, result or RAISED) of the call ``failure`` is about, or
        None. Only handles that keep ``last_call`` offer one (the grader's isolated
        handle in pytest does not)."""
        if not hasattr(self._student, "last_call"):
            return None
        if self._student.last_call:
            return self._student.last_call
        if isinstance(failure, StudentRaised) and self._tried:
            return (*self._tried, RAISED)
        return None
