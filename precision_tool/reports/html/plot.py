"""The accuracy plot as SVG text: cosine similarity and relative error per tensor, in execution order.

Two panels share the x axis (one point per compared tensor): cosine similarity with the threshold dashed, and the
relative error ``||npu - ref|| / ||ref||`` (msaccucmp's RelativeEuclideanDistance, not the *max* relative error) on a
log axis; with replay figures (``ac -c``) each replayed output's local error (dots) over its total error (line). An
undefined value (``NaN``) sits on an "undefined" strip, the first divergence is a red vertical line, the overflow ops
orange triangles; every point has a ``<title>`` and links to its table row. No plotting library; every name goes
through :func:`~precision_tool.reports.html.markup.text`. The panels in detail: docs/internals/reports.md#plot.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from precision_tool.reports.html.markup import element, number, text, void
from precision_tool.metrics.tensor_verdict import threshold_text

PASS_COLOR, FAIL_COLOR, LINE_COLOR = "#2563eb", "#dc2626", "#94a3b8"
DIVERGENCE_COLOR, OVERFLOW_COLOR, GRID_COLOR = "#b91c1c", "#ea580c", "#e2e8f0"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"

WIDTH = 1100
LEFT, RIGHT = 84, 28
MARKER_BAND = 64
COSINE_HEIGHT, ERROR_HEIGHT = 230, 170
STRIP = 16  # the "undefined" strip under each panel
GAP = 34
AXIS_BAND, LEGEND_BAND = 44, 30
REL_ERROR_FLOOR = 1e-8


@dataclass(frozen=True)
class PlotPoint:
    """One compared tensor. ``row`` is its position in the page's table (anchor ``#row-{row}``)."""

    row: int
    index: Optional[int]
    tensor_id: str
    op_name: str
    cosine: Optional[float]
    max_rel_error: Optional[float]
    failed: bool
    local_error: Optional[float] = None
    local_floor: Optional[float] = None
    total_error: Optional[float] = None


@dataclass(frozen=True)
class Frame:
    """Where a panel is: its plotting box and the strip under it."""

    top: float
    height: float

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def strip_middle(self) -> float:
        return self.bottom + STRIP / 2 + 2


def _plot_width(width: int) -> float:
    return width - LEFT - RIGHT


def x_of(position: int, count: int, width: int = WIDTH) -> float:
    """The x of the ``position``-th point (0-based) of ``count``: centred in equal slots."""
    return LEFT + (position + 0.5) * _plot_width(width) / max(count, 1)


def nice_step(span: float, most: int = 6) -> float:
    """The smallest step of 1, 2 or 5 times a power of ten giving at most ``most`` intervals over ``span``.

    >>> nice_step(0.11), nice_step(2.0)
    (0.02, 0.5)
    """
    raw = span / most
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def cosine_domain(values: Sequence[Optional[float]], threshold: Optional[float]) -> Tuple[float, float]:
    """``(low, 1)``: low is the lowest finite cosine or the threshold, less 5% of the span (a span of at least
    0.001), rounded down to a tick step (:func:`nice_step`), never below -1.

    >>> cosine_domain([0.999, 0.9], 0.99)
    (0.88, 1.0)
    >>> cosine_domain([1.0, 1.0], 0.99)
    (0.988, 1.0)
    """
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if threshold is not None:
        finite.append(threshold)
    low = min(finite + [1.0])
    span = max(1.0 - low, 1e-3) * 1.05
    step = nice_step(span)
    return max(-1.0, round(math.floor(round((1.0 - span) / step, 9)) * step, 12)), 1.0


def cosine_ticks(low: float, high: float) -> List[float]:
    """Tick values on round steps from ``low`` to ``high`` (both included when they are on a step)."""
    step = nice_step(high - low)
    first = math.ceil(round(low / step, 9))
    last = math.floor(round(high / step, 9))
    return [round(k * step, 12) for k in range(first, last + 1)]


