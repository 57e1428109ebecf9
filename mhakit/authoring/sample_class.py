"""A small class of sample submissions, made from the release and the reference.

The exercise's ``sample_class.sample_answers(exercise)`` says which answer cells each
sample student fills, and with what; this writes them into copies of the release.
"""

import copy

import nbformat

from ..selfcheck.cells import grade_id_of
from .build import solution_cell_source


def reference_body(exercise, function):
    """The reference's function as an answer cell holds it, without the solution markers."""
    lines = solution_cell_source(exercise, function).splitlines()
    return "\n".join(line for line in lines if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def edited(exercise, function, old, new):
    """The reference's function with one edit: a sample student's mistake."""
    source = reference_body(exercise, function)
    if old not in source:
        raise ValueError(f"sample edit for {function} no longer matches the reference")
    return source.replace(old, new)


def fill(release_notebook, answers):
    notebook = copy.deepcopy(release_notebook)
    for cell in notebook.cells:
        grade_id = grade_id_of(cell)
        if grade_id in answers:
            cell.source = answers[grade_id]
    return notebook


def write_sample_class(exercise, release_notebook_path, submitted_dir, assignment=None):
    """Write submitted/<student>/<assignment>/<notebook> for every sample student."""
    assignment = assignment or exercise.default_assignment
    release = nbformat.read(str(release_notebook_path), as_version=4)
    paths = {}
    for student, answers in exercise.content("sample_class").sample_answers(exercise).items():
        path = submitted_dir / student / assignment / release_notebook_path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(release, answers), str(path))
        paths[student] = path
    return paths
