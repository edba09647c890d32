"""One-line changes for training scripts: ``import precision_tool.tf_config as npu_tf_config``.

NPU side (dump, overflow detection, fusion off, profiling)::

    config = npu_tf_config.session_dump_config(config, action="dump")          # tf.Session / MonitoredTrainingSession
    npu_tf_config.update_custom_op(custom_op, action="dump|fusion_off")          # a script building NpuOptimizer itself
    run_config = NPURunConfig(dump_config=npu_tf_config.estimator_dump_config("dump"), ...)   # npu_bridge
    npu_tf_config.npu_device_dump_config(npu_device, "overflow")                # TF2, before npu_device.open()

Reference side (CPU/GPU)::

    sess = npu_tf_config.sess_dump(sess)                                         # tf.compat.v1 session
    hooks = [npu_tf_config.estimator_dump()]                                     # MonitoredTrainingSession
    npu_tf_config.enable_reference_dump()                                        # TF2 / Keras, before the first step
    npu_tf_config.record_reference_names(model)                                  # ... Keras names for tf_dump

then ``precision_tool tf_dump``. Actions and parameters: :mod:`precision_tool.capture.actions`;
settings (workspace, dump step): :mod:`precision_tool.capture.settings`; ``docs/capture-*.md``.

Importing this module does not import TensorFlow. It sets ``TF_ENABLE_ONEDNN_OPTS=0`` when TensorFlow
is not imported yet (so a CPU reference keeps Conv2D, BiasAdd and Relu apart), and warns loudly when
it comes too late. Like the original tool, it seeds at import (seed 2022, ``PRECISION_TOOL_SEED=<n>|off``):
Python and NumPy at once, TensorFlow right after it is imported (:mod:`precision_tool.capture.import_seed`).
``NpuPrintLossScaleCallBack`` (the original's Keras callback) is built on first use, by ``__getattr__``.

The original tool's names keep working: ``FUSION_OFF_FILE`` (shipped, all fusion off), ``FUSION_SWITCH_FILE``
(the switch file the NPU reads for ``fusion_switch``: ``WORKSPACE/fusion/fusion_switch.cfg``, created from
``FUSION_SWITCH_TEMPLATE`` when missing), ``DEFAULT_OP_DEBUG_DIR`` and ``OP_DEBUG_DIR`` (the ``debug_dir``
helpers set: ``WORKSPACE/npu/debug_N``). The last three depend on ``PRECISION_TOOL_DATA`` and
``PRECISION_TOOL_NPU_RUN``, so they are computed each time they are read (PEP 562 module ``__getattr__``).
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
