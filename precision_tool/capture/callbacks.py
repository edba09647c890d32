"""A Keras callback that prints, each step, the loss, the loss scale and whether the step overflowed.

On an NPU with mixed precision, Keras' ``LossScaleOptimizer`` halves its scale and skips the update
whenever the gradients hold inf/NaN: that halving is the overflow signal printed here. On a machine
without a loss-scale optimizer (plain CPU float32) there is no scale: the line says ``loss scale n/a``
and the overflow column reports only whether the loss is finite (``check_weights=True`` also counts
non-finite weights after the step, which pulls every weight to the host: slow on big models).

One line per step (every ``every`` steps, and always for an overflow)::

    [precision_tool] step 3: loss 0.6931 (finite), loss scale 16384 (halved: overflow, update skipped)
"""
from __future__ import annotations

import importlib
import math
from typing import Any, Callable, Optional

from precision_tool.capture.settings import MESSAGE_PREFIX
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

np = lazy_import("numpy")

_CLASS: Optional[type] = None


def current_loss_scale(optimizer) -> Optional[float]:
    """The dynamic loss scale of a Keras 3 (``dynamic_scale``) or tf-keras 2 (``loss_scale``)
    ``LossScaleOptimizer``; ``None`` for any other optimizer."""
    for name in ("dynamic_scale", "loss_scale"):
        value = getattr(optimizer, name, None)
        if value is None or callable(value):
            continue
        try:
            return float(np.asarray(value))
        except (TypeError, ValueError):
            continue
    return None


def step_line(step: int, loss, scale: Optional[float], previous_scale: Optional[float],
              bad_weights: Optional[int] = None) -> tuple:
    """``(text, overflowed)`` for one step; plain Python so the wording is testable without Keras."""
    finite = loss is not None and math.isfinite(float(loss))
    loss_text = "n/a" if loss is None else f"{float(loss):.6g} ({'finite' if finite else 'NOT FINITE'})"
    if scale is None:
        overflow = not finite
        scale_text = "loss scale n/a (no LossScaleOptimizer)"
    elif previous_scale is not None and scale < previous_scale:
        overflow = True
        scale_text = f"loss scale {scale:g} (lowered from {previous_scale:g}: overflow, update skipped)"
    else:
        overflow = False
        scale_text = f"loss scale {scale:g} (no overflow)"
    text = f"{MESSAGE_PREFIX} step {step}: loss {loss_text}, {scale_text}"
    if bad_weights is not None:
        text += f", {bad_weights} weights not finite" if bad_weights else ", weights finite"
        overflow = overflow or bad_weights > 0
    return text, overflow


def loss_scale_callback(every: int = 1, check_weights: bool = False, print_fn: Callable[[str], None] = print):
    """A ``keras.callbacks.Callback`` printing loss, loss scale and overflow each step.

    ``model.fit(..., callbacks=[npu_tf_config.loss_scale_callback()])``. After training,
    ``callback.overflow_steps`` lists the steps that overflowed (or had a non-finite loss without
    loss scaling).
    """
    return _callback_class()(every=every, check_weights=check_weights, print_fn=print_fn)


def _keras_callback_base():
    """``keras.callbacks.Callback`` (Keras 3 or the keras 2 package), else ``tf.keras``'s (TF 1.15 hosts)."""
    for name in ("keras.callbacks", "tensorflow.keras.callbacks"):
        try:
            return importlib.import_module(name).Callback
        except (ImportError, AttributeError):
            continue
    raise CaptureError("loss_scale_callback needs Keras (keras or tf.keras), which cannot be imported here")


def _callback_class():
    global _CLASS
    if _CLASS is None:
        base: Any = _keras_callback_base()  # found at run time: Keras 3, keras 2 or tf.keras

        class LossScaleCallback(base):
            """Prints loss, loss scale and overflow status after each training step."""

            def __init__(self, every=1, check_weights=False, print_fn=print):
                super().__init__()
                self.every = max(1, int(every))
                self.check_weights = check_weights
                self.print_fn = print_fn
                self.overflow_steps = []
                self._step = 0
                self._scale = None

            def on_train_begin(self, logs=None):
                optimizer = self.model.optimizer
                self._scale = current_loss_scale(optimizer)
                initial = getattr(optimizer, "initial_scale", None)
                if self._scale is None and initial is not None:
                    self._scale = float(np.asarray(initial))

            def on_train_batch_end(self, batch, logs=None):
                logs = logs or {}
                scale = current_loss_scale(self.model.optimizer)
                bad = None
                if self.check_weights:
                    bad = sum(int(np.size(w) - np.isfinite(np.asarray(w)).sum()) for w in self.model.trainable_weights)
                text, overflow = step_line(self._step, logs.get("loss"), scale, self._scale, bad)
                if overflow:
                    self.overflow_steps.append(self._step)
                if overflow or self._step % self.every == 0:
                    self.print_fn(text)
                if scale is not None:
                    self._scale = scale
                self._step += 1

            def on_train_end(self, logs=None):
                self.print_fn(f"{MESSAGE_PREFIX} {len(self.overflow_steps)} of {self._step} steps overflowed"
                              + (f": {self.overflow_steps[:20]}" if self.overflow_steps else ""))

        _CLASS = LossScaleCallback
    return _CLASS
