"""``--plots DIR``: the page's plots as image files, for people who paste pictures into a bug or a chat.

Always SVG (ours, no dependency): ``accuracy_plot.svg`` and, per detailed failing tensor,
``error_histogram_{k}_{name}.svg``. PNG beside each when Chromium is found (:mod:`.browser` renders the SVG
file at its own size); without Chromium the result says so and the SVGs are still there.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from precision_tool.fileio import atomic_write
from precision_tool.reports.html.details import histogram_labels
from precision_tool.reports.html.histogram import HEIGHT as HISTOGRAM_HEIGHT
from precision_tool.reports.html.histogram import WIDTH as HISTOGRAM_WIDTH
from precision_tool.reports.html.histogram import histogram_svg
from precision_tool.reports.html.plot import WIDTH as PLOT_WIDTH
from precision_tool.reports.html.plot import accuracy_plot_svg

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ExportedPlots:
    """Files written, and why no PNG was (``""`` when every PNG was made)."""

    files: Tuple[str, ...]
    png_note: str = ""


def safe_file_part(name: str, limit: int = 60) -> str:
    """An op name made safe for a file name: anything but ``A-Z a-z 0-9 . _ -`` becomes ``_``.

    >>> safe_file_part("-neg/<script>:output:0")
    '-neg_script_output_0'
    """
    return _UNSAFE.sub("_", name).strip("_")[:limit] or "tensor"


def _svg_height(svg: str) -> int:
    match = re.search(r'viewBox="0 0 [0-9.]+ ([0-9.]+)"', svg)
    return int(float(match.group(1))) + 1 if match else 600


def _write(path: str, content: str) -> str:
    with atomic_write(path, "w") as handle:
        handle.write('<?xml version="1.0" encoding="UTF-8"?>\n' + content + "\n")
    return path


def write_plots(data, folder: str, png: bool = True, chromium: Optional[str] = None) -> ExportedPlots:
    """Write the plots of ``data`` (:class:`~precision_tool.reports.html.data.ReportData`) into ``folder``."""
    from precision_tool.reports.html.browser import BrowserError, file_url, find_chromium, screenshot

    os.makedirs(folder, exist_ok=True)
    marks = data.findings.overflow_marks if data.findings is not None else ()
    plot = accuracy_plot_svg(data.points, data.threshold, data.first_divergence, marks, standalone=True)
    images: List[Tuple[str, int, int]] = [(_write(os.path.join(folder, "accuracy_plot.svg"), plot), PLOT_WIDTH,
                                           _svg_height(plot))]
    for k, detail in enumerate(data.details.tensors):
        if detail.histogram is None:
            continue
        svg = histogram_svg(detail.histogram, histogram_labels(detail.histogram.edges),
                            title=detail.tensor_id, standalone=True)
        path = os.path.join(folder, f"error_histogram_{k}_{safe_file_part(detail.tensor_id)}.svg")
        images.append((_write(path, svg), HISTOGRAM_WIDTH, HISTOGRAM_HEIGHT))
    files = [path for path, _w, _h in images]
    if not png:
        return ExportedPlots(tuple(files), "PNG not asked for")
    binary = chromium or find_chromium()
    if binary is None:
        return ExportedPlots(tuple(files), "PNG needs Chromium (apt-get install chromium); SVG written")
    try:
        for path, width, height in images:
            files.append(screenshot(file_url(path), path[:-4] + ".png", width, height, binary))
    except BrowserError as error:
        return ExportedPlots(tuple(files), f"PNG not made: {error}")
    return ExportedPlots(tuple(files))
