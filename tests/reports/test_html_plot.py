"""The SVG plot and histogram: points, axes, markers, undefined values -- from small made-up inputs."""
import re
import xml.etree.ElementTree as ET

import pytest

from precision_tool.metrics.errors_detail import error_histogram
from precision_tool.reports.html.details import histogram_labels
from precision_tool.reports.html.findings import OverflowMark
from precision_tool.reports.html.histogram import histogram_svg
from precision_tool.reports.html.plot import (COSINE_HEIGHT, MARKER_BAND, PlotPoint, accuracy_plot_svg,
                                              cosine_domain, cosine_ticks, log_domain, x_of)

NS = "{http://www.w3.org/2000/svg}"


def points(*cosines, rel=1e-3):
    return [PlotPoint(k, k, f"op{k}:output:0", f"op{k}", c, rel if c is not None else None,
                      c is None or c < 0.99, total_error=rel if c is not None else None)
            for k, c in enumerate(cosines)]


def svg_tree(svg: str):
    return ET.fromstring(svg)


def group(root, group_id):
    return next(node for node in root.iter(f"{NS}g") if node.get("id") == group_id)


def test_one_point_per_tensor_in_each_panel_and_undefined_cosines_on_their_strip():
    root = svg_tree(accuracy_plot_svg(points(1.0, 0.999, None, 0.5), 0.99, standalone=True))
    assert root.get("data-points") == "4"
    cosine = list(group(root, "points-cosine"))
    assert len(cosine) == 4 and len(list(group(root, "points-relative-error"))) == 4
    circles = [node.find(f"{NS}circle") for node in cosine]
    assert circles[2] is None and cosine[2].find(f"{NS}path") is not None  # NaN: a cross, not a circle
    top = MARKER_BAND
    ys = [float(c.get("cy")) for c in circles if c is not None]
    assert ys[0] == pytest.approx(top)  # cosine 1 on the top edge
    assert top < ys[1] < ys[2] <= top + COSINE_HEIGHT  # 0.999 below it, 0.5 lowest
    xs = [float(c.get("cx")) for c in circles if c is not None]
    assert xs == sorted(xs) and xs[0] == pytest.approx(x_of(0, 4))


def test_threshold_line_sits_at_the_threshold():
    root = svg_tree(accuracy_plot_svg(points(1.0, 0.9), 0.95, standalone=True))
    line = group(root, "threshold-line").find(f"{NS}line")
    low, high = cosine_domain([1.0, 0.9], 0.95)
    expected = MARKER_BAND + (high - 0.95) / (high - low) * COSINE_HEIGHT
    assert float(line.get("y1")) == pytest.approx(expected, abs=0.01)
    assert 'id="threshold-line"' not in accuracy_plot_svg(points(1.0), None)


def test_divergence_marker_is_on_the_first_failing_tensor_of_its_op():
    data = points(1.0, 1.0, 0.5, 0.4)
    data[1] = PlotPoint(1, 1, "op2:input:0", "op2", 1.0, 1e-3, False)  # op2's passing input comes first
    root = svg_tree(accuracy_plot_svg(data, 0.99, "op2", standalone=True))
    marker = group(root, "first-divergence")
    assert marker.get("data-op") == "op2"
    assert float(marker.find(f"{NS}line").get("x1")) == pytest.approx(x_of(2, 4))
    assert "first divergence: op2" in "".join(marker.itertext())
    assert 'id="first-divergence"' not in accuracy_plot_svg(data, 0.99, "not_in_the_plot")


def test_overflow_ops_missing_from_the_comparison_are_counted_in_the_legend():
    marks = [OverflowMark("op1", "overflow record 1: AI Core"), OverflowMark("elsewhere", "record 2")]
    svg = accuracy_plot_svg(points(1.0, 1.0), 0.99, None, marks)
    assert len(re.findall(r'class="overflow-marker" data-op="op1"', svg)) == 1
    assert "1 overflow op(s) not in the comparison" in svg


def test_axes_adapt_to_the_data():
    assert cosine_domain([1.0], 0.99)[0] < 0.99 < 1.0
    assert cosine_domain([-1.0], 0.99) == (-1.0, 1.0)
    assert cosine_ticks(0.88, 1.0) == [0.88, 0.9, 0.92, 0.94, 0.96, 0.98, 1.0]
    assert log_domain([0.0, 1e-3, float("inf"), None]) == (-3, -1)
    assert log_domain([1e-12, 1.0]) == (-8, 0)  # floor at 1e-8


def test_empty_plot_says_so():
    svg = accuracy_plot_svg([], 0.99)
    assert "no compared tensor" in svg and 'data-points="0"' in svg


def test_histogram_bars_match_the_counts():
    histogram = error_histogram([1.0, 2.0, 3.0, 1.0], [1.0, 2.2, 0.0, 1.0005])
    root = svg_tree(histogram_svg(histogram, histogram_labels(histogram.edges), title="t", standalone=True))
    bins = [node for node in root.iter(f"{NS}g") if node.get("class") == "bin"]
    assert [int(node.get("data-count")) for node in bins] == list(histogram.counts)
    heights = [float(node.find(f"{NS}rect").get("height")) for node in bins]
    assert heights[0] == heights[3] == heights[5] == heights[7] > 0 and heights[1] == 0  # 3 over 0: inf, last bin
    assert "over a zero reference: 0 when equal, else inf" in "".join(root.itertext())


def test_the_error_panel_shows_the_relative_error_not_the_max_relative_error():
    """A passing tensor with one reference element near zero has a huge max relative error (32 on the sample CNN)
    and a small relative error ||npu - ref|| / ||ref||; the culprit the reverse: the panel must rank them by the
    second, so the culprit stands out instead of a sawtooth of innocent tensors."""
    innocent = PlotPoint(0, 0, "a:output:0", "a", 0.99999, 32.0, False, total_error=1e-3)
    culprit = PlotPoint(1, 1, "b:output:0", "b", 0.90, 4.8, True, total_error=0.5)
    root = svg_tree(accuracy_plot_svg([innocent, culprit], 0.99, standalone=True))
    dots = [node.find(f"{NS}circle") for node in group(root, "points-relative-error")]
    y_innocent, y_culprit = (float(dot.get("cy")) for dot in dots)
    assert y_culprit < y_innocent  # higher on the page = larger
    titles = [node.find(f"{NS}title").text for node in group(root, "points-relative-error")]
    assert "relative error 0.001, max relative error 32" in titles[0]


def test_only_the_page_invites_hovering():
    assert "hover a point" in accuracy_plot_svg(points(1.0), 0.99)
    assert "hover a point" not in accuracy_plot_svg(points(1.0), 0.99, standalone=True)  # the .svg/.png files
