"""autograder/: a course's nbgrader_config.py written before the kit became mhakit names
its classes as autograder.*; each of those paths still gives the very same class."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = (REPO / "nbgrader_config.py").read_text(encoding="utf-8")


def test_every_class_the_course_config_names_has_its_old_path_too():
    named = re.findall(r'"mhakit\.([\w.]+)"', CONFIG)
    assert len(named) >= 8, named
    # A process of its own: the old modules warn once, when first imported.
    code = ("import sys, warnings\n"
            "from traitlets.utils.importstring import import_item\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as said:\n"
            "    for name in sys.argv[1:]:\n"
            "        assert import_item('autograder.' + name) is import_item('mhakit.' + name), name\n"
            "print(len({str(w.message) for w in said if w.category is FutureWarning}))\n")
    done = subprocess.run([sys.executable, "-c", code, *named], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    modules = {name.rsplit(".", 1)[0] for name in named}
    assert int(done.stdout) == len(modules)  # each old module says what it is now, once


def test_the_old_package_holds_only_the_paths_a_config_may_name():
    held = sorted(str(p.relative_to(REPO)) for p in (REPO / "autograder").rglob("*.py"))
    assert held == ["autograder/__init__.py", "autograder/integrations/__init__.py",
                    "autograder/integrations/collect.py", "autograder/integrations/export.py",
                    "autograder/integrations/nbgrader_plugin.py"]
