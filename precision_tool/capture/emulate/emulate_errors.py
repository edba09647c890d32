"""Typed errors of the NPU emulator: one line each, naming the script or option at fault."""
from __future__ import annotations

import re
from typing import List

from precision_tool.errors import PrecisionToolError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Exit|Warning)): ?(.*)$")
# Lines of TensorFlow's and Keras's wrapping that never hold the cause.
_WRAPPING = ("in user code:", "Exception encountered when calling", "Arguments received by", "\u2022",
             "Could not automatically infer the output shape", "Error encountered:")
_LONGEST = 120  # a longer cause keeps its first sentence


class ModelScriptError(PrecisionToolError):
    """A MODEL_SCRIPT that cannot be used: missing file, no ``model()``/``inputs()``, an exception
    inside it, or something returned that the emulator does not take."""


class EmulationError(PrecisionToolError):
    """The model cannot be emulated as asked: a bad ``--perturb`` op or value, control flow (tf.cond,
    while loops), dynamic shapes, a batch norm the emulator does not take yet (training mode, NCHW, a
    statistic read), or a reference capture whose op names do not match the graph."""


def cause_line(error: BaseException) -> str:
    """``Type: cause`` in one line, for an exception from user code that TensorFlow or Keras may have wrapped.

    TensorFlow's ``in user code:`` errors list the traceback (``File ...`` lines, each followed by its code
    line) and then ``Type: message``; Keras adds ``Exception encountered when calling X.call().``, argument
    lists (``•``) and terminal colours. The cause is the first line that is none of these, under the innermost
    exception type named; a long line is cut after its first sentence. A message ending in ``:`` whose
    details TensorFlow only logged (its MLIR errors) says so.
    """
    kind = type(error).__name__
    lines: List[str] = []
    after_file = False
    for raw in _ANSI.sub("", str(error)).splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("File "):
            after_file = True
            continue
        if after_file:  # the code line under a File line
            after_file = False
            continue
        raised = _RAISED.match(line)
        if raised:
            kind, line = raised.group(1), raised.group(2).strip()
        if line and not line.startswith(_WRAPPING):
            lines.append(line)
    if not lines:
        return kind
    cause = lines[0]
    if len(cause) > _LONGEST and ". " in cause:
        cause = cause[:cause.index(". ") + 1]
    if cause.endswith(":") and len(lines) == 1:
        cause += " (TensorFlow logged the details above)"
    return f"{kind}: {cause}"
