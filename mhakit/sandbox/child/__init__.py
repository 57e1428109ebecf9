"""The child's side of the sandbox: the only code of the kit that runs next to student code.

Nothing here imports the grader. ``launcher.py`` and ``zygote.py`` confine a child and
then become it; ``runtime.py`` serves the grader's requests inside it. They run under
``python -I -S`` with numpy and the standard library only.
"""