def log_domain(values: Sequence[Optional[float]]) -> Tuple[int, int]:
    """Decades ``(low, high)`` covering the positive finite values, at least two decades apart.

    >>> log_domain([0.0, 2e-4, 0.03])
    (-4, -1)
    >>> log_domain([])
    (-8, -6)
    """
    positive = [v for v in values if v is not None and 0 < v < math.inf]
    if not positive:
        return -8, -6
    low = max(math.floor(math.log10(min(positive))), round(math.log10(REL_ERROR_FLOOR)))
    high = math.ceil(math.log10(max(positive)))
    if high - low < 2:
        high = low + 2
    return low, high


def _tick_text(value: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 2
    if round(step * 10 ** digits, 6) % 1:
        digits += 1
    return f"{value:.{min(digits, 8)}f}"


def _x_ticks(count: int) -> List[int]:
    """1-based tensor numbers to label: about ten, on round steps."""
    if count <= 0:
        return []
    raw = max(1, count / 10)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    ticks = [1] + list(range(int(step), count + 1, int(step)))
    return sorted(set(ticks))


def _label(x: float, y: float, content: str, anchor: str = "start", size: int = 12, **attrs) -> str:
    return element("text", text(content), {"x": number(x), "y": number(y), "text-anchor": anchor,
                                           "font-size": size, **attrs})


def _point_title(point: PlotPoint) -> str:
    cosine = "undefined (NaN)" if point.cosine is None else f"{point.cosine:.6f}"
    relative = "undefined (NaN)" if _undefined(point.total_error) else f"{point.total_error:.6g}"
    worst = "undefined (NaN)" if point.max_rel_error is None else f"{point.max_rel_error:.6g}"
    where = f"Index {point.index}" if point.index is not None else "no Index"
    verdict = "FAILS" if point.failed else "passes"
    return (f"{point.tensor_id} ({where}) {verdict}\ncosine {cosine}, relative error {relative}, max relative "
            f"error {worst}")


def _undefined(value: Optional[float]) -> bool:
    return value is None or math.isnan(value)


def dot_radius(count: int, width: int = WIDTH) -> float:
    """Radius of a passing point: 2.6 px, smaller when points crowd (45% of a slot, at least 1.2 px)."""
    return round(max(1.2, min(2.6, _plot_width(width) / max(count, 1) * 0.45)), 1)


def _point(point: PlotPoint, x: float, y: float, undefined: bool, link: bool, radius: float = 2.6) -> str:
    color = FAIL_COLOR if point.failed else PASS_COLOR
    if undefined:
        d = 3.5
        shape = element("path", "", d=f"M{number(x - d, 1)} {number(y - d, 1)}l{d * 2} {d * 2}"
                                       f"m0 {-d * 2}l{-d * 2} {d * 2}", stroke=color, stroke_width=1.6)
    else:
        shape = void("circle", cx=number(x, 1), cy=number(y, 1), r=radius + 1 if point.failed else radius, fill=color)
    content = element("title", text(_point_title(point))) + shape
    attrs = {"class": f"point {'fail' if point.failed else 'pass'}"}
    if link:
        return element("a", content, {"href": f"#row-{point.row}", **attrs})
    return element("g", content, {**attrs, "data-row": point.row})


def _panel_frame(frame: Frame, width: int, title: str, y_label: str) -> List[str]:
    right = width - RIGHT
    parts = [void("rect", x=LEFT, y=number(frame.top), width=number(_plot_width(width)),
                  height=number(frame.height), fill="#ffffff", stroke="#cbd5e1"),
             _label(LEFT, frame.top - 7, title, size=13, font_weight="600", fill="#0f172a"),
             _label(LEFT - 8, frame.strip_middle + 4, "undefined", anchor="end", size=10, fill="#64748b"),
             void("line", x1=LEFT, x2=number(right), y1=number(frame.strip_middle), y2=number(frame.strip_middle),
                  stroke=GRID_COLOR, stroke_dasharray="2 3")]
    middle = frame.top + frame.height / 2
    parts.append(element("text", text(y_label), {"transform": f"translate(18 {number(middle)}) rotate(-90)",
                                                 "text-anchor": "middle", "font-size": 11, "fill": "#475569"}))
    return parts


def _y_grid(frame: Frame, width: int, ys: Sequence[Tuple[float, str]]) -> List[str]:
    parts = []
    for y, label in ys:
        parts.append(void("line", x1=LEFT, x2=number(width - RIGHT), y1=number(y), y2=number(y), stroke=GRID_COLOR))
        parts.append(_label(LEFT - 8, y + 4, label, anchor="end", size=11, fill="#475569"))
    return parts


def _polyline(coordinates: Sequence[Tuple[float, float]]) -> str:
    if len(coordinates) < 2:
        return ""
    return void("polyline", points=" ".join(f"{number(x, 1)},{number(y, 1)}" for x, y in coordinates), fill="none",
                stroke=LINE_COLOR, stroke_width=1)


def _cosine_panel(points, frame: Frame, width: int, threshold, link: bool) -> str:
    low, high = cosine_domain([p.cosine for p in points], threshold)

    def y_of(value: float) -> float:
        return frame.bottom - (min(max(value, low), high) - low) / (high - low) * frame.height

    parts = _panel_frame(frame, width, "Cosine similarity", "cosine")
    step = nice_step(high - low)
    parts += _y_grid(frame, width, [(y_of(v), _tick_text(v, step)) for v in cosine_ticks(low, high)])
    if threshold is not None:
        y, shown = y_of(threshold), threshold_text(threshold)
        parts.append(element("g", element("title", text(f"threshold: a tensor fails below cosine {shown}"))
                             + void("line", x1=LEFT, x2=number(width - RIGHT), y1=number(y), y2=number(y),
                                    stroke=FAIL_COLOR, stroke_width=1.2, stroke_dasharray="6 4")
                             + _label(width - RIGHT - 6, y - 5, f"threshold {shown}", anchor="end", size=11,
                                      fill=FAIL_COLOR), id="threshold-line"))
    line, dots = [], []
    for k, point in enumerate(points):
        x = x_of(k, len(points), width)
        undefined = point.cosine is None or not math.isfinite(point.cosine)
        y = frame.strip_middle if undefined else y_of(point.cosine)
        if not undefined:
            line.append((x, y))
        dots.append(_point(point, x, y, undefined, link, dot_radius(len(points), width)))
    parts.append(_polyline(line))
    parts.append(element("g", "".join(dots), id="points-cosine"))
    return "".join(parts)


def _error_panel(points, frame: Frame, width: int, link: bool) -> str:
    low, high = log_domain([p.total_error for p in points])

    def y_of(value: float) -> float:
        if value <= 0:
            return frame.bottom
        exponent = min(max(math.log10(value), low), high)
        return frame.bottom - (exponent - low) / (high - low) * frame.height

    step = max(1, math.ceil((high - low) / 6))
    ticks = [(y_of(10.0 ** e), f"1e{e}") for e in range(low, high + 1, step)]
    ticks[0] = (ticks[0][0], f"<=1e{low}")
    parts = _panel_frame(frame, width, "Relative error ||npu - ref|| / ||ref|| (log scale)", "rel. error")
    parts += _y_grid(frame, width, ticks)
    line, dots = [], []
    for k, point in enumerate(points):
        x = x_of(k, len(points), width)
        value = point.total_error
        undefined = _undefined(value)
        y = frame.strip_middle if undefined or value is None else y_of(value)
        if not undefined:
            line.append((x, y))
        dots.append(_point(point, x, y, undefined, link, dot_radius(len(points), width)))
    parts.append(_polyline(line))
    parts.append(element("g", "".join(dots), id="points-relative-error"))
    return "".join(parts)


def _local_panel(points, frame: Frame, width: int, link: bool) -> str:
    """Local error (dots) over total error (line) of the replayed outputs, log scale (see the module docstring)."""
    measured = [(k, p) for k, p in enumerate(points) if p.local_error is not None]
    values = [v for _, p in measured for v in (p.local_error, p.total_error) if v is not None and v > 0]
    low, high = log_domain(values)

    def y_of(value: float) -> float:
        if value <= 0:
            return frame.bottom
        exponent = min(max(math.log10(value), low), high) if math.isfinite(value) else high
        return frame.bottom - (exponent - low) / (high - low) * frame.height

    step = max(1, math.ceil((high - low) / 6))
    ticks = [(y_of(10.0 ** e), f"1e{e}") for e in range(low, high + 1, step)]
    ticks[0] = (ticks[0][0], f"<=1e{low}")
    parts = _panel_frame(frame, width, "Local error: dots, replayed on the op's own inputs (red above its floor); "
                         "total error vs the reference: line", "RED")
    parts += _y_grid(frame, width, ticks)
    total_line, dots = [], []
    radius = dot_radius(len(points), width)
    for k, point in measured:
        x = x_of(k, len(points), width)
        if point.total_error is not None and not math.isnan(point.total_error):
            total_line.append((x, y_of(point.total_error)))
        above = point.local_floor is not None and point.local_error > point.local_floor
        shown = PlotPoint(point.row, point.index, point.tensor_id, point.op_name, point.cosine,
                          point.max_rel_error, above)
        title = (f"{point.tensor_id}: local {point.local_error:.3g}, floor "
                 f"{point.local_floor if point.local_floor is not None else float('nan'):.3g}, total "
                 f"{point.total_error if point.total_error is not None else float('nan'):.3g}")
        dot = _point(shown, x, y_of(point.local_error), False, link, radius)
        dots.append(dot.replace(f"<title>{text(_point_title(shown))}</title>", f"<title>{text(title)}</title>", 1))
    parts.append(_polyline(total_line))
    parts.append(element("g", "".join(dots), id="points-local-error"))
    return "".join(parts)


def _first_point_of(points, op_name: str, failing_only: bool) -> Optional[int]:
    return next((k for k, p in enumerate(points) if p.op_name == op_name and (p.failed or not failing_only)), None)


def _divergence_marker(points, op_name: Optional[str], width: int, top: float, bottom: float) -> str:
    if not op_name:
        return ""
    k = _first_point_of(points, op_name, True)
    if k is None:
        k = _first_point_of(points, op_name, False)
    if k is None:
        return ""
    x = x_of(k, len(points), width)
    anchor = "start" if x < width / 2 else "end"
    label_x = x + 6 if anchor == "start" else x - 6
    return element("g", element("title", text(f"first divergence: {op_name} -- the first op whose output fails "
                                               "while its compared inputs still match"))
                   + void("line", x1=number(x), x2=number(x), y1=number(top), y2=number(bottom),
                          stroke=DIVERGENCE_COLOR, stroke_width=1.5, stroke_dasharray="5 3")
                   + _label(label_x, top + 12, f"first divergence: {op_name}", anchor=anchor, size=12,
                            font_weight="600", fill=DIVERGENCE_COLOR, class_="divergence-label"),
                   id="first-divergence", data_op=op_name)


def _overflow_markers(points, marks, width: int, y: float, bottom: float) -> Tuple[str, int]:
    parts, missing = [], 0
    for mark in marks:
        k = _first_point_of(points, mark.op_name, False)
        if k is None:
            missing += 1
            continue
        x = x_of(k, len(points), width)
        triangle = f"M{number(x - 6)} {number(y - 8)}L{number(x + 6)} {number(y - 8)}L{number(x)} {number(y + 2)}Z"
        parts.append(element("g", element("title", text(f"overflow: {mark.op_name} -- {mark.label}"))
                             + void("line", x1=number(x), x2=number(x), y1=number(y + 2), y2=number(bottom),
                                    stroke=OVERFLOW_COLOR, stroke_width=1, stroke_dasharray="1 3")
                             + element("path", "", d=triangle, fill=OVERFLOW_COLOR),
                             class_="overflow-marker", data_op=mark.op_name))
    return element("g", "".join(parts), id="overflow-markers"), missing


def _x_axis(count: int, width: int, y: float) -> str:
    parts = []
    for tick in _x_ticks(count):
        x = x_of(tick - 1, count, width)
        parts.append(void("line", x1=number(x), x2=number(x), y1=number(y), y2=number(y + 5), stroke="#64748b"))
        parts.append(_label(x, y + 18, str(tick), anchor="middle", size=11, fill="#475569"))
    parts.append(_label(LEFT + _plot_width(width) / 2, y + 36, "compared tensor, in execution order", anchor="middle",
                        size=12, fill="#334155"))
    return "".join(parts)


def _legend(y: float, overflow_missing: int, interactive: bool = True) -> str:
    """The key under the panels; ``interactive`` (on the page) adds how to see a point's tensor -- not in the .svg
    file, which becomes the PNG, where nothing can be hovered."""
    items = [
        void("circle", cx=LEFT + 6, cy=number(y), r=3, fill=PASS_COLOR), _label(LEFT + 14, y + 4, "passes"),
        void("circle", cx=LEFT + 76, cy=number(y), r=3.6, fill=FAIL_COLOR), _label(LEFT + 84, y + 4, "fails"),
        void("line", x1=LEFT + 134, x2=LEFT + 160, y1=number(y), y2=number(y), stroke=FAIL_COLOR,
             stroke_dasharray="6 4"), _label(LEFT + 166, y + 4, "threshold"),
        void("line", x1=LEFT + 242, x2=LEFT + 242, y1=number(y - 7), y2=number(y + 7), stroke=DIVERGENCE_COLOR,
             stroke_dasharray="3 2", stroke_width=1.5), _label(LEFT + 250, y + 4, "first divergence"),
        element("path", "", d=f"M{LEFT + 362} {number(y - 6)}L{LEFT + 374} {number(y - 6)}L{LEFT + 368} "
                                 f"{number(y + 4)}Z", fill=OVERFLOW_COLOR),
        _label(LEFT + 380, y + 4, "overflow" + (f" ({overflow_missing} overflow op(s) not in the comparison)"
                                                 if overflow_missing else "")),
        _label(WIDTH - RIGHT, y + 4, "x = undefined (NaN)" + ("; hover a point for its tensor" if interactive else ""),
               anchor="end",
               fill="#64748b"),
    ]
    return element("g", "".join(items), id="legend", font_size=12, fill="#334155")


def accuracy_plot_svg(points: Sequence[PlotPoint], threshold: Optional[float], first_divergence: Optional[str] = None,
                      overflow_marks=(), *, standalone: bool = False, width: int = WIDTH) -> str:
    """The two-panel plot as one ``<svg>`` element.

    Parameters
    ----------
    points : the compared tensors in execution order.
    threshold : the cosine gate (``None``: no line).
    first_divergence : the op name to mark (``None``: no marker).
    overflow_marks : :class:`~precision_tool.reports.html.findings.OverflowMark` records.
    standalone : for a ``.svg`` file: adds the XML namespace and leaves out the links to table rows.
    width : in pixels; the height follows from the layout constants.
    """
    cosine = Frame(MARKER_BAND, COSINE_HEIGHT)
    error = Frame(cosine.bottom + STRIP + GAP, ERROR_HEIGHT)
    local = Frame(error.bottom + STRIP + GAP, ERROR_HEIGHT) if any(p.local_error is not None for p in points) else None
    last = local if local is not None else error
    axis_y = last.bottom + STRIP + 6
    height = axis_y + AXIS_BAND + LEGEND_BAND
    link = not standalone
    body = [void("rect", x=0, y=0, width=width, height=number(height), fill="#ffffff"),
            _cosine_panel(points, cosine, width, threshold, link),
            _error_panel(points, error, width, link),
            _local_panel(points, local, width, link) if local is not None else "",
            _x_axis(len(points), width, axis_y)]
    markers, missing = _overflow_markers(points, overflow_marks, width, MARKER_BAND - 30, last.bottom + STRIP)
    body.append(markers)
    body.append(_divergence_marker(points, first_divergence, width, 8, last.bottom + STRIP))
    body.append(_legend(height - LEGEND_BAND / 2, missing, interactive=link))
    if not points:
        body.append(_label(width / 2, cosine.top + cosine.height / 2, "no compared tensor", anchor="middle", size=14,
                           fill="#64748b"))
    attrs = {"xmlns": SVG_NAMESPACE if standalone else None, "viewBox": f"0 0 {width} {number(height)}",
             "width": width, "height": number(height), "font-family": FONT, "role": "img", "id": "accuracy-plot",
             "data-points": len(points)}
    summary = (f"Cosine similarity and max relative error of {len(points)} compared tensors in execution order"
               + (f"; first divergence at {first_divergence}" if first_divergence else ""))
    return element("svg", element("title", text(summary)) + "".join(body), attrs)
