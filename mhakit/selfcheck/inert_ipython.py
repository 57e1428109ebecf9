"""What IPython's own syntax and names mean where a notebook's cells run outside a kernel.

A cell read as IPython reads it (see ipython_syntax.py) calls ``get_ipython()`` for every
magic, shell escape and help request, and IPython makes ``display`` a builtin. Where the
cells run without a kernel (the grading child, ``python selfcheck.py``, the self-check
re-running the saved cells) these are the stand-ins: they start no process, print
nothing and never raise, so that a magic never costs the definitions around it.

- ``%time`` and ``%prun`` run their statement (``x = %time f()`` gives f's value), as
  ``%%time``, ``%%prun`` and ``%%capture`` run their cell; the kernel runs them too.
- every other magic, ``!cmd``, ``x = !cmd`` and ``name?`` does nothing, and what it
  gives back is ``NOTHING``: any attribute, call or item of it is itself again, it is
  false, empty and zero, and it prints as an empty string.
- ``display(...)`` and IPython.display's objects show nothing.

Standard library only, and self-contained: the grader sends this file's text to the
child, and also installs it there as the ``IPython`` and ``IPython.display`` modules.
"""

VERSION_INFO = (9, 0, 0, "")  # what it tells a library that asks which IPython it is
BODY_RUNS = ("time", "prun", "capture")  # magics whose code runs in the user's namespace


class Nothing:
    """The value of a magic that did nothing; whatever is done with it, nothing happens."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy, pickle and numpy ask for protocols
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self

    def __setattr__(self, name, value):
        pass

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __index__(self):
        return 0

    def __str__(self):
        return ""

    def __repr__(self):
        return ""

    def __format__(self, spec):
        return ""

    def __eq__(self, other):
        return other is self

    def __hash__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _same(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = _same


NOTHING = Nothing()


class InertShell:
    """``get_ipython()`` where there is no kernel, bound to the namespace the cells run in."""

    def __init__(self, namespace):
        object.__setattr__(self, "user_ns", namespace)

    def run_line_magic(self, name, line, *args, **kwargs):
        if name in BODY_RUNS and name != "capture":
            return self._run(line)
        return NOTHING

    def run_cell_magic(self, name, line, cell, *args, **kwargs):
        if name in BODY_RUNS:
            self._run(cell)  # reached only if the cell was not read by ipython_syntax
        return NOTHING

    def system(self, *args, **kwargs):
        return NOTHING

    def getoutput(self, *args, **kwargs):
        return NOTHING

    def _run(self, code):
        """A statement runs; an expression gives its value, as %time does in a kernel."""
        try:
            compiled = compile(code, "<magic>", "eval")
        except SyntaxError:
            exec(compile(code, "<magic>", "exec"), self.user_ns)
            return None
        return eval(compiled, self.user_ns)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return NOTHING

    def __setattr__(self, name, value):
        pass


_shell = None


def get_ipython():
    """The inert shell of the namespace that ``kernel_names`` last set up, or None."""
    return _shell


def display(*objs, **kwargs):
    """Shows nothing: there is no one to see it."""
    return None


def clear_output(*args, **kwargs):
    return None


def update_display(*args, **kwargs):
    return None


class DisplayObject:
    """HTML, Markdown, Image and IPython.display's other objects: kept, never shown."""

    def __init__(self, *args, **kwargs):
        self.data = args[0] if args else kwargs.get("data")

    def _repr_pretty_(self, printer, cycle):
        printer.text("")


def __getattr__(name):
    # IPython.display has dozens of display classes (HTML, Math, IFrame, ...) and
    # display_* functions; every public one of them exists and shows nothing.
    if name.startswith("display_"):
        return display
    if name[:1].isupper():
        return type(name, (DisplayObject,), {})
    raise AttributeError(f"module 'IPython.display' has no attribute '{name}'")


def kernel_names(namespace):
    """The names IPython gives every cell of a kernel, for cells run in ``namespace``."""
    global _shell
    _shell = InertShell(namespace)
    return {"get_ipython": get_ipython, "display": display}
