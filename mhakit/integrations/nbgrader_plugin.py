"""nbgrader's door to the isolated grader.

``IsolatedAutograde`` takes the place of nbgrader's ``Execute`` in ``Autograde``. It
never starts a kernel: it grades the notebook's answer cells with mha-kit's grader
(student code in a separate, limited process) and writes each test cell's output so
that nbgrader's own ``SaveAutoGrades`` reads the score:
full marks as plain output, partial credit as an ``execute_result`` holding the
points, zero as an error. See ``nbgrader.utils.determine_grade``.
"""

import contextlib
import copy
import json

import jsonschema
import nbformat
import nbgrader.nbgraderformat.common as nbgrader_format
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.converters import Autograde
from nbgrader.converters.base import NbGraderException
from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearSolutions,
                                    NbGraderPreprocessor, OverwriteCells)
from traitlets import Bool, Integer

from ..authoring.build import build_notebook
from ..exercise import for_assignment
from ..grader.grading import grade_cells, needs_review, unreadable, unreadable_reason
from ..grader.result import Status
from ..grader.tampering import collect_findings, expected_layout, find_tampering
from ..selfcheck.cells import (FLAGS, grade_id_of, has_nbgrader_entry, in_nbformat_shape,
                               nbgrader_meta, valid_meta)
from ..selfcheck.notebook import graded_cells_of
from ..selfcheck.notebook_file import one_line, read_notebook
from ..selfcheck.wording import decide
from .cell_outputs import part_max, test_cell_outputs, test_cell_part
from .gate import refusal_before_grading

# Notebook metadata that carries, from the first sanitizing step on, what that step read
# in the notebook as the student left it: the findings and the code cells to grade.
STASH = "mhakit_tampering"
CELLS_STASH = "mhakit_graded_cells"
# Set by BoundedNotebookReader on the stand-in for a file it could not read: why.
UNREADABLE_STASH = "mhakit_unreadable"


class BoundedNotebookReader(NotebookExporter):
    """Autograde's reader (``c.Autograde.exporter_class``): the kit's bounded one, which
    ``mhakit grade`` uses too, instead of ``nbformat.read``. nbformat fails a whole
    submission with a traceback on what a student can save (a cell whose metadata is a
    list, invalid JSON, 2 GB of it), and nbgrader then leaves that student at zero with
    nothing in formgrader. Here a notebook comes in nbformat's shape, and a file that is
    no notebook becomes an empty one that says why, so that its grade is flagged.

    It is also the gate (mhakit/integrations/gate.py). nbgrader builds its reader
    once per run, before the first submission, on the command line and behind
    formgrader's Autograde button alike; a pre-convert hook would come too late (with
    --force, which the button always sets, nbgrader has removed the student's autograded
    folder by then) and nbgrader logs and ignores a hook's errors."""

    allow_unconfined = Bool(False, help=(
        "Grade even where nothing can hide the course from student code; every grade is "
        "then flagged for review")).tag(config=True)
    allow_shared = Bool(False, help=(
        "Grade even where other people's accounts can read the course or the kit's "
        "answers (the refusal names them and the chmod that fixes it)")).tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate_passed = False
        if isinstance(self.parent, Autograde):
            self._refuse_or_pass(self.parent.coursedir)

    def _refuse_or_pass(self, coursedir):
        refused = refusal_before_grading(allow_unconfined=self.allow_unconfined,
                                         allow_shared=self.allow_shared,
                                         course=coursedir.root, db_url=coursedir.db_url,
                                         assignment=coursedir.assignment_id,
                                         warn=self.log.warning)
        if refused:
            # nbgrader's command line exits 1 on this error without printing it, and
            # formgrader shows it as the Autograde button's error: said once, here.
            self.log.error("mha-kit: %s", refused)
            raise NbGraderException(f"mha-kit: {refused}")
        self.gate_passed = True

    def from_file(self, file_stream, resources=None, **kw):
        try:
            notebook = in_nbformat_shape(read_notebook(file_stream.name))
            notebook["metadata"].pop(UNREADABLE_STASH, None)
        except Exception as error:  # noqa: BLE001 - as read_and_grade: any failure is a reason
            notebook = {"nbformat": 4, "nbformat_minor": 5, "cells": [],
                        "metadata": {UNREADABLE_STASH: one_line(unreadable_reason(error), 300)}}
        return self.from_notebook_node(nbformat.from_dict(notebook), resources=resources, **kw)


