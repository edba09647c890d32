"""Text of one array for the inspection commands: the values printed to fit the terminal, and its size.

Statistics (min/max/mean over the finite values, inf/NaN counts) are
:func:`precision_tool.metrics.array_stats.array_stats`, shown with ``.cells()`` under
:data:`~precision_tool.metrics.array_stats.STATS_HEADERS`.

>>> array_stats(np.array([1.0, np.nan, 3.0, np.inf], dtype=np.float32)).cells()
['1', '3', '2', '1', '1']
"""
from __future__ import annotations

import shutil
from typing import Optional, Tuple

import numpy as np

from precision_tool.commands.command_registry import Context
from precision_tool.metrics.array_stats import array_stats  # noqa: F401  (the doctest above)

_CELL_WIDTH = 11  # rough width numpy gives one printed float, separator included


def terminal_size(ctx: Optional[Context] = None) -> Tuple[int, int]:
    """``(columns, lines)``: what the shell put in ``ctx.session.terminal_size``, else the terminal's."""
    if ctx is not None and ctx.session.terminal_size:
        return ctx.session.terminal_size
    size = shutil.get_terminal_size((100, 40))
    return size.columns, size.lines


def array_text(array, columns: int = 100, lines: int = 40) -> str:
    """``np.array2string`` of ``array`` sized to a ``columns`` x ``lines`` screen: printed whole when it
    fits in about one screen, else summarised with ``...`` (numpy's threshold and edge items)."""
    values = np.asarray(array)
    per_line = max(1, (columns - 2) // _CELL_WIDTH)
    threshold = max(16, per_line * max(4, lines - 8))
    edgeitems = max(2, min(5, (per_line - 1) // 2))
    return np.array2string(values, max_line_width=max(40, columns - 1), threshold=threshold, edgeitems=edgeitems,
                           separator=" ", precision=6, suppress_small=False)
