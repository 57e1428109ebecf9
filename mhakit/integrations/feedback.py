"""A student's feedback file, in Markdown and in HTML, from one Result.

Per function: the points, each check's outcome, a named mistake with its hint, and a style
note; the 0-point checks that failed come last, under a line that says why they cost
nothing (grading.part_summary); then the quiz with its explanations. It holds what results.json holds, which never
includes a hidden input, an expected value or the checks' code. Hand it out once grades
are published: the hidden checks' outcomes and the quiz explanations are in it. The same
per-function text is what nbgrader's generate_feedback shows in each test cell.
"""

import html

from ..exercise import of_result
from ..grader.grading import part_summary
from ..grader.result import Result
from ..selfcheck.wording import decide, pick

WORDS = {
    "zh": {"title": "{name} 作业反馈（{title}）", "total": "自动评分", "part": "部分", "points": "得分",
           "status": "状态", "unreadable": "这份提交无法评分", "note": "注意"},
    "en": {"title": "Feedback on the {name} assignment ({title})", "total": "Auto-graded score",
           "part": "part", "points": "points", "status": "status",
           "unreadable": "This submission could not be graded", "note": "Note"},
}


def _words(result):
    language, exercise = decide(result.language), of_result(result)
    words = dict(WORDS[language])
    words["title"] = words["title"].format(name=exercise.name, title=pick(exercise.title,
                                                                         language))
    return words


def _why_ungraded(result: Result) -> str:
    return result.output if result.output is not None else result.status_text()


def feedback_parts(result: Result) -> list[tuple[str, float, float, str]]:
    """[(part, points earned, points possible, its summary)]: what both files show.
    Working the summaries out is most of writing feedback, so a caller that writes
    both files works them out once and hands them to each."""
    found = []
    for part in of_result(result).parts:
        tests = result.tests_of(part)
        if tests:
            earned = sum(t.score for t in tests)
            possible = sum(t.max_score for t in tests)
            found.append((part, earned, possible, part_summary(result, part)))
    return found


def feedback_markdown(student: str, result: Result, parts=None) -> str:
    words = _words(result)
    lines = [f"# {words['title']}: {student}", "",
             f"**{words['total']}: {result.score:g} / {result.max_score:g}**", ""]
    if not result.tests:
        lines += [f"{words['unreadable']}: {_why_ungraded(result)}", ""]
    lines += [f"{words['note']}: {note}\n" for note in result.extra.get("batch_notes") or ()]
    for part, earned, possible, summary in parts or feedback_parts(result):
        heading = f"## {part}" + (f" ({earned:g} / {possible:g})" if possible else "")
        lines += [heading, "", "```", summary, "```", ""]
    return "\n".join(lines)


def feedback_html(student: str, result: Result, parts=None) -> str:
    language = decide(result.language)
    words = _words(result)
    escape = html.escape
    body = [f"<h1>{escape(words['title'])}: {escape(student)}</h1>",
            f"<p><strong>{escape(words['total'])}: {result.score:g} / "
            f"{result.max_score:g}</strong></p>"]
    if not result.tests:
        body.append(f"<p>{escape(words['unreadable'])}: "
                    f"{escape(_why_ungraded(result))}</p>")
    body += [f"<p>{escape(words['note'])}: {escape(note)}</p>"
             for note in result.extra.get("batch_notes") or ()]
    for part, earned, possible, summary in parts or feedback_parts(result):
        points = f" ({earned:g} / {possible:g})" if possible else ""
        body += [f"<h2>{escape(part)}{points}</h2>", f"<pre>{escape(summary)}</pre>"]
    return ("<!DOCTYPE html>\n"
            f'<html lang="{pick(("zh-CN", "en"), language)}"><head><meta charset="utf-8">'
            f"<title>{escape(words['title'])}: {escape(student)}</title>"
            "<style>body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
            "pre{white-space:pre-wrap;background:#f6f6f6;padding:.75rem}</style></head>\n"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")