def assignment_exercise(resources):
    """The exercise of the assignment nbgrader is grading: a course may hold several
    (MHAKIT_EXERCISE names their folders), and each assignment is graded by its own."""
    return for_assignment((resources.get("nbgrader") or {}).get("assignment"))


class DetectTampering(NbGraderPreprocessor):
    """First of the sanitizing steps: look at the notebook as the student left it,
    before nbgrader's OverwriteCells quietly restores the locked cells."""

    def preprocess(self, nb, resources):
        exercise = assignment_exercise(resources)
        unreadable_because = nb.metadata.pop(UNREADABLE_STASH, None)
        findings = [] if unreadable_because else find_tampering(nb, exercise)
        # What the kit's collect refused or flagged in this submission's folder.
        findings += collect_findings(resources.get("metadata", {}).get("path") or ".")
        # Both stashes overwrite whatever a student may have put there. The cells to grade
        # are read here, from the notebook as the student left it, exactly as `mhakit
        # grade` reads the file: the two paths grade the same code, whatever nbgrader's
        # later steps restore.
        nb.metadata[STASH] = findings
        try:
            nb.metadata[CELLS_STASH] = {"unreadable": unreadable_because} if (
                unreadable_because) else [list(cell) for cell in
                                          graded_cells_of(nb, exercise.kit_sources)]
        except ValueError:
            nb.metadata[CELLS_STASH] = None
        for finding in findings:
            self.log.warning("mha-kit: %s: %s", resources.get("nbgrader", {}).get("student"),
                             finding)
        self.keep_only_known_cells(nb, exercise)
        self.restore_release_metadata(nb, exercise)
        self.restore_deleted_locked_cells(nb, exercise)
        return nb, resources

    @staticmethod
    def keep_only_known_cells(nb, exercise):
        """nbgrader aborts the whole batch (SchemaTooOldError) on one duplicated cell, and
        fails a notebook on an unknown grade id. Such cells lose their nbgrader metadata
        here, and stay ordinary cells (what is graded was read before this)."""
        release, _ = expected_layout(exercise)
        seen = set()
        for cell in reversed(nb.cells):  # the last copy of a duplicate is the one kept
            if not has_nbgrader_entry(cell):
                continue
            grade_id = valid_meta(cell).get("grade_id")
            if grade_id not in release or grade_id in seen:
                del cell.metadata["nbgrader"]
            else:
                seen.add(grade_id)

    @staticmethod
    def restore_release_metadata(nb, exercise):
        """nbgrader's OverwriteCells restores a cell's type, lock and points, but not
        whether it is graded or an answer: a test cell marked ungraded would lose its
        grade, an answer cell marked graded would fail the notebook. Each known cell gets
        the release's flags and points back here."""
        release, _ = expected_layout(exercise)
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            entry = release.get(meta.get("grade_id"))
            if entry is None:
                continue
            meta.update({flag: entry[flag] for flag in FLAGS})
            meta.pop("points", None)
            if "points" in entry:
                meta["points"] = entry["points"]

    @staticmethod
    def restore_deleted_locked_cells(nb, exercise):
        """A deleted test cell would leave its grade empty; put it back (at the end:
        no cell is executed, so the position does not matter). OverwriteCells then
        gives it the gradebook's source."""
        present = {grade_id_of(c) for c in nb.cells}
        release, _ = expected_layout(exercise)  # the layout of build_notebook(exercise)
        if all(grade_id in present for grade_id, entry in release.items() if entry["locked"]):
            return  # as nearly always: building the notebook took 20 ms a submission
        for cell in build_notebook(exercise).cells:
            meta = nbgrader_meta(cell)
            if meta.get("locked") and meta["grade_id"] not in present:
                nb.cells.append(copy.deepcopy(cell))


