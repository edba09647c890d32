"""NPU-side helpers: put a :class:`~precision_tool.capture.actions.CapturePlan` into whatever the script uses.

* :func:`session_dump_config` -- a ``tf.compat.v1.ConfigProto`` (``tf.Session``, ``MonitoredTrainingSession``,
  ``NPURunConfig(session_config=...)``).
* :func:`update_custom_op` -- an ``NpuOptimizer`` entry the script already builds itself.
* :func:`estimator_dump_config`, :func:`npu_run_config_options` -- ``npu_bridge``'s ``DumpConfig`` and
  ``NPURunConfig`` keyword arguments (need ``npu_bridge``, i.e. an Ascend host).
* :func:`npu_device_dump_config` -- TF2's ``npu_device.global_options()``.

Every helper also creates the workspace folders and sets the GE graph variables (see
:func:`~precision_tool.capture.environment.prepare_workspace`). TensorFlow is imported on first use only.

The ConfigProto helpers work anywhere: TensorFlow without the NPU plug-in only logs that it has no
``NpuOptimizer`` and runs the graph on CPU, which is how they are tested.
"""
from __future__ import annotations

import importlib
from typing import Dict, Optional

from precision_tool.capture.actions import FUSION_OFF, FUSION_SWITCH, PROF, ActionSpec, CapturePlan, build_plan
from precision_tool.capture.environment import prepare_workspace
from precision_tool.capture.settings import notify
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

config_pb2 = lazy_import("tensorflow.core.protobuf.config_pb2")
rewriter_config_pb2 = lazy_import("tensorflow.core.protobuf.rewriter_config_pb2")

NPU_OPTIMIZER = "NpuOptimizer"
# Grappler passes that rename or merge ops before the NpuOptimizer sees the graph, so that NPU op
# names would no longer be the TF names of the reference: remapping (Conv2D+BiasAdd+Relu become one
# _FusedConv2D), arithmetic optimisation (rewritten sub-graphs under new names, re-ordered maths) and
# memory optimisation (recomputed ops duplicated under new names). Ascend's guide asks for the first
# and last to be off anyway.
NAME_BREAKING_TOGGLES = ("remapping", "arithmetic_optimization")

# parameter_map key -> attribute path under TF2's npu_device.global_options()
TF2_OPTIONS = {
    "enable_dump": "dump_config.enable_dump",
    "dump_path": "dump_config.dump_path",
    "dump_step": "dump_config.dump_step",
    "dump_mode": "dump_config.dump_mode",
    "enable_dump_debug": "dump_config.enable_dump_debug",
    "dump_debug_mode": "dump_config.dump_debug_mode",
    "op_debug_level": "op_debug_level",
    "debug_dir": "debug_dir",
    "fusion_switch_file": "fusion_switch_file",
    "profiling_mode": "profiling_config.enable_profiling",
    "profiling_options": "profiling_config.profiling_options",
}
DUMP_CONFIG_KEYS = ("enable_dump", "dump_path", "dump_step", "dump_mode", "enable_dump_debug", "dump_debug_mode")
_NOT_IN_DUMP_CONFIG = (FUSION_OFF, FUSION_SWITCH, PROF)


