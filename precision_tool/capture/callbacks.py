"""A Keras callback that prints, each step, the loss, the loss scale and whether the step overflowed.

:func:`loss_scale_callback`: a lowered loss scale (the ``LossScaleOptimizer`` skipped the update: the gradients
held inf/NaN) or, without loss scaling, a non-finite loss is an overflow; one line per step (every ``every`` steps,
and always for an overflow). :func:`npu_print_loss_scale_class` builds the original tool's
``NpuPrintLossScaleCallBack(optimizer, loss=None)``, which prints ``PrecisionTool: Train steps N, loss_scale=S /
not_overflow_status=F`` before each step (``n/a`` for a value the optimizer does not have).
See docs/capture-keras-tf2.md#npu-side-tf2-npu_device and docs/internals/capture.md#callbacks.
"""
from __future__ import annotations

import importlib
import math
from typing import Any, Callable, Dict, Optional

from precision_tool.capture.settings import MESSAGE_PREFIX
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

np = lazy_import("numpy")
tf = lazy_import("tensorflow")

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


# -- the original tool's NpuPrintLossScaleCallBack ------------------------------------------------------
ORIGINAL_LINE = "PrecisionTool: Train steps {}, loss_scale={} / not_overflow_status={}"
NOT_AVAILABLE = "n/a"
_KERAS_FAMILIES = ("keras", "tf_keras")
_ORIGINAL_CLASSES: Dict[Any, type] = {}


def _host_value(value):
    """A variable or tensor's value on the host: ``.numpy()`` (eager), else numpy's view, else the Keras
    backend's ``get_value`` (TF 1.x graph mode)."""
    as_numpy = getattr(value, "numpy", None)
    if callable(as_numpy):
        try:
            return as_numpy()
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            pass  # a graph tensor: numpy() exists but only works eagerly
    try:
        array = np.asarray(value)
    except NotImplementedError:  # TF 1.x refuses to turn a symbolic tensor into an array
        array = None
    if array is not None and array.dtype != object:
        return array
    return tf.compat.v1.keras.backend.get_value(value)


def optimizer_value(optimizer, names) -> Optional[Any]:
    """The host value of the first attribute of ``names`` the optimizer has (``None`` when it has none).

    A callable is called first: TF <= 2.3's experimental ``LossScaleOptimizer.loss_scale`` is a
    ``LossScale`` object that returns the current scale when called.
    """
    for name in names:
        value = getattr(optimizer, name, None)
        if value is None:
            continue
        if callable(value) and not hasattr(value, "numpy"):
            value = value()
        return _host_value(value)
    return None


def original_line(batch, optimizer) -> str:
    """The original's line for ``batch``, ``n/a`` for a value the optimizer does not have.

    The scale is ``loss_scale`` (NPU, Keras 2), else ``dynamic_scale`` (Keras 3), else ``initial_scale``: Keras 3
    creates ``dynamic_scale`` with that value in the first step, so before it the first step's scale is that.

    >>> class NpuOptimizer:  # what NPU's NPULossScaleOptimizer exposes
    ...     loss_scale, last_step_finite = 1024.0, False
    >>> original_line(3, NpuOptimizer())
    'PrecisionTool: Train steps 3, loss_scale=1024.000 / not_overflow_status=False'
    >>> original_line(0, object())
    'PrecisionTool: Train steps 0, loss_scale=n/a / not_overflow_status=n/a'
    """
    scale = optimizer_value(optimizer, ("loss_scale", "dynamic_scale", "initial_scale"))
    finite = optimizer_value(optimizer, ("last_step_finite",))
    return ORIGINAL_LINE.format(batch, NOT_AVAILABLE if scale is None else "{:.3f}".format(float(scale)),
                                NOT_AVAILABLE if finite is None else bool(finite))


def _callback_base_for(optimizer) -> Optional[type]:
    """``Callback`` of the Keras the optimizer's class comes from (``keras`` or ``tf_keras``), else ``None``."""
    for klass in type(optimizer).__mro__:
        package = (klass.__module__ or "").split(".")[0]
        if package in _KERAS_FAMILIES:
            try:
                return importlib.import_module(package).callbacks.Callback  # tf_keras.callbacks is no module
            except (ImportError, AttributeError):
                return None
    return None


class _PrintLossScale:
    """The body of ``NpuPrintLossScaleCallBack``; :func:`npu_print_loss_scale_class` mixes it into a Callback."""

    def __new__(cls, optimizer=None, loss=None):
        wanted = _callback_base_for(optimizer)
        if wanted is not None and not issubclass(cls, wanted):
            return npu_print_loss_scale_class(wanted)(optimizer, loss)  # the other Keras: its own Callback
        return super().__new__(cls)

    def __init__(self, optimizer, loss=None):
        super().__init__()
        self.optimizer = optimizer
        self.loss = loss

    def on_train_batch_begin(self, batch, logs=None):
        print(original_line(batch, self.optimizer), flush=True)


def npu_print_loss_scale_class(base: Optional[type] = None) -> type:
    """The original tool's ``NpuPrintLossScaleCallBack`` class on ``base`` (default
    ``tf.keras.callbacks.Callback``, as the original), built once per base.

    ``callbacks.append(npu_tf_config.NpuPrintLossScaleCallBack(opt))``; ``model.fit(..., callbacks=callbacks)``.
    """
    if base is None:
        base = tf.keras.callbacks.Callback
    klass = _ORIGINAL_CLASSES.get(base)
    if klass is None:
        klass = type("NpuPrintLossScaleCallBack", (_PrintLossScale, base), {
            "__doc__": "Prints the loss scale and last_step_finite before each step (the original tool's callback).",
            "__module__": "precision_tool.tf_config"})
        _ORIGINAL_CLASSES[base] = klass
    return klass
