"""Readers with no CLI command of their own, run as a command would run them: ``python entry_points.py NAME PATH``.

A :class:`~precision_tool.errors.PrecisionToolError` is printed as the CLI prints it (one line on stderr) and
exits with its code; anything else escapes with its traceback, as an unexpected error in the CLI does. So the
campaign classifies these runs exactly like ``python -m precision_tool`` runs.

* ``fusion_switch PATH``: the check a capture makes of the fusion switch file before handing it to the NPU
  (``npu_tf_config`` with action ``fusion_switch``): ``ensure_fusion_switch_file`` on the workspace's file,
  ``check_users_fusion_switch_file`` on a user's own.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from precision_tool.errors import PrecisionToolError  # noqa: E402


def fusion_switch(path: str) -> str:
    from precision_tool.capture.fusion_files import check_users_fusion_switch_file, ensure_fusion_switch_file

    ensure_fusion_switch_file(path)
    check_users_fusion_switch_file(path)
    return f"{path}: a valid fusion switch file"


ENTRY_POINTS = {"fusion_switch": fusion_switch}


def _terminal_safe(text: str) -> str:
    """The CLI's sanitiser for names on a terminal, when this checkout has one (``repr`` escapes otherwise)."""
    try:
        from precision_tool.reports.format import terminal_safe
    except ImportError:
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return terminal_safe(text)


def main(argv) -> int:
    name, *args = argv
    try:
        print(ENTRY_POINTS[name](*args))
    except PrecisionToolError as error:
        print(f"precision_tool: error: {_terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
