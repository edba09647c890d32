"""A one-line progress bar on a terminal, for long comparisons (no dependency, nothing when not a TTY)."""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

_WIDTH = 30


class ProgressBar:
    """``compare [##########----------] 300/600 tensors, 1.2 s`` redrawn in place at most ``rate`` times a second.

    Call it as ``bar(done, total)`` (the engine's progress callback); :meth:`close` ends the line. It
    writes to ``stream`` only; nothing is written after :meth:`close`.
    """

    def __init__(self, label: str = "compare", stream: Optional[TextIO] = None, rate: float = 10.0):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.interval = 1.0 / rate
        self.started = time.monotonic()
        self._last_draw = float("-inf")
        self._drawn = False
        self._closed = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._closed or (done < total and now - self._last_draw < self.interval):
            return
        self._last_draw = now
        filled = _WIDTH * done // total if total else _WIDTH
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} tensors, {now - self.started:.1f} s")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn and not self._closed:
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True


def terminal_progress(label: str = "compare", stream: Optional[TextIO] = None) -> Optional[ProgressBar]:
    """A :class:`ProgressBar` on ``stream`` (default stderr) when it is a terminal, else ``None``."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return ProgressBar(label, stream) if isatty is not None and isatty() else None
