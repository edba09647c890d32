"""Capture settings read from the environment at call time, and the one-line messages helpers print.

Everything here is plain Python (no TensorFlow), so the action table can be tested alone.

=============================== ========================================= ==================
variable                        meaning                                   default
=============================== ========================================= ==================
``PRECISION_TOOL_DATA``         the workspace (``precision_data``)        ``./precision_data``
``PRECISION_TOOL_ACTION``       action when a helper gets ``action=None`` none
``PRECISION_TOOL_DUMP``         ``True``: same as action ``dump`` (the    unset
                                original tool's flag)
``PRECISION_TOOL_OVERFLOW``     ``True``: same as action ``overflow``     unset
``PRECISION_TOOL_DUMP_STEP``    NPU ``dump_step``: ``0|5|10``, ``0|3-5``  ``0``
``PRECISION_TOOL_OP_DEBUG_LEVEL`` ``op_debug_level`` for ``overflow``     ``4``
``PRECISION_TOOL_NPU_RUN``      N of ``npu/debug_N`` for NPU dumps        0, or 1 with a
                                                                          fusion action
=============================== ========================================= ==================

``op_debug_level`` 4 keeps the compiled kernels' ``.o``/``.json``, the instruction mapping and the UB
fusion description in ``debug_dir`` without changing how kernels are compiled (1 and 2 add debug code;
use 0 on CANN versions that reject 4).
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Mapping, Optional

from precision_tool.config import DEFAULT_DATA_DIR, ENV_DATA_DIR, Workspace
from precision_tool.errors import CaptureError

ENV_ACTION = "PRECISION_TOOL_ACTION"
ENV_LEGACY_DUMP = "PRECISION_TOOL_DUMP"
ENV_LEGACY_OVERFLOW = "PRECISION_TOOL_OVERFLOW"
ENV_DUMP_STEP = "PRECISION_TOOL_DUMP_STEP"
ENV_OP_DEBUG_LEVEL = "PRECISION_TOOL_OP_DEBUG_LEVEL"
ENV_NPU_RUN = "PRECISION_TOOL_NPU_RUN"

DEFAULT_DUMP_STEP = "0"
DEFAULT_OP_DEBUG_LEVEL = 4
_DUMP_STEP = re.compile(r"\d+(-\d+)?(\|\d+(-\d+)?)*")
MESSAGE_PREFIX = "[precision_tool]"


class CaptureWarning(UserWarning):
    """A capture that will run but whose reference or dump will not match names 1:1."""


def notify(message: str) -> None:
    """Print one informational line to stderr (a training script's log is where users look)."""
    print(f"{MESSAGE_PREFIX} {message}", file=sys.stderr, flush=True)


def warn_loudly(message: str, stacklevel: int = 3) -> None:
    """A :class:`CaptureWarning` (shown once per call site) and the same line on stderr, always."""
    print(f"{MESSAGE_PREFIX} WARNING: {message}", file=sys.stderr, flush=True)
    warnings.warn(message, CaptureWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class CaptureSettings:
    """Where captures go and the NPU dump settings.

    Attributes
    ----------
    data_dir : absolute path of the workspace (the NPU writes dumps there, so never relative).
    dump_step : NPU ``dump_step``, e.g. ``"0"`` or ``"0|5|10"`` or ``"0|3-5"``.
    op_debug_level : NPU ``op_debug_level`` used with the ``overflow`` action.
    npu_run : N of ``npu/debug_N``; ``None``: 0, or 1 when a fusion action is set (the
        "second run" folder of the workspace layout).
    """

    data_dir: str
    dump_step: str = DEFAULT_DUMP_STEP
    op_debug_level: int = DEFAULT_OP_DEBUG_LEVEL
    npu_run: Optional[int] = None

    def __post_init__(self):
        if not _DUMP_STEP.fullmatch(self.dump_step):
            raise CaptureError(f"dump_step {self.dump_step!r} is not valid",
                               "use step numbers and ranges joined by '|', e.g. '0', '0|5|10' or '0|3-5'")
        if self.npu_run is not None and self.npu_run < 0:
            raise CaptureError(f"NPU run index {self.npu_run} is negative")

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.data_dir)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "CaptureSettings":
        """Settings from the variables in the module docstring (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        data_dir = env.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR
        return cls(
            data_dir=os.path.abspath(data_dir),
            dump_step=(env.get(ENV_DUMP_STEP) or DEFAULT_DUMP_STEP).strip(),
            op_debug_level=_int_setting(env, ENV_OP_DEBUG_LEVEL, DEFAULT_OP_DEBUG_LEVEL),
            npu_run=_int_setting(env, ENV_NPU_RUN, None),
        )


def _int_setting(env: Mapping[str, str], name: str, default):
    text = (env.get(name) or "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise CaptureError(f"{name}={text!r} is not an integer") from None


def action_from_env(environ: Optional[Mapping[str, str]] = None) -> str:
    """The action used when a helper gets ``action=None``: ``PRECISION_TOOL_ACTION``, else the
    original tool's ``PRECISION_TOOL_DUMP=True`` / ``PRECISION_TOOL_OVERFLOW=True``, else ``""``."""
    env = os.environ if environ is None else environ
    if env.get(ENV_ACTION, "").strip():
        return env[ENV_ACTION].strip()
    legacy = [action for name, action in ((ENV_LEGACY_DUMP, "dump"), (ENV_LEGACY_OVERFLOW, "overflow"))
              if env.get(name, "").strip().lower() == "true"]
    return "|".join(legacy)
