"""A status line on a terminal while an emulation runs: ``emulate: float32 reference (2.1 s)``, redrawn in
place at each step and cleared at the end (no dependency; nothing at all when the stream is not a TTY).

Other lines written to ``sys.stderr`` meanwhile (``[precision_tool] ...`` notes, warnings) go through
:meth:`StatusLine.redirect`: the status line is erased, the line written, and the status drawn again below.
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Callable, Iterator, Optional, TextIO

Progress = Callable[[str], None]  # called with the step about to start


def no_progress(step: str) -> None:
    """The default: report nothing."""


class StatusLine:
    """``emulate: STEP (ELAPSED s)`` on ``stream``, each step over the previous one; :meth:`close` clears it."""

    def __init__(self, stream: TextIO, label: str = "emulate"):
        self.stream, self.label = stream, label
        self.started = time.monotonic()
        self._width = 0

        self._text = ""

    def __call__(self, step: str) -> None:
        self._text = f"{self.label}: {step} ({time.monotonic() - self.started:.1f} s)"
        self._draw()

    def _draw(self) -> None:
        if self._text:
            self.stream.write("\r" + self._text.ljust(self._width))
            self.stream.flush()
            self._width = max(self._width, len(self._text))

    def clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def close(self) -> None:
        self.clear()
        self._text = ""

    @contextlib.contextmanager
    def redirect(self) -> Iterator[None]:
        """Route ``sys.stderr`` writes around the status line while the block runs."""
        saved = sys.stderr
        sys.stderr = _AroundStatus(self, saved)
        try:
            yield
        finally:
            sys.stderr = saved


class _AroundStatus:
    """A stream that erases the status line before a write and draws it again after a complete line."""

    def __init__(self, status: StatusLine, stream: TextIO):
        self._status, self._stream = status, stream

    def write(self, text: str) -> int:
        self._status.clear()
        written = self._stream.write(text)
        if text.endswith("\n"):
            self._status._draw()
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def terminal_status(stream: Optional[TextIO] = None, label: str = "emulate") -> Optional[StatusLine]:
    """A :class:`StatusLine` on ``stream`` (default stderr) when it is a terminal, else ``None``."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return StatusLine(stream, label) if isatty is not None and isatty() else None
