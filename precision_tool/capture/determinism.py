"""Same seeds and deterministic kernels on both sides, so NPU and reference see the same data and weights.

:func:`seed_everything` is the original tool's call: Python, NumPy, TensorFlow (and Keras 3) seeded, and
deterministic kernels asked for as far as the installed TensorFlow can. :func:`seed_tensorflow` seeds TensorFlow
alone, with the call its version has; :func:`seed_setting` is the seed ``PRECISION_TOOL_SEED`` asks for (2022
unless set; ``off``), which :mod:`precision_tool.capture.import_seed` uses to seed at import. What each TensorFlow
version offers: docs/capture-tf1.md#seed_everythingseednone-deterministicfalse; why the default graph is seeded
too: docs/internals/capture.md#determinism.
"""
from __future__ import annotations

import os
import random
import warnings
from typing import Dict, List, Mapping, Optional

from precision_tool.capture.settings import notify
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

tf = lazy_import("tensorflow")
np = lazy_import("numpy")

DEFAULT_SEED = 2022  # the original tool's cfg.DUMP_SEED in its last version
ENV_SEED = "PRECISION_TOOL_SEED"
SEED_OFF = "off"
MAX_SEED = 2 ** 32 - 1  # numpy's legacy generator takes no more
DETERMINISM_VARIABLES = ("TF_DETERMINISTIC_OPS", "TF_CUDNN_DETERMINISTIC")


def seed_setting(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """The seed ``PRECISION_TOOL_SEED`` asks for: unset or empty -> 2022, ``off`` -> ``None``, else its number.

    >>> seed_setting({}), seed_setting({"PRECISION_TOOL_SEED": "7"}), seed_setting({"PRECISION_TOOL_SEED": "OFF"})
    (2022, 7, None)
    """
    env = os.environ if environ is None else environ
    text = (env.get(ENV_SEED) or "").strip()
    if not text:
        return DEFAULT_SEED
    if text.lower() == SEED_OFF:
        return None
    try:
        return checked_seed(int(text))
    except (ValueError, CaptureError):
        raise CaptureError(f"{ENV_SEED}={text!r} is not a seed",
                           f"use a whole number from 0 to {MAX_SEED}, or '{SEED_OFF}' for no seeding at import"
                           ) from None


def checked_seed(seed) -> int:
    """``seed`` if it is an int every generator accepts (0 to 2**32 - 1), else a :class:`CaptureError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise CaptureError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    return seed


def seed_tensorflow(tf_module, seed: int) -> str:
    """Seed TensorFlow's global generator (and the default graph's); returns what was called, for messages.

    TF 1.x has ``tf.compat.v1.set_random_seed`` only (``tf.random.set_seed`` does not exist there). TF 2 has
    ``tf.random.set_seed``; run eagerly, it leaves the default graph unseeded, so that seed is set too, for a
    script that goes on with ``disable_eager_execution()``. Neither initialises TensorFlow's runtime:
    ``tf.config`` device and thread settings can still be changed afterwards.
    """
    v1 = tf_module.compat.v1
    eager = bool(tf_module.executing_eagerly())
    set_seed = getattr(getattr(tf_module, "random", None), "set_seed", None)
    if set_seed is None:  # TF 1.x
        v1.set_random_seed(seed)
        return "tf.compat.v1.set_random_seed" + (" (eager)" if eager else " on the default graph")
    set_seed(seed)
    if not eager:
        return "tf.random.set_seed on the default graph"
    v1.get_default_graph().seed = seed
    # tf.data then warns "Seed N from outer graph might be getting used by function ..." in eager mode; a false
    # alarm: an eager tf.function takes its seed from the global seed, which has the same value (tested)
    warnings.filterwarnings("ignore", message=rf"Seed {seed} from outer graph might be getting used by function",
                            category=UserWarning)
    return "tf.random.set_seed, and the default graph's seed for tf.compat.v1 graph mode"


def _enable_op_determinism():
    """``tf.config.experimental.enable_op_determinism`` (TF 2.8+), or ``None`` where it does not exist."""
    experimental = getattr(getattr(tf, "config", None), "experimental", None)
    return getattr(experimental, "enable_op_determinism", None)


def seed_everything(seed: Optional[int] = None, deterministic: bool = False) -> Dict[str, object]:
    """Seed Python, NumPy, TensorFlow (and Keras 3's generator) and ask for deterministic TF kernels.

    Parameters
    ----------
    seed : int, optional
        Used for every generator; default: ``PRECISION_TOOL_SEED`` when it is a number, else 2022 (the
        original tool's default, also when ``PRECISION_TOOL_SEED=off``: calling this asks for seeding).
    deterministic : bool
        When True, set ``TF_DETERMINISTIC_OPS=1`` and ``TF_CUDNN_DETERMINISTIC=1`` and, on TF 2.8+, call
        ``tf.config.experimental.enable_op_determinism()``. Off by default, as the original only seeded (on a GPU,
        ops without a deterministic kernel then raise); per TensorFlow version: docs/capture-tf1.md.

    Returns
    -------
    dict
        ``seed``; ``seeded`` (``["python", "numpy", "tensorflow"]``, plus ``"keras"`` when Keras has
        ``keras.utils.set_random_seed``); ``tensorflow``, the seeding call made; ``deterministic``, True only when
        TensorFlow itself enforces deterministic ops; ``determinism``, the same in words. One ``[precision_tool]``
        line on stderr says all of it. ``PYTHONHASHSEED`` is set too (docs/internals/capture.md#determinism).
    """
    if seed is None:
        seed = seed_setting()
        seed = DEFAULT_SEED if seed is None else seed
    seed = checked_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    how = seed_tensorflow(tf, seed)
    seeded: List[str] = ["python", "numpy", "tensorflow"]
    try:
        import keras
    except ImportError:
        keras = None
    if keras is not None and hasattr(keras, "utils") and hasattr(keras.utils, "set_random_seed"):
        keras.utils.set_random_seed(seed)  # Keras 3 also resets its own SeedGenerator here
        seeded.append("keras")
    enforced, determinism = False, "deterministic ops unchanged"
    if deterministic:
        for name in DETERMINISM_VARIABLES:
            os.environ[name] = "1"
        enable = _enable_op_determinism()
        if enable is not None:
            enable()
            enforced, determinism = True, "deterministic ops on (tf.config.experimental.enable_op_determinism)"
        else:
            determinism = (f"{'=1, '.join(DETERMINISM_VARIABLES)}=1 set, but TensorFlow {tf.__version__} has no "
                           "enable_op_determinism (TF 2.8+): only GPU kernels that read these variables become "
                           "deterministic, and nothing checks the others")
    notify(f"seed {seed}: {', '.join(seeded)} seeded (TensorFlow: {how}); {determinism}")
    return {"seed": seed, "seeded": seeded, "tensorflow": how, "deterministic": enforced,
            "determinism": determinism}
