"""What each nbgrader test cell shows after grading, and so what nbgrader scores it.

Both doors to the gradebook use this: ``nbgrader autograde`` (through IsolatedAutograde)
and ``mhakit grade --gradebook``. nbgrader's ``determine_grade`` reads a test cell's
outputs: full marks for plain output, partial credit from an ``execute_result`` that
holds the points, zero for an error. Outputs here are plain nbformat 4 dicts.
"""

from typing import Any

from ..exercise import current, of_result
from ..grader.grading import part_summary
from ..grader.result import Result


def test_cell_part(grade_id, exercise=None):
    """The part of ``exercise`` (by default ``current()``) whose test cell has this grade
    id ("test_<part>"), or None."""
    parts = (exercise or current()).parts
    if isinstance(grade_id, str) and grade_id.startswith("test_"):
        part = grade_id[len("test_"):]
        return part if part in parts else None
    return None


def part_max(part, exercise=None):
    return (exercise or current()).part_points(part)


def test_cell_outputs(part: str, cell_points, result: Result) -> list[dict[str, Any]]:
    """The outputs of the test cell of ``part`` (worth ``cell_points``) for ``result``."""
    score = result.parts.get(part, 0.0)
    summary = part_summary(result, part) or (
        result.output if result.output is not None else "not graded")
    tampering = result.extra.get("tampering")
    if tampering:
        summary = "⚠ changed where it should not be: " + "; ".join(tampering) + "\n" + summary
    earned = round(score / part_max(part, of_result(result)) * float(cell_points), 6)
    if earned <= 0:
        return [{"output_type": "error", "ename": "NotPassing",
                 "evalue": _first_failure(part, result), "traceback": summary.splitlines()}]
    outputs: list[dict[str, Any]] = [{"output_type": "stream", "name": "stdout",
                                      "text": summary + "\n"}]
    if earned < float(cell_points):
        outputs.append({"output_type": "execute_result", "execution_count": None,
                        "metadata": {}, "data": {"text/plain": f"{earned:g}"}})
    return outputs


def _first_failure(part: str, result: Result) -> str:
    """The output of the first check of ``part`` that cost points, else of the first that
    did not pass: the error's one line names what the score is about."""
    failed = [t for t in result.tests_of(part) if t.status != "passed"]
    costly = [t for t in failed if t.max_score]
    return next((t.output for t in costly + failed), "not graded")