class RestoreLockedCells(OverwriteCells):
    """nbgrader's OverwriteCells, without its false alarm. The gradebook keeps each test
    cell with its hidden tests and the release without them, so OverwriteCells warned
    "Attribute 'checksum' for cell test_... has changed!" for every test cell of every
    notebook, untouched ones included. A locked cell whose source is the release's (the
    gradebook's, hidden tests cleared) is now restored in silence; any other change is
    reported as before, and DetectTampering has named it already."""

    as_released = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.released = {}  # (gradebook, assignment, notebook, grade id) -> source or None

    def preprocess_cell(self, cell, resources, cell_index):
        self.as_released = self._source_as_released(cell)
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self.as_released = False

    def report_change(self, name, attr, old, new):
        if not (attr == "checksum" and self.as_released):
            super().report_change(name, attr, old, new)

    def _source_as_released(self, cell):
        grade_id = grade_id_of(cell)
        if grade_id is None:  # OverwriteCells leaves such a cell alone: no change to report
            return False
        # Once per cell of the assignment and run, not per submission: the gradebook's
        # source cells do not change while nbgrader grades (a query each, otherwise 0.8 ms).
        key = (self.db_url, self.assignment_id, self.notebook_id, grade_id)
        if key not in self.released:
            self.released[key] = self._released_source(grade_id)
        return self.released[key] == cell.source

    def _released_source(self, grade_id):
        """The gradebook's source of the cell, hidden tests cleared as in the release;
        None if the gradebook has no such cell."""
        try:
            stored = self.gradebook.find_source_cell(grade_id, self.notebook_id,
                                                     self.assignment_id)
        except MissingEntry:
            return None
        released = nbformat.from_dict({"cell_type": stored.cell_type, "metadata": {},
                                       "source": stored.source})
        ClearHiddenTests(config=self.config, enforce_metadata=False).preprocess_cell(
            released, {}, 0)
        return released.source


class IsolatedAutograde(NbGraderPreprocessor):
    seed = Integer(None, allow_none=True,
                   help="Seed for the hidden inputs; a fresh one per notebook if unset").tag(config=True)

    def preprocess(self, nb, resources):
        if not getattr(self.parent, "gate_passed", False):
            # A config that grades with this step but reads with another exporter: no
            # check ran, so nothing is graded (nbgrader marks each submission failed).
            raise NbGraderException(
                "mha-kit: the kit's gate did not run; set c.Autograde.exporter_class = "
                '"mhakit.integrations.nbgrader_plugin.BoundedNotebookReader" '
                "in nbgrader_config.py")
        student = resources.get("nbgrader", {}).get("student", "?")
        tampering = nb.metadata.pop(STASH, None)
        cells = nb.metadata.pop(CELLS_STASH, None)
        exercise = assignment_exercise(resources)
        if not isinstance(tampering, list):  # the sanitizing step did not run
            tampering, cells = find_tampering(nb, exercise), None
            try:
                cells = graded_cells_of(nb, exercise.kit_sources)
            except ValueError:
                pass
        if isinstance(cells, dict):  # BoundedNotebookReader could not read the file
            result = unreadable(str(cells.get("unreadable")), self.seed, exercise)
        elif cells is None:
            result = unreadable("this file is not a Jupyter notebook in format 4", self.seed,
                                exercise)
        else:
            result = grade_cells([(str(cell_id), str(source)) for cell_id, source in cells],
                                 self.seed, tampering=tampering, language=decide(None, nb),
                                 exercise=exercise)
        extra = result.extra
        resources["mhakit"] = {"review": needs_review(result)}
        if result.status is not Status.GRADED:
            self.log.error("mha-kit could not grade %s: %s", student, extra.get("error"))
        else:
            self.log.info("mha-kit graded %s: %s/%s points (seed %s, %s)", student,
                          result.score, result.max_score, result.seed,
                          ", ".join(extra.get("isolation", [])))
        for cell in nb.cells:
            part = test_cell_part(grade_id_of(cell), exercise)
            if cell.cell_type == "code" and part is not None:
                points = nbgrader_meta(cell).get("points", part_max(part, exercise))
                cell.outputs = [nbformat.from_dict(output)
                                for output in test_cell_outputs(part, points, result)]
                cell.execution_count = None
        return nb, resources


