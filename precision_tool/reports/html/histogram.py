"""A small SVG bar chart of one tensor's element errors (:class:`~precision_tool.metrics.errors_detail.ErrorHistogram`).

One bar per bin (relative-error decades by default), bar heights linear in the count, the count above each
bar, the bin's lower edge under it. Bins of 1e-2 and above are red: errors that size are what a failing
cosine is made of. Each bar's ``<title>`` gives the exact bin and count.
"""
from __future__ import annotations

from precision_tool.reports.html.markup import element, number, text, void
from precision_tool.reports.html.plot import FAIL_COLOR, FONT, PASS_COLOR

WIDTH, HEIGHT = 380, 190
LEFT, RIGHT, TOP, BOTTOM = 12, 12, 26, 40
LARGE_ERROR = 1e-2


def _bin_text(low: float, high: float) -> str:
    right = "]" if high == float("inf") else ")"
    return f"[{low:g}, {high:g}{right}"


def shorten(name: str, limit: int = 56) -> str:
    """``name`` cut in the middle with ``...`` when longer than ``limit`` characters (start and end kept).

    >>> shorten("a" * 10 + "b" * 10, 9)
    'aaa...bbb'
    """
    if len(name) <= limit:
        return name
    keep = limit - 3
    return name[: keep - keep // 2] + "..." + name[len(name) - keep // 2:]


def histogram_svg(histogram, labels, *, title: str = "", standalone: bool = False) -> str:
    """The chart of ``histogram`` with one label per bin (``labels``), as one ``<svg>`` element.

    ``standalone`` adds the XML namespace (for a ``.svg`` file).
    """
    from precision_tool.reports.html.plot import SVG_NAMESPACE

    counts = histogram.counts
    bins = len(counts)
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_width / max(bins, 1)
    largest = max(counts) if counts and max(counts) > 0 else 1
    kind = "relative" if histogram.kind == "rel" else "absolute"
    parts = [void("rect", x=0, y=0, width=WIDTH, height=HEIGHT, fill="#ffffff"),
             element("text", text(shorten(title) if title else f"{kind} error per element"), x=LEFT, y=15, font_size=12,
                     font_weight="600", fill="#0f172a")]
    base = TOP + plot_height
    parts.append(void("line", x1=LEFT, x2=WIDTH - RIGHT, y1=number(base), y2=number(base), stroke="#94a3b8"))
    for k, count in enumerate(counts):
        low, high = histogram.edges[k], histogram.edges[k + 1]
        bar_height = count / largest * (plot_height - 14)
        x = LEFT + k * slot + slot * 0.15
        color = FAIL_COLOR if low >= LARGE_ERROR else PASS_COLOR
        tip = f"{count} element(s) with {kind} error in {_bin_text(low, high)}"
        parts.append(element("g", element("title", text(tip))
                             + void("rect", x=number(x), y=number(base - bar_height), width=number(slot * 0.7),
                                    height=number(max(bar_height, 0.0)), fill=color, opacity=0.85)
                             + element("text", text(count), x=number(x + slot * 0.35), y=number(base - bar_height - 3),
                                       text_anchor="middle", font_size=10, fill="#334155"),
                             class_="bin", data_count=count))
        parts.append(element("text", text(labels[k]), x=number(LEFT + (k + 0.5) * slot), y=number(base + 14),
                             text_anchor="middle", font_size=10, fill="#475569"))
    footer = f"{kind} error |NPU - ref| / |ref| per element (over a zero reference: 0 when equal, else inf)"
    parts.append(element("text", text(footer), x=number(WIDTH / 2), y=HEIGHT - 8, text_anchor="middle", font_size=10,
                         fill="#64748b"))
    attrs = {"xmlns": SVG_NAMESPACE if standalone else None, "viewBox": f"0 0 {WIDTH} {HEIGHT}", "width": WIDTH,
             "height": HEIGHT, "font-family": FONT, "role": "img", "class": "histogram"}
    return element("svg", "".join(parts), attrs)
