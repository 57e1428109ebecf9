"""mhakit/integrations/report.py: the class report that comes with every folder run
(report.md, checks.csv, mistakes.csv, scores.svg, and the histogram in the terminal)."""

import csv
import json
import xml.etree.ElementTree as ElementTree

import pytest

from mhakit.integrations.report import histogram_svg

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
    assert bar_counts(out / "scores.svg") == counts
    assert "█" in done.stderr  # the same histogram, in the terminal
    # bob forgot the max subtraction and the transpose in split_heads: both are named.
    with open(out / "mistakes.csv", newline="", encoding="utf-8") as handle:
        mistakes = {row["mistake"]: int(row["students"]) for row in csv.DictReader(handle)}
    tagged = {tag for r in results.values() for t in r["tests"] for tag in t.get("tags", [])}
    assert {"softmax/no-max-subtraction", "split_heads/reshape-without-transpose"} <= set(mistakes)
    assert set(mistakes) == tagged
    assert "`split_heads/reshape-without-transpose` | 1 |" in report


SVG = "{http://www.w3.org/2000/svg}"


def bar_counts(path):
    """The count each bar of the chart stands for, from its tooltip."""
    bars = ElementTree.parse(path).getroot().iter(f"{SVG}rect")
    return [int(bar.find(f"{SVG}title").text.rsplit(": ", 1)[1])
            for bar in bars if bar.get("class") == "bar"]


@pytest.mark.parametrize("counts", [[0] * 10, [3, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                                    [0, 0, 80, 0, 0, 80, 0, 80, 0, 160]])
def test_the_chart_draws_each_bin_in_proportion(tmp_path, counts):
    histogram = [(10 * i, 10 * (i + 1), count) for i, count in enumerate(counts)]
    (tmp_path / "chart.svg").write_text(histogram_svg(histogram), encoding="utf-8")
    assert bar_counts(tmp_path / "chart.svg") == counts
    root = ElementTree.parse(tmp_path / "chart.svg").getroot()
    heights = [float(bar.get("height")) for bar in root.iter(f"{SVG}rect")
               if bar.get("class") == "bar"]
    tallest = max(heights)
    for count, height in zip(counts, heights):
        assert height == pytest.approx(tallest * count / max(max(counts), 1), abs=0.1)
    gridlines = [int(text.text) for text in root.iter(f"{SVG}text") if text.text.isdigit()]
    assert gridlines[0] == 0 and len(gridlines) <= 6 and gridlines[-1] <= max(max(counts), 1)
    labels = [text.text for text in root.iter(f"{SVG}text") if "–" in (text.text or "")]
    assert labels == [f"{10 * i}–{10 * (i + 1)}" for i in range(10)]