class FlagTampering(NbGraderPreprocessor):
    """After SaveAutoGrades: put tampering and grading failures in front of the
    instructor, in formgrader, by flagging the grades for review with a comment."""

    def preprocess(self, nb, resources):
        problems = (resources.get("mhakit") or {}).get("review") or []
        if not problems:
            return nb, resources
        ids = resources["nbgrader"]
        note = "mha-kit: " + "; ".join(problems)
        with Gradebook(ids["db_url"]) as gradebook:
            notebook = gradebook.find_submission_notebook(ids["notebook"], ids["assignment"],
                                                          ids["student"])
            for grade in notebook.grades:
                grade.needs_manual_grade = True
            for comment in notebook.comments:
                comment.auto_comment = note
            gradebook.db.commit()
        return nb, resources


class CheckCellMetadataOnce(CheckCellMetadata):
    """nbgrader's check of every cell's nbgrader metadata, as it is, minus one cost: it
    validates each cell with ``jsonschema.validate``, which first checks the schema itself
    against JSON Schema's metaschema, once per cell (28 ms a notebook, and autograde runs
    this step twice). Here nbgrader's validator finds a ``jsonschema`` whose ``validate``
    checks each schema once per process; every cell is still validated, and a cell that
    fails raises jsonschema's own error, the one ``jsonschema.validate`` raises."""

    def preprocess(self, nb, resources):
        with _schema_checked_once():
            return super().preprocess(nb, resources)


class _SchemaCheckedOnce:
    """The part of jsonschema that nbgrader's metadata validator calls."""

    validators: dict = {}  # a schema, as JSON -> its validator, checked once

    @classmethod
    def validate(cls, instance, schema):
        key = json.dumps(schema, sort_keys=True)
        validator = cls.validators.get(key)
        if validator is None:
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = cls.validators[key] = kind(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


@contextlib.contextmanager
def _schema_checked_once():
    nbgrader_format.jsonschema = _SchemaCheckedOnce
    try:
        yield
    finally:
        # The module itself, not what was there before: were two of these ever to overlap
        # (formgrader's threads), the last to end would otherwise leave the stand-in behind.
        nbgrader_format.jsonschema = jsonschema


class ClearSolutionsKeepingQuizStubs(ClearSolutions):
    """nbgrader's ClearSolutions, except that a solution region at the top level of a
    cell (the quiz's answer cells) becomes a comment instead of `raise
    NotImplementedError()`: the line above it already leaves the answer at None, and an
    untouched notebook then runs to its end."""

    top_level_stub = "# 在上面一行作答 / answer on the line above"

    def preprocess_cell(self, cell, resources, cell_index):
        top_level = cell.cell_type == "code" and any(
            self.begin_solution_delimeter in line and not line[:1].isspace()
            for line in cell.source.split("\n"))
        if not top_level:
            return super().preprocess_cell(cell, resources, cell_index)
        saved = self.code_stub
        self.code_stub = dict(saved, **{resources["language"]: self.top_level_stub})
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self.code_stub = saved
