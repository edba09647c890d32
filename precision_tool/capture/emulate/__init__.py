"""NPU emulation: run a TensorFlow model on the CPU under Ascend numerics and write what a real Ascend run with
``action='dump'`` (and ``'overflow'``, ``'fusion_off'``) would write, next to the float32 reference::

    from precision_tool.capture.emulate import EmulationOptions, emulate
    result = emulate("models/cnn.py", "ws", EmulationOptions(perturb={"res/conv/Conv2D": 0.5}, fusion="both"))
    result.manifest["overflow"]["first_op"]

Importing it switches oneDNN off for TensorFlow imported afterwards, so that op names match the Python names;
TensorFlow itself is imported lazily. Users: docs/emulate.md; the modules: docs/internals/emulator.md#the-pipeline.
"""
import os as _os
import sys as _sys

from precision_tool.capture.emulate.emulate_errors import EmulationError, ModelScriptError
from precision_tool.capture.emulate.faults import Fault, parse_fault
from precision_tool.capture.emulate.run import (EmulationOptions, EmulationResult, emulate, emulate_model,
                                                seed_everything)
from precision_tool.capture.environment import disable_onednn_before_tensorflow as _no_onednn

# The imports above leave TensorFlow unimported (it is imported lazily), so these settings still come first.
_no_onednn()
if "tensorflow" not in _sys.modules:
    _os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up chatter out of reports

__all__ = ["EmulationError", "EmulationOptions", "EmulationResult", "Fault", "ModelScriptError", "emulate",
           "emulate_model", "parse_fault", "seed_everything"]
