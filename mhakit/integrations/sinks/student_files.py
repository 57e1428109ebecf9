"""Each student's folder: results.json, feedback.md and feedback.html."""

import json

from ..feedback import feedback_html, feedback_markdown, feedback_parts
from ..sink import write_atomically

ORDER = 10
FILES = ()  # inside the students' own folders


class StudentFiles:
    def __init__(self, out):
        self.out = out

    def take(self, taken):
        if taken.how == "kept":  # its files are on disk already
            return
        folder, result = self.out / taken.student, taken.result
        write_atomically(folder / "results.json", json.dumps(result.as_json(), indent=1))
        parts = feedback_parts(result)
        write_atomically(folder / "feedback.md", feedback_markdown(taken.student, result, parts))
        write_atomically(folder / "feedback.html", feedback_html(taken.student, result, parts))

    def finish(self, results):
        pass


def sink(run):
    return StudentFiles(run.out)
