"""Headless Chromium, for PNG images of our SVG plots and for the report's browser test.

Only a local ``file://`` page of ours is ever opened. Chromium runs with its network-facing services off
(no background networking, component updates, sync or QUIC), a fresh empty profile that is deleted
afterwards, and ``--no-sandbox`` only when running as root (Chromium refuses to start as root otherwise).

The binary is ``$PRECISION_TOOL_CHROMIUM``, else the first of ``chromium``, ``chromium-browser``,
``google-chrome`` found on ``PATH``. Debian: ``apt-get install chromium``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from precision_tool.errors import PrecisionToolError

ENV_CHROMIUM = "PRECISION_TOOL_CHROMIUM"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
QUIET_FLAGS = ("--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio")
TIMEOUT_S = 120


class BrowserError(PrecisionToolError):
    """Chromium is missing, or did not produce what it was asked for."""


@dataclass(frozen=True)
class BrowserRun:
    """What one Chromium run printed: ``stdout`` (the DOM with ``--dump-dom``) and ``stderr`` (its log)."""

    stdout: str
    stderr: str
    returncode: int


def find_chromium() -> Optional[str]:
    """The Chromium binary to use, or ``None`` (see the module docstring)."""
    configured = os.environ.get(ENV_CHROMIUM)
    if configured:
        return shutil.which(configured) or (configured if os.access(configured, os.X_OK) else None)
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


def file_url(path, query: str = "") -> str:
    """``file:///abs/path`` (percent-encoded), with ``?query`` when given."""
    url = Path(os.path.abspath(path)).as_uri()
    return f"{url}?{query}" if query else url


def run_chromium(url: str, extra: Sequence[str], chromium: Optional[str] = None,
                 timeout: float = TIMEOUT_S) -> BrowserRun:
    """Run headless Chromium once on ``url`` with ``extra`` flags; :class:`BrowserError` if it cannot start."""
    binary = chromium or find_chromium()
    if binary is None:
        raise BrowserError("no Chromium found", f"install it (Debian: apt-get install chromium) or set "
                                                f"${ENV_CHROMIUM}")
    profile = tempfile.mkdtemp(prefix="precision_tool-chromium-")
    command: List[str] = [binary, *QUIET_FLAGS, f"--user-data-dir={profile}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--no-sandbox")
    command += [*extra, url]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BrowserError(f"{binary}: could not render {url} ({error})") from None
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return BrowserRun(done.stdout, done.stderr, done.returncode)


def screenshot(url: str, png_path, width: int, height: int, chromium: Optional[str] = None,
               budget_ms: int = 2000) -> str:
    """Render ``url`` at ``width`` x ``height`` into ``png_path``; returns the path."""
    png_path = os.path.abspath(png_path)
    if os.path.exists(png_path):
        os.unlink(png_path)
    run = run_chromium(url, [f"--screenshot={png_path}", f"--window-size={width},{height}",
                             f"--virtual-time-budget={budget_ms}"], chromium)
    if not os.path.isfile(png_path):
        tail = " ".join(run.stderr.strip().splitlines()[-2:])
        raise BrowserError(f"{png_path}: Chromium wrote no screenshot (exit {run.returncode}; {tail})")
    return png_path


def dump_dom(url: str, chromium: Optional[str] = None, budget_ms: Optional[int] = 2000) -> BrowserRun:
    """The page's DOM after its scripts ran (``--dump-dom``), with the console log in ``stderr``. ``budget_ms``
    runs the page on virtual time that long (timers fire at once); ``None`` keeps real time, for a page whose
    scripts run while it loads and that measures itself with ``performance.now()``."""
    budget = [f"--virtual-time-budget={budget_ms}"] if budget_ms is not None else []
    return run_chromium(url, ["--dump-dom", *budget, "--enable-logging=stderr", "--v=0"], chromium)