# -- ConfigProto / custom_op ----------------------------------------------------------------------------
def session_dump_config(session_config=None, action: ActionSpec = None):
    """Add (or update) the ``NpuOptimizer`` of a session config for ``action``; returns the config.

    Parameters
    ----------
    session_config : tf.compat.v1.ConfigProto, optional
        The script's own config, changed in place (every other setting is kept); ``None`` makes one.
    action : str, optional
        ``'dump'``, ``'overflow'``, ``'fusion_off'``, ``'fusion_switch'``, ``'prof'`` or several joined by
        ``'|'``; ``None`` reads ``PRECISION_TOOL_ACTION``. See :mod:`precision_tool.capture.actions`.

    Returns
    -------
    tf.compat.v1.ConfigProto
        With an ``NpuOptimizer`` custom optimizer (``use_off_line`` True unless already set) carrying the
        action's parameters, and Grappler's ``remapping`` and ``arithmetic_optimization`` OFF and
        ``memory_optimization`` NO_MEM_OPT, so NPU ops keep the TF names of the reference.

    Raises
    ------
    CaptureError
        Unknown or conflicting actions, or ``session_config`` is not a ConfigProto.
    """
    if session_config is None:
        session_config = config_pb2.ConfigProto()
    elif not isinstance(session_config, config_pb2.ConfigProto):
        raise CaptureError(f"session_config must be a tf.compat.v1.ConfigProto, got {type(session_config).__name__}")
    plan = build_plan(action)
    rewrite = session_config.graph_options.rewrite_options
    custom_op = next((op for op in rewrite.custom_optimizers if op.name == NPU_OPTIMIZER), None)
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = NPU_OPTIMIZER
    if "use_off_line" not in custom_op.parameter_map:
        custom_op.parameter_map["use_off_line"].b = True
    prepare_workspace(plan)
    _apply_to_custom_op(custom_op, plan)
    keep_op_names(rewrite)
    return session_config


def keep_op_names(rewrite_options) -> None:
    """Turn off the Grappler passes that rename TF ops before the NPU sees them (in place).

    ``memory_optimization`` takes ``RewriterConfig.NO_MEM_OPT``: assigning ``RewriterConfig.OFF``
    (value 2 of another enum) would silently mean ``MANUAL``.
    """
    config = rewriter_config_pb2.RewriterConfig
    for name in NAME_BREAKING_TOGGLES:
        setattr(rewrite_options, name, config.OFF)
    rewrite_options.memory_optimization = config.NO_MEM_OPT


def update_custom_op(custom_op, action: ActionSpec = None):
    """Set ``action``'s parameters on an ``NpuOptimizer`` custom optimizer the script made; returns it.

    The script keeps its own Grappler settings: Ascend asks for ``remapping = RewriterConfig.OFF`` and
    ``memory_optimization = RewriterConfig.NO_MEM_OPT`` (not ``OFF``, which means MANUAL there).
    """
    if not hasattr(custom_op, "parameter_map") or not hasattr(custom_op, "name"):
        raise CaptureError(f"update_custom_op expects a custom optimizer from "
                           f"rewrite_options.custom_optimizers.add(), got {type(custom_op).__name__}")
    if custom_op.name and custom_op.name != NPU_OPTIMIZER:
        raise CaptureError(f"update_custom_op: this custom optimizer is {custom_op.name!r}, not {NPU_OPTIMIZER!r}")
    plan = build_plan(action)
    custom_op.name = NPU_OPTIMIZER
    prepare_workspace(plan)
    _apply_to_custom_op(custom_op, plan)
    return custom_op


def _apply_to_custom_op(custom_op, plan: CapturePlan) -> None:
    parameter_map = custom_op.parameter_map
    for name in plan.cleared:
        if name in parameter_map:
            del parameter_map[name]
            notify(f"removed your NpuOptimizer '{name}': it cannot be on with '{'|'.join(sorted(plan.actions))}'")
    for param in plan.params:
        attr = parameter_map[param.name]
        if param.kind == "b":
            attr.b = bool(param.value)
        elif param.kind == "i":
            attr.i = int(param.value)
        else:
            attr.s = str(param.value).encode("utf-8")


# -- npu_bridge (TF1 estimator on an Ascend host) -------------------------------------------------------
def _npu_bridge_class(name: str, helper: str):
    try:
        module = importlib.import_module("npu_bridge.npu_init")
    except ImportError as error:
        raise CaptureError(f"{helper} needs npu_bridge, the TensorFlow adapter installed with CANN on an Ascend "
                           f"host, and it cannot be imported here ({error}); elsewhere use "
                           "session_dump_config") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise CaptureError(f"{helper}: npu_bridge.npu_init has no {name} (npu_bridge too old?)") from None


def _dump_config(plan: CapturePlan, helper: str):
    values = plan.values()
    kwargs = {key: values[key] for key in DUMP_CONFIG_KEYS if key in values}
    return _npu_bridge_class("DumpConfig", helper)(**kwargs)


