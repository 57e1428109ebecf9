"""The README's two opening commands are the ones that CI and the demo really run."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)[:2]


def test_the_readme_opens_with_the_demo_and_the_test_command():
    demo, tests = readme_commands()
    assert demo.startswith("python3 -m venv .venv") and demo.endswith("mhakit demo")
    assert tests.startswith("python3 -m venv .venv") and tests.endswith("python -m pytest")


def test_ci_runs_the_readmes_test_command_verbatim():
    _, tests = readme_commands()
    assert tests in (REPO / ".ci" / "run").read_text(encoding="utf-8")
