"""What IPython's own syntax and names mean where a notebook's cells run outside a kernel.

A cell read as IPython reads it (see ipython_syntax.py) calls ``get_ipython()`` for every
magic, shell escape and help request, and IPython makes ``display`` a builtin. Where the
cells run without a kernel (the grading child, ``python selfcheck.py``, the self-check
re-running the saved cells) these are the stand-ins: they start no process, print
nothing and never raise, so that a magic never costs the definitions around it.

- ``%time`` and ``%prun`` run their statement (``x = %time f()`` gives f's value), as
  ``%%time``, ``%%prun`` and ``%%capture`` run their cell; the kernel runs them too.
- ``%pylab`` puts numpy's and pyplot's names in the notebook's namespace, as IPython does.
- ``%run FILE.py`` runs the file, as the kernel does, and the names it defines join the
  notebook's (``-i``: it runs among them). ``%%writefile FILE`` writes its cell where the
  shell may write (the grading child, into its own scratch folder, where %run and import
  then find it; not ``python selfcheck.py``, in the student's folder, where the kernel
  wrote it already).
- every other magic, ``!cmd``, ``x = !cmd`` and ``name?`` does nothing, and what it
  gives back is ``NOTHING``: any attribute, call or item of it is itself again, it is
  false, empty and zero, and it prints as an empty string.
- ``display(...)`` and IPython.display's objects show nothing. In the grading child,
  every other module of IPython imports too, and what a cell takes from it is inert
  (``anything``): ``from IPython.core.interactiveshell import InteractiveShell``.
- a cell is compiled as the kernel compiles it (``CellCompiler``): a ``from __future__``
  import holds for the cells after it. The cells run in the dict of a module registered
  as ``__student__`` (``kernel_namespace``), as a kernel's run in ``__main__``'s, so that
  what looks a class's module up (dataclasses, typing.get_type_hints) finds it.

Standard library only, and self-contained: the grader sends this file's text to the
child, and also installs it there as the ``IPython`` and ``IPython.display`` modules.
"""

import __future__
import os
import shlex
import sys
import types

VERSION_INFO = (9, 0, 0, "")  # what it tells a library that asks which IPython it is
BODY_RUNS = ("time", "prun", "capture")  # magics whose code runs in the user's namespace
STUDENT_MODULE = "__student__"
FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


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
    """``get_ipython()`` where there is no kernel, bound to the namespace the cells run in;
    ``writes``: whether %%writefile writes."""

    def __init__(self, namespace, writes=False):
        object.__setattr__(self, "user_ns", namespace)
        object.__setattr__(self, "writes", writes)

    def run_line_magic(self, name, line, *args, **kwargs):
        if name in BODY_RUNS and name != "capture":
            return self._run(line)
        if name == "run":
            self._run_file(line)
        elif name == "pylab":
            self._pylab("--no-import-all" not in _words(line))
        return NOTHING

    def run_cell_magic(self, name, line, cell, *args, **kwargs):
        if name in BODY_RUNS:
            self._run(cell)  # reached only if the cell was not read by ipython_syntax
        elif name == "writefile" and self.writes:
            self._write_file(line, cell)
        return NOTHING

    def _pylab(self, everything):
        """``%pylab``: numpy and pyplot's names in the notebook's namespace, as IPython's
        import_pylab puts them (matplotlib may be imported when graded)."""
        code = ("import numpy\nimport matplotlib\nfrom matplotlib import pylab, mlab, pyplot\n"
                "np = numpy\nplt = pyplot\n")
        if everything:
            code += "from matplotlib.pylab import *\nfrom numpy import *\n"
        try:
            exec(code, self.user_ns)
        except Exception:  # noqa: BLE001 - no matplotlib: the kernel says so and goes on
            pass
        self.user_ns["display"] = display

    def _write_file(self, line, cell):
        """``%%writefile [-a] FILE``, as IPython's: the cell's text, in UTF-8."""
        words = _words(line)
        files = [word for word in words if not word.startswith("-")]
        if len(files) == 1:
            mode = "a" if {"-a", "--append"} & set(words) else "w"
            with open(os.path.expanduser(files[0]), mode, encoding="utf-8") as handle:
                handle.write(cell)

    def _run_file(self, line):
        """``%run [-i] FILE.py``: the file in a namespace of its own whose names then join
        the notebook's (with -i, in the notebook's). As in IPython, a file that is not
        there or that raises stops only itself."""
        words = _words(line)
        files = [word for word in words if not word.startswith("-")]
        if not files or not files[0].endswith(".py"):
            return  # a notebook or a module (-m): not run outside a kernel
        path = os.path.expanduser(files[0])
        inside = "-i" in words
        namespace = self.user_ns if inside else {
            "__name__": "__main__", "__file__": path,
            "__builtins__": self.user_ns.get("__builtins__", __builtins__)}
        try:
            with open(path, encoding="utf-8") as handle:
                exec(compile(handle.read(), path, "exec"), namespace)
        except Exception:  # noqa: BLE001 - the kernel shows it and the cell goes on
            pass
        if not inside:
            self.user_ns.update({name: value for name, value in namespace.items()
                                 if not name.startswith("__")})

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


def anything(name):
    """What any other module of IPython holds, in the grading child: a class for a
    capitalised name (InteractiveShell, whose settings then change nothing), else
    NOTHING (capture_output, register_line_magic), which does nothing whatever is done
    with it."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    if name.startswith("display"):
        return display
    return type(name, (DisplayObject,), {}) if name[:1].isupper() else NOTHING


def kernel_namespace():
    """A fresh namespace for a notebook's cells, with the real builtins: the dict of a
    new module registered in sys.modules as ``STUDENT_MODULE``."""
    module = types.ModuleType(STUDENT_MODULE)
    sys.modules[STUDENT_MODULE] = module
    namespace = vars(module)
    namespace["__builtins__"] = sys.modules["builtins"]
    return namespace


class CellCompiler:
    """Compiles a notebook's cells one after the other, as IPython's kernel does: the
    ``from __future__`` imports of a cell hold for every cell after it."""

    def __init__(self):
        self.flags = 0

    def __call__(self, source, filename):
        code = compile(source, filename, "exec", flags=self.flags, dont_inherit=True)
        self.flags |= code.co_flags & FUTURE_FLAGS
        return code


def _words(line):
    try:
        return shlex.split(line)
    except ValueError:  # an unbalanced quote: IPython's parser refuses it too
        return []


def kernel_names(namespace, writes=False):
    """The names IPython gives every cell of a kernel, for cells run in ``namespace``;
    ``writes``: whether %%writefile writes files (see the module's docstring)."""
    global _shell
    _shell = InertShell(namespace, writes)
    return {"get_ipython": get_ipython, "display": display}
