"""Typed errors of the NPU emulator: one line each, naming the script or option at fault."""
from __future__ import annotations

from precision_tool.errors import PrecisionToolError


class ModelScriptError(PrecisionToolError):
    """A MODEL_SCRIPT that cannot be used: missing file, no ``model()``/``inputs()``, an exception
    inside it, or something returned that the emulator does not take."""


class EmulationError(PrecisionToolError):
    """The model cannot be emulated as asked: a bad ``--perturb`` op or value, control flow (tf.cond,
    while loops), dynamic shapes, a batch norm the emulator does not take yet (training mode, NCHW, a
    statistic read), or a reference capture whose op names do not match the graph."""
