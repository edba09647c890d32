"""The HTML report of the sample CNN: well-formed, self-contained, and showing what ``ac -c`` found."""
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from html_builders import CNN, CONV3, RES_ADD, RES_CONV, sample_result
from sample_counts import dumped_tensors
from precision_tool.reports.html import build_report, render_page, write_report
from precision_tool.reports.result_csv import read_result_csv

VOID = {"meta", "input", "br", "img", "hr", "link", "col", "source", "wbr"}


class TreeChecker(HTMLParser):
    """Collects tags and checks that every element is closed in order (SVG self-closing tags included)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.elements = [], [], []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def find(self, tag, **wanted):
        return [attrs for name, attrs in self.elements if name == tag
                and all(attrs.get(key.replace("_", "-")) == value for key, value in wanted.items())]


def parse(page: str) -> TreeChecker:
    checker = TreeChecker()
    checker.feed(page)
    checker.close()
    return checker


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sample_result")
    csv = sample_result(folder)
    data = build_report(str(csv), data_dir=str(CNN))
    return csv, data, render_page(data)


def test_page_is_well_formed_and_every_element_closes(sample):
    _csv, _data, page = sample
    checker = parse(page)
    assert checker.problems == [] and checker.stack == []
    assert page.startswith("<!DOCTYPE html>")


def test_page_needs_no_network_and_no_other_file(sample):
    _csv, _data, page = sample
    fetched = page.replace('"http://www.w3.org/2000/svg"', "")  # the SVG namespace: a name, never fetched
    for needle in ("http://", "https://", "src=", "<link", "@import", "//cdn", "sourceMappingURL"):
        assert needle not in fetched, needle
    assert not re.search(r"url\((?!#)", fetched)  # url(#graph-arrow): a marker in the page itself
    assert page.count("<script") == 4 and page.count("<style") == 1  # graph data, dagre, graph view, table


def test_table_has_every_csv_row_and_marks_every_failing_tensor(sample):
    csv, data, page = sample
    checker = parse(page)
    rows = [attrs for tag, attrs in checker.elements if tag == "tr" and attrs.get("id", "").startswith("row-")]
    assert len(rows) == len(read_result_csv(csv).rows) == dumped_tensors()
    summary = json.loads((csv.parent / "summary.json").read_text())
    failing_ids = {item["tensor_id"] for item in summary["failing"]}
    cast = {tensor for tensor in failing_ids if tensor.startswith("trans_Cast_")}  # carries it to the float32 Add
    assert failing_ids - cast == {f"{RES_CONV}:output:0", f"{RES_ADD}:input:1"} and len(cast) == 2
    failing_rows = [attrs for attrs in rows if "fail" in attrs["class"].split()]
    assert {data.rows[int(attrs["id"][4:])].tensor_id for attrs in failing_rows} == failing_ids
    (first,) = [attrs for attrs in rows if "first" in attrs["class"].split()]
    assert first["data-op"] == RES_CONV


def test_plot_has_one_point_per_compared_tensor_in_each_panel(sample):
    _csv, data, page = sample
    assert data.counts["compared"] == dumped_tensors()
    for panel in ("cosine", "relative-error"):
        start = page.index(f'<g id="points-{panel}">')
        group = page[start:page.index("</g>", start)]  # points are <a> elements: the first </g> closes the group
        points = re.findall(r'<a href="#row-(\d+)" class="point (?:pass|fail)">', group)
        assert len(points) == dumped_tensors()
        assert [int(p) for p in points] == sorted(int(p) for p in points)  # execution order
    # 4 failing tensors in each of the two panels, and the culprit's output above its floor in the local panel
    assert len(re.findall(r'class="point fail"', page)) == 4 * 2 + 1


def test_first_divergence_marker_names_the_planted_op_and_overflow_marks_conv3(sample):
    _csv, _data, page = sample
    checker = parse(page)
    (marker,) = checker.find("g", id="first-divergence")
    assert marker["data-op"] == RES_CONV
    assert f"first divergence: {RES_CONV}</text>" in page
    assert [attrs["data-op"] for attrs in checker.find("g", **{"class": "overflow-marker"})] == [CONV3]
    assert 'id="threshold-line"' in page


def test_verdict_is_the_one_ac_prints(sample):
    csv, data, page = sample
    headline = f"Most likely culprit: {RES_CONV} (Conv2D), by local error (replay)."
    assert data.findings.verdict.headline == headline
    assert f'<p class="headline" id="verdict-headline">{headline}</p>' in page
    assert re.search(r"but the fusion-off run computes the same \(relative distance 0\.000\d+\)", page)
    assert f"precision_tool -d {CNN} ni -f {csv.parent} {RES_CONV}" in page  # the result is outside the workspace
    assert "Overflow run: 1 Opdebug record(s)" in page  # ac's overflow section, as printed


def test_failing_tensor_details_match_the_csv(sample):
    csv, data, page = sample
    detail = data.details.tensors[0]
    assert detail.tensor_id == f"{RES_CONV}:output:0" and detail.shape == (2, 8, 8, 16)
    assert sum(detail.histogram.counts) == 2 * 8 * 8 * 16  # every element binned: a zero reference's error is 0 or inf
    (row,) = [r for r in read_result_csv(csv).rows if r.tensor_id == detail.tensor_id]
    assert detail.worst[0].abs_error == pytest.approx(row.metric("MaxAbsoluteError"), abs=1e-6)
    assert len(detail.worst) == 10  # report's default --worst, pinned: a full list (the tensor has 2048 elements)
    assert all(a.abs_error >= b.abs_error for a, b in zip(detail.worst, detail.worst[1:]))
    # the Cast's input is the very bytes of the culprit's output, the Add's input 1 those of the Cast's output (it
    # carries the float16 output to the float32 Add): one card for each pair
    assert page.count('class="histogram"') == len(data.details.tensors) == 2
    (cast,) = detail.same_bytes_as
    assert cast.startswith("trans_Cast_") and cast.endswith(":input:0")
    assert f"also {cast}: the same bytes, fed by this output (not shown twice)" in page
    assert data.details.tensors[1].same_bytes_as == (f"{RES_ADD}:input:1",)
    assert 'id="detail-0" data-op="' + RES_CONV in page


def test_coverage_section_counts_what_was_left_out(sample):
    _csv, _data, page = sample
    assert "reference tensors compared with nothing: 35" in page
    assert f"<th>NPU tensors dumped</th><td>{dumped_tensors()}</td>" in page


def test_write_report_is_atomic_and_returns_the_path(sample, tmp_path):
    _csv, data, _page = sample
    path = write_report(data, str(tmp_path / "deep" / "report.html"))
    assert Path(path).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in (tmp_path / "deep").iterdir()] == ["report.html"]  # no temporary file left


def test_the_report_of_a_result_is_deterministic_but_for_its_date(sample):
    csv, _data, page = sample
    again = render_page(build_report(str(csv), data_dir=str(CNN)))
    strip = re.compile(r"made \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    assert strip.sub("", again) == strip.sub("", page)
