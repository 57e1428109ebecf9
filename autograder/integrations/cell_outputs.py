"""What each nbgrader test cell shows after grading, and so what nbgrader scores it.

Both doors to the gradebook use this: ``nbgrader autograde`` (through IsolatedAutograde)
and ``mhakit grade --gradebook``. nbgrader's ``determine_grade`` reads a test cell's
outputs: full marks for plain output, partial credit from an ``execute_result`` that
holds the points, zero for an error. Outputs here are plain nbformat 4 dicts.
"""

from ..grader.grading import PARTS, part_summary
from ..grader.hidden_checks import POINTS, QUIZ_POINTS

TEST_CELL_PART = {f"test_{part}": part for part in PARTS}


def part_max(part):
    return float(sum(QUIZ_POINTS.values()) if part == "quiz" else sum(POINTS[part]))


def test_cell_outputs(part, cell_points, result):
    """The outputs of the test cell of ``part`` (worth ``cell_points``) for ``result``."""
    score = result["extra_data"]["parts"].get(part, 0.0)
    summary = part_summary(result, part) or result.get("output", "not graded")
    tampering = result["extra_data"].get("tampering")
    if tampering:
        summary = "⚠ changed where it should not be: " + "; ".join(tampering) + "\n" + summary
    earned = round(score / part_max(part) * float(cell_points), 6)
    if earned <= 0:
        first = next((t["output"] for t in result["tests"] if t["name"].startswith(part + ":")
                      and t["status"] != "passed"), "not graded")
        return [{"output_type": "error", "ename": "NotPassing", "evalue": first,
                 "traceback": summary.splitlines()}]
    outputs = [{"output_type": "stream", "name": "stdout", "text": summary + "\n"}]
    if earned < float(cell_points):
        outputs.append({"output_type": "execute_result", "execution_count": None,
                        "metadata": {}, "data": {"text/plain": f"{earned:g}"}})
    return outputs
