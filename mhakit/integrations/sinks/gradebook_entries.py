"""With ``--gradebook``: each student's grades and comments in nbgrader's gradebook (the
graded notebook itself went to autograded/ from the grading worker)."""

ORDER = 20
FILES = ()


class GradebookEntries:
    def __init__(self, book):
        self.book = book

    def take(self, taken):
        # Kept results too: they may predate the gradebook's last change.
        if taken.notebook is not None and taken.student not in self.book.excluded:
            self.book.record(taken.student, taken.notebook, taken.result, taken.cells)

    def finish(self, results):
        pass  # the run closes the gradebook: it also holds the earlier submissions


def sink(run):
    return GradebookEntries(run.book) if run.book is not None else None
