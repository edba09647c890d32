"""One-line changes for training scripts: ``import precision_tool.tf_config as npu_tf_config``.

NPU side: :func:`session_dump_config`, :func:`update_custom_op`, :func:`estimator_dump_config`,
:func:`npu_run_config_options`, :func:`npu_device_dump_config`. Reference side (CPU/GPU): :func:`sess_dump`,
:func:`estimator_dump`, :func:`enable_reference_dump`, :func:`record_reference_names`; then ``precision_tool tf_dump``.
Importing it imports no TensorFlow: it sets ``TF_ENABLE_ONEDNN_OPTS=0`` while TensorFlow is not imported yet, and
seeds as the original did (:mod:`precision_tool.capture.import_seed`). The original tool's names keep working;
``FUSION_SWITCH_FILE``, ``DEFAULT_OP_DEBUG_DIR``, ``OP_DEBUG_DIR`` and ``NpuPrintLossScaleCallBack`` are computed
when read. Which line for which script: docs/internals/capture.md#tf_config and docs/capture-*.md.
"""
from __future__ import annotations

from precision_tool.capture.actions import ACTIONS, build_plan, parse_actions
from precision_tool.capture.callbacks import loss_scale_callback, npu_print_loss_scale_class
from precision_tool.capture.determinism import seed_everything
from precision_tool.capture.environment import disable_onednn_before_tensorflow
from precision_tool.capture.fusion_files import FUSION_OFF_FILE, FUSION_SWITCH_TEMPLATE
from precision_tool.capture.import_seed import seed_at_import
from precision_tool.capture.npu_config import (env_dependent_value, estimator_dump_config, npu_device_dump_config,
                                               npu_run_config_options, session_dump_config, update_custom_op)
from precision_tool.capture.reference_dump import (disable_reference_dump, enable_reference_dump, estimator_dump,
                                                   reference_session_config, sess_dump)
from precision_tool.capture.reference_names import record_reference_names
from precision_tool.capture.settings import CaptureWarning

# None of the imports above imports TensorFlow (tests/capture/test_environment.py checks it), so this still
# runs before the training script's own `import tensorflow`.
ONEDNN_WARNING = disable_onednn_before_tensorflow()
IMPORT_SEED = seed_at_import()  # the original seeded at import; TensorFlow is seeded when it is imported

__all__ = [
    "ACTIONS", "FUSION_OFF_FILE", "FUSION_SWITCH_TEMPLATE", "CaptureWarning",
    # FUSION_SWITCH_FILE, DEFAULT_OP_DEBUG_DIR and OP_DEBUG_DIR (computed by __getattr__) are left out on
    # purpose: `import *` would read them at import, creating the switch file in a reference-only script.
    "session_dump_config", "update_custom_op", "estimator_dump_config", "npu_run_config_options",
    "npu_device_dump_config",
    "sess_dump", "estimator_dump", "reference_session_config", "enable_reference_dump", "disable_reference_dump",
    "record_reference_names",
    "seed_everything", "loss_scale_callback", "build_plan", "parse_actions", "IMPORT_SEED",
    # NpuPrintLossScaleCallBack is left out on purpose: `import *` would build it, importing TensorFlow
]


def __getattr__(name: str):
    """``FUSION_SWITCH_FILE``, ``DEFAULT_OP_DEBUG_DIR``, ``OP_DEBUG_DIR``: computed when read (see above)."""
    if name == "NpuPrintLossScaleCallBack":  # a tf.keras Callback subclass: built on first use (imports TF)
        return npu_print_loss_scale_class()
    try:
        return env_dependent_value(name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
