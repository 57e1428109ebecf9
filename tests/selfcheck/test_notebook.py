"""mhakit/selfcheck/notebook.py: which code is graded. Every code cell runs, in order,
except the kit's own; whatever a cell's metadata says, a later definition wins."""

import importlib
import importlib.util
import json
import sys

import nbformat
import pytest

from mhakit.grader.tampering import expected_layout
from mhakit.selfcheck.notebook import graded_cells_of
from tests.attacks.corpus import REPO, UNIFORM_SOFTMAX
from tests.attacks.on_metadata import REDEFINING_SOFTMAX
from tests.grader.test_tampering import filled
from tests.mha_exercise import EXERCISE


def _graded_ids(notebook):
    return [cell_id for cell_id, _ in graded_cells_of(notebook, EXERCISE.kit_sources)]


def test_every_code_cell_runs_except_the_kits_own():
    notebook = filled()
    release, _ = expected_layout(EXERCISE)
    code = [grade_id for grade_id, entry in release.items() if entry["cell_type"] == "code"
            and not entry["locked"]]
    assert _graded_ids(notebook) == code
    rerun = '# 自查 / self-check: softmax\ncheck("softmax")\n'  # a copy of the kit's cell
    notebook["cells"].append(nbformat.v4.new_code_cell(rerun, id="scratch"))
    notebook["cells"].append(nbformat.v4.new_code_cell("y = 2\n", id="mine"))
    assert _graded_ids(notebook) == code + ["mine"]  # a re-run of a check is the kit's


@pytest.mark.parametrize("attack", REDEFINING_SOFTMAX, ids=[a.name for a in REDEFINING_SOFTMAX])
def test_a_later_cell_that_redefines_softmax_is_graded_whatever_its_metadata(attack):
    defining = [source for _, source in graded_cells_of(json.loads(attack.make()), EXERCISE.kit_sources)
                if "def softmax(" in source]
    assert len(defining) == 2 and UNIFORM_SOFTMAX.strip() in defining[-1]


def test_the_students_copy_skips_locked_cells_without_a_layout():
    """The shipped self-check has no release layout beside it: it skips what the
    notebook's metadata calls locked, and runs everything else."""
    folder = REPO / "assignments" / "mha" / "mhakit_student"
    spec = importlib.util.spec_from_file_location("shipped_self_check", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    shipped = importlib.import_module("shipped_self_check.notebook")
    assert not list(folder.rglob("release_layout.json"))
    notebook = filled()
    assert [c for c, _ in shipped.graded_cells_of(notebook)] == _graded_ids(notebook)
