"""The sample report in a real browser: headless Chromium runs the page's script, renders it, and finds no error.

Skipped, with the reason, when no Chromium is installed (``make browser`` installs Debian's ``chromium``).
"""
import re
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from html_builders import CNN, EVIL, RES_CONV, sample_result, tensor, write_synthetic_result
from sample_counts import dumped_tensors
from precision_tool.reports.html import build_report, write_report
from precision_tool.reports.html.browser import dump_dom, file_url, find_chromium, screenshot

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(find_chromium() is None,
                                 reason="no Chromium found (make browser, or apt-get install chromium)")]


@pytest.fixture(scope="module")
def sample_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    csv = sample_result(folder / "out")
    return Path(write_report(build_report(str(csv), data_dir=str(CNN)), str(folder / "report.html")))


def body_attrs(dom: str) -> str:
    return re.search(r"<body([^>]*)>", dom).group(1)


def rows_in_order(dom: str):
    tbody = dom[dom.index('<table id="tensor-table"'):]
    return re.findall(r'<tr id="row-\d+" class="([^"]*)" data-op="([^"]*)"', tbody)


def test_script_runs_without_error_and_fills_the_table_controls(sample_page):
    run = dump_dom(file_url(sample_page))
    assert 'data-status="ok"' in body_attrs(run.stdout), body_attrs(run.stdout)
    total = dumped_tensors()
    assert f'<span id="table-count">{total} of {total} tensors shown</span>' in run.stdout
    assert '<input type="search" id="table-filter"' in run.stdout
    assert "Uncaught" not in run.stderr  # nothing thrown, not even after init


def test_divergence_marker_carries_the_planted_op(sample_page):
    dom = dump_dom(file_url(sample_page)).stdout
    assert re.search(rf'<g id="first-divergence" data-op="{re.escape(RES_CONV)}">', dom)
    assert f">first divergence: {RES_CONV}</text>" in dom


def test_query_filters_and_sorts_the_table(sample_page):
    dom = dump_dom(file_url(sample_page, "failing=1")).stdout
    # the culprit's output, the Cast carrying it to the float32 Add (input and output) and the Add's input
    assert 'data-rows-shown="4"' in body_attrs(dom) and f"4 of {dumped_tensors()} tensors shown" in dom
    dom = dump_dom(file_url(sample_page, "sort=CosineSimilarity")).stdout
    first_class, first_op = rows_in_order(dom)[0]
    assert first_op == RES_CONV and "first" in first_class.split()  # lowest cosine first
    assert 'aria-sort="ascending"' in dom
    dom = dump_dom(file_url(sample_page, "filter=RES_RELU")).stdout  # case-insensitive, any cell
    (csv,) = (sample_page.parent / "out").glob("result_*.csv")
    expected = sum("res_relu" in line for line in csv.read_text().splitlines())
    # the ReLU's input and output, and the Cast that carries its float32 output to the float16 Cube op after it
    # (its reference is the ReLU's): found in every cell
    assert expected == 4 and f"{expected} of {dumped_tensors()} tensors shown" in dom


def test_a_broken_page_is_reported_as_an_error(sample_page, tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text(sample_page.read_text(encoding="utf-8").replace('<div id="table-controls"></div>', ""),
                      encoding="utf-8")
    attrs = body_attrs(dump_dom(file_url(broken)).stdout)
    assert 'data-status="error"' in attrs and "data-error=" in attrs


def test_names_with_markup_stay_text_in_the_browser(tmp_path):
    rows = [tensor(0, "input_op"), tensor(1, EVIL, cosine=0.5, status="FAIL")]
    csv = write_synthetic_result(tmp_path / "out", rows, edges={EVIL: [["input_op", 0]]})
    page = write_report(build_report(str(csv), run_checks=False), str(tmp_path / "evil.html"))
    dom = dump_dom(file_url(page)).stdout
    assert 'data-status="ok"' in body_attrs(dom)
    # our four scripts (the graph's JSON data, dagre, the graph view, the table's script) and no other
    assert dom.count("<script") == 4 and "<script>alert" not in dom
    assert dom.count('<script type="application/json" id="graph-data">') == 1
    escaped = EVIL.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    assert '<g transform=' in dom and f'data-op="{escaped}" data-index="1" class="node op fail' in dom


def test_screenshot_of_the_report(sample_page, tmp_path):
    png = screenshot(file_url(sample_page), tmp_path / "report.png", 1400, 2000)
    data = Path(png).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 2000)
    assert len(data) > 50_000  # a rendered page, not a blank one (a blank 1400x2000 PNG is a few kB)
