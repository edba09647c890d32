"""How TensorFlow is imported and run by the code that needs it -- capture, emulation, replay (lazily).

:func:`session_config`: the CPU only (a GPU's TF32 matmuls would blur float32 figures), Grappler off, the
classic graph optimizer at L0 (no constant folding, CSE or inlining), one thread -- so every op runs under
its own name and results are bit-identical from run to run. :func:`quiet_tensorflow_import` sets, before
TensorFlow is first imported and only where the user set nothing, ``TF_ENABLE_ONEDNN_OPTS=0`` (oneDNN would
fuse ops and change float32 results) and ``TF_CPP_MIN_LOG_LEVEL=2`` (start-up chatter kept out of reports).
"""
from __future__ import annotations

import os
import sys

from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")


def quiet_tensorflow_import() -> None:
    """See the module docstring; does nothing once TensorFlow is imported."""
    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def session_config():
    """A ConfigProto that runs the graph as written, on one thread (see the module docstring)."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1,
                                      device_count={"GPU": 0})
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    options = config.graph_options.optimizer_options
    options.opt_level = tf.compat.v1.OptimizerOptions.L0
    options.do_constant_folding = False
    options.do_common_subexpression_elimination = False
    options.do_function_inlining = False
    return config
