"""nbgrader's door to the isolated grader.

``IsolatedAutograde`` takes the place of nbgrader's ``Execute`` in ``Autograde``. It
never starts a kernel: it grades the notebook's answer cells with mha-kit's grader
(student code in a separate, limited process) and writes each test cell's output so
that nbgrader's own ``SaveAutoGrades`` reads the score:
full marks as plain output, partial credit as an ``execute_result`` holding the
points, zero as an error. See ``nbgrader.utils.determine_grade``.
"""

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from .grading import grade_notebook_node, part_scores, part_summary, PARTS
from .hidden_checks import POINTS, QUIZ_POINTS

TEST_CELL_PART = {f"test_{part}": part for part in PARTS}


def part_max(part):
    return float(sum(QUIZ_POINTS.values()) if part == "quiz" else sum(POINTS[part]))


class IsolatedAutograde(NbGraderPreprocessor):
    seed = Integer(None, allow_none=True,
                   help="Seed for the hidden inputs; a fresh one per notebook if unset").tag(config=True)

    def preprocess(self, nb, resources):
        student = resources.get("nbgrader", {}).get("student", "?")
        result = grade_notebook_node(nb, seed=self.seed)
        extra = result["extra_data"]
        self.log.info("mha-kit graded %s: %s/%s points (seed %s, %s)", student, result["score"],
                      extra["max_score"], extra["seed"], ", ".join(extra.get("isolation", [])))
        scores = part_scores(result)
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            part = TEST_CELL_PART.get(grade_id)
            if cell.cell_type == "code" and part is not None:
                cell.outputs = self.outputs_for(cell, part, scores[part], result)
                cell.execution_count = None
        return nb, resources

    def outputs_for(self, cell, part, score, result):
        summary = part_summary(result, part) or result.get("output", "not graded")
        cell_max = float(cell.metadata["nbgrader"].get("points", part_max(part)))
        earned = round(score / part_max(part) * cell_max, 6)
        if earned <= 0:
            first = next((t["output"] for t in result["tests"] if t["name"].startswith(part + ":")
                          and t["status"] != "passed"), "not graded")
            return [nbformat.v4.new_output("error", ename="NotPassing", evalue=first,
                                           traceback=summary.splitlines())]
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=summary + "\n")]
        if earned < cell_max:
            outputs.append(nbformat.v4.new_output(
                "execute_result", data={"text/plain": f"{earned:g}"}, execution_count=None))
        return outputs
