"""Named tasks for maintainers: `nox -l` lists them, `nox -s fast` runs one.

Every session runs in the environment nox itself was installed in, the kit's own venv
(`.venv/bin/pip install -e '.[test,torch,dev]'`, then `.venv/bin/nox -s fast`): the tests
need the kit installed editable, and a fresh venv per session would download it all again.
CI runs none of these: it runs the README's test command, which is `all`.
"""

import sys

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "fast"]
PYTEST = (sys.executable, "-m", "pytest")


@nox.session
def lint(session):
    """ruff and mypy, with pyproject.toml's rules."""
    session.run(sys.executable, "-m", "ruff", "check", ".")
    session.run(sys.executable, "-m", "mypy")


@nox.session
def fast(session):
    """The README's quick subset: no real nbgrader command, no browser, on four processes
    (its tests mostly wait for children)."""
    session.run(*PYTEST, "-m", "not slow and not browser", "-n", "4", *session.posargs)


@nox.session
def sandbox(session):
    """The confinement, and the attack corpus (tests/attacks/) graded: real children in
    every mode this machine builds."""
    session.run(*PYTEST, "tests/sandbox", "tests/grader/test_attacks.py", "-m", "not browser",
                *session.posargs)


@nox.session(name="end-to-end")
def end_to_end(session):
    """Real nbgrader commands and the exchange: the slow tests that need no browser."""
    session.run(*PYTEST, "-m", "slow and not browser", *session.posargs)


@nox.session
def browser(session):
    """JupyterLab in Debian's Chromium (tests/browser/), and the course on JupyterHub
    (tests/hub/)."""
    session.run(*PYTEST, "-m", "browser", *session.posargs)


@nox.session(name="all")
def everything(session):
    """Every test, as CI runs them (the README's test command): on three processes."""
    session.run(*PYTEST, "-n", "3", *session.posargs)
