"""Same seeds and deterministic kernels on both sides, so NPU and reference see the same data and weights."""
from __future__ import annotations

import os
import random
from typing import Dict, List

from precision_tool.capture.settings import notify
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")
np = lazy_import("numpy")

DEFAULT_SEED = 0


def seed_everything(seed: int = DEFAULT_SEED, deterministic: bool = True) -> Dict[str, object]:
    """Seed Python, NumPy, TensorFlow (and Keras, if installed) and make TF kernels deterministic.

    Parameters
    ----------
    seed : int
        Used for every generator.
    deterministic : bool
        Also call ``tf.config.experimental.enable_op_determinism()`` and set ``TF_DETERMINISTIC_OPS=1``
        and ``TF_CUDNN_DETERMINISTIC=1`` (older TF and cuDNN read these).

    Returns
    -------
    dict
        ``{"seed": seed, "seeded": [...], "deterministic": bool}``.

    Notes
    -----
    ``PYTHONHASHSEED`` only affects Python processes started afterwards (e.g. data-loader workers); set
    it before starting the script to fix this process's ``hash()``. In graph mode the TF seed is the
    default graph's: call this inside ``with graph.as_default():`` when the script builds its own graph.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise CaptureError(f"seed must be a non-negative integer, got {seed!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    seeded: List[str] = ["python", "numpy", "tensorflow"]
    try:
        import keras
    except ImportError:
        keras = None
    if keras is not None and hasattr(keras, "utils") and hasattr(keras.utils, "set_random_seed"):
        keras.utils.set_random_seed(seed)
        seeded.append("keras")
    if deterministic:
        os.environ["TF_DETERMINISTIC_OPS"] = "1"
        os.environ["TF_CUDNN_DETERMINISTIC"] = "1"
        tf.config.experimental.enable_op_determinism()
    notify(f"seeds set to {seed} ({', '.join(seeded)}); deterministic TF ops {'on' if deterministic else 'unchanged'}")
    return {"seed": seed, "seeded": seeded, "deterministic": deterministic}
