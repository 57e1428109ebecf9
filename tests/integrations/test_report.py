"""autograder/integrations/report.py: the class report that comes with every folder run
(report.md, checks.csv, mistakes.csv, scores.png, and the histogram in the terminal)."""

import csv
import json

from tests.integrations.test_cli import mhakit


def test_a_class_report_comes_with_every_folder_run(course, tmp_path):
    out = tmp_path / "out"
    done = mhakit("grade", str(course / "submitted"), "--out", str(out), "--seed", "6", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"Class report: {len(results)} submissions" in report
    with open(out / "checks.csv", newline="", encoding="utf-8") as handle:
        rows = {row["check"]: row for row in csv.DictReader(handle)}
    failed_split = sum(t["status"] == "failed" for r in results.values() for t in r["tests"]
                       if t["name"] == "split_heads: matches the reference on random inputs")
    assert int(rows["split_heads: matches the reference on random inputs"]["failed"]) == failed_split
    counts = [int(line.split()[-1]) for line in report.split("```")[1].strip().splitlines()]
    assert sum(counts) == len(results)
    assert (out / "scores.png").stat().st_size > 1000
    assert "█" in done.stderr  # the same histogram, in the terminal
    # bob forgot the max subtraction and the transpose in split_heads: both are named.
    with open(out / "mistakes.csv", newline="", encoding="utf-8") as handle:
        mistakes = {row["mistake"]: int(row["students"]) for row in csv.DictReader(handle)}
    tagged = {tag for r in results.values() for t in r["tests"] for tag in t.get("tags", [])}
    assert {"softmax/no-max-subtraction", "split_heads/reshape-without-transpose"} <= set(mistakes)
    assert set(mistakes) == tagged
    assert "`split_heads/reshape-without-transpose` | 1 |" in report