def estimator_dump_config(action: ActionSpec = None):
    """An ``npu_bridge`` ``DumpConfig`` for ``action``: ``NPURunConfig(dump_config=estimator_dump_config('dump'))``.

    Only ``dump`` and ``overflow`` fit in a ``DumpConfig``; for ``fusion_off``, ``fusion_switch`` or
    ``prof`` use :func:`npu_run_config_options`, which fills the other ``NPURunConfig`` arguments too.

    Raises
    ------
    CaptureError
        ``npu_bridge`` cannot be imported (no Ascend software here), or an action that a DumpConfig
        cannot carry.
    """
    plan = build_plan(action)
    extra = [name for name in _NOT_IN_DUMP_CONFIG if name in plan.actions]
    if extra:
        spelled = "|".join(sorted(plan.actions))
        raise CaptureError(f"estimator_dump_config returns a DumpConfig, which cannot carry {', '.join(extra)}",
                           f"use NPURunConfig(**npu_tf_config.npu_run_config_options({spelled!r}), ...)")
    dump_config = _dump_config(plan, "estimator_dump_config")
    prepare_workspace(plan)
    return dump_config


def npu_run_config_options(action: ActionSpec = None) -> Dict[str, object]:
    """Keyword arguments for ``npu_bridge``'s ``NPURunConfig`` carrying ``action`` (needs ``npu_bridge``).

    ``dump_config`` (a DumpConfig) for dump/overflow, ``op_debug_level`` and ``debug_dir`` for overflow,
    ``fusion_switch_file`` for the fusion actions, ``profiling_config`` (a ProfilingConfig) for prof.
    """
    plan = build_plan(action)
    values = plan.values()
    options: Dict[str, object] = {}
    if any(key in values for key in DUMP_CONFIG_KEYS):
        options["dump_config"] = _dump_config(plan, "npu_run_config_options")
    for key in ("op_debug_level", "debug_dir", "fusion_switch_file"):
        if key in values:
            options[key] = values[key]
    if "profiling_mode" in values:
        profiling_config = _npu_bridge_class("ProfilingConfig", "npu_run_config_options")
        options["profiling_config"] = profiling_config(enable_profiling=True,
                                                       profiling_options=values["profiling_options"])
    prepare_workspace(plan)
    return options


# -- TF2 npu_device -------------------------------------------------------------------------------------
def npu_device_dump_config(npu_device, action: ActionSpec = None):
    """Set ``action`` on TF2's ``npu_device.global_options()`` (before ``npu_device.open()``); returns ``npu_device``.

    Raises
    ------
    CaptureError
        ``npu_device`` is not the ``npu_device`` module, or its options lack one of the settings.
    """
    if npu_device is None or not callable(getattr(npu_device, "global_options", None)):
        raise CaptureError(f"npu_device_dump_config expects the npu_device module (import npu_device), "
                           f"got {type(npu_device).__name__}")
    plan = build_plan(action)
    options = npu_device.global_options()
    for param in plan.params:
        _set_option(options, TF2_OPTIONS[param.name], param.value)
    prepare_workspace(plan)
    return npu_device


def _set_option(options, path: str, value) -> None:
    *parents, leaf = path.split(".")
    target = options
    try:
        for name in parents:
            target = getattr(target, name)
        getattr(target, leaf)  # refuse to invent options the installed npu_device does not have
        setattr(target, leaf, value)
    except AttributeError:
        raise CaptureError(f"npu_device.global_options() has no '{path}' (npu_device too old or too new?)") from None


def describe_custom_op(custom_op) -> Dict[str, object]:
    """``{key: python value}`` of an ``NpuOptimizer``'s ``parameter_map`` (for tests and messages)."""
    values: Dict[str, object] = {}
    for key, attr in custom_op.parameter_map.items():
        kind: Optional[str] = attr.WhichOneof("value")
        value = getattr(attr, kind) if kind else None
        values[key] = value.decode("utf-8") if isinstance(value, bytes) else value
    return values
