"""NPU-side helpers: put a :class:`~precision_tool.capture.actions.CapturePlan` into whatever the script uses.

:func:`session_dump_config` (a ``tf.compat.v1.ConfigProto``), :func:`update_custom_op` (an ``NpuOptimizer`` the
script builds itself), :func:`estimator_dump_config` and :func:`npu_run_config_options` (``npu_bridge``'s
``DumpConfig`` and ``NPURunConfig``: an Ascend host only), :func:`npu_device_dump_config` (TF2's
``npu_device.global_options()``). Each builds the plan first (a bad action or setting changes nothing), then
prepares the workspace (:func:`~precision_tool.capture.environment.prepare_workspace`), and only then changes the
config, reporting every value of the user's it changes. TensorFlow is imported on first use only.
See docs/internals/capture.md#npu_config.
"""
from __future__ import annotations

import importlib
from typing import Dict, List, Optional, Tuple

from precision_tool.capture.actions import (FUSION_OFF, FUSION_SWITCH, PROF, ActionSpec, CapturePlan, as_text,
                                            build_plan)
from precision_tool.capture.environment import prepare_workspace
from precision_tool.capture.fusion_files import ensure_fusion_switch_file, workspace_fusion_switch_file
from precision_tool.capture.settings import notify, npu_run_from_env, workspace_from_env
from precision_tool.errors import CaptureError
from precision_tool.lazy import lazy_import

config_pb2 = lazy_import("tensorflow.core.protobuf.config_pb2")
rewriter_config_pb2 = lazy_import("tensorflow.core.protobuf.rewriter_config_pb2")

NPU_OPTIMIZER = "NpuOptimizer"

# parameter_map key -> attribute path under TF2's npu_device.global_options()
TF2_OPTIONS = {
    "enable_dump": "dump_config.enable_dump",
    "dump_path": "dump_config.dump_path",
    "dump_step": "dump_config.dump_step",
    "dump_mode": "dump_config.dump_mode",
    "enable_dump_debug": "dump_config.enable_dump_debug",
    "dump_debug_mode": "dump_config.dump_debug_mode",
    "dump_data": "dump_config.dump_data",
    "dump_layer": "dump_config.dump_layer",
    "op_debug_level": "op_debug_level",
    "debug_dir": "debug_dir",
    "fusion_switch_file": "fusion_switch_file",
    "customize_dtypes": "customize_dtypes",
    "profiling_mode": "profiling_config.enable_profiling",
    "profiling_options": "profiling_config.profiling_options",
}
DUMP_CONFIG_KEYS = ("enable_dump", "dump_path", "dump_step", "dump_mode", "enable_dump_debug", "dump_debug_mode",
                    "dump_data", "dump_layer")
_NOT_IN_DUMP_CONFIG = (FUSION_OFF, FUSION_SWITCH, PROF)

# Names of npu_tf_config (the original tool's) whose value depends on the environment when they are read.
ENV_DEPENDENT_NAMES = ("FUSION_SWITCH_FILE", "DEFAULT_OP_DEBUG_DIR", "OP_DEBUG_DIR")


# -- ConfigProto / custom_op ----------------------------------------------------------------------------
def session_dump_config(session_config=None, action: ActionSpec = None, *, dump_data: Optional[str] = None,
                        dump_layer=None):
    """Set ``action`` on the session config's (last) ``NpuOptimizer``, adding one if needed; returns the config.

    Parameters
    ----------
    session_config : tf.compat.v1.ConfigProto, optional
        The script's own config, changed in place (every other setting is kept); ``None`` makes one.
    action : str, optional
        ``'dump'``, ``'overflow'``, ``'fusion_off'``, ``'fusion_switch'``, ``'prof'`` or several joined by
        ``'|'``; ``None`` reads ``PRECISION_TOOL_ACTION``. See :mod:`precision_tool.capture.actions`.
    dump_data : str, optional
        With ``'dump'``: ``'stats'`` dumps a statistics CSV per op instead of its tensors (``'tensor'``, the
        default); ``None`` reads ``PRECISION_TOOL_DUMP_DATA``. Every helper below takes it too.
    dump_layer : str or list of str, optional
        With ``'dump'``: only these GE node names are dumped (text separated by spaces, or a list), e.g. the line
        ``ac -c`` prints after a statistics run; ``None`` reads ``PRECISION_TOOL_DUMP_LAYER``.

    Returns
    -------
    tf.compat.v1.ConfigProto
        Its last ``NpuOptimizer`` custom optimizer carries ``use_off_line`` True and the action's
        parameters; Grappler's ``remapping`` is OFF. A value the user had set and that changes is reported.

    Raises
    ------
    CaptureError
        Unknown or conflicting actions, a bad setting, or ``session_config`` is not a ConfigProto.
    """
    if session_config is None:
        session_config = config_pb2.ConfigProto()
    elif not isinstance(session_config, config_pb2.ConfigProto):
        raise CaptureError(f"session_config must be a tf.compat.v1.ConfigProto, got {type(session_config).__name__}")
    rewrite = session_config.graph_options.rewrite_options
    npu_optimizers = [op for op in rewrite.custom_optimizers if op.name == NPU_OPTIMIZER]
    custom_op = npu_optimizers[-1] if npu_optimizers else None
    plan = build_plan(action, current=describe_custom_op(custom_op) if custom_op is not None else None,
                      dump_data=dump_data, dump_layer=dump_layer)
    prepare_workspace(plan)
    if len(npu_optimizers) > 1:
        notify(f"your config has {len(npu_optimizers)} {NPU_OPTIMIZER} entries: the last one gets the capture "
               "settings (npu_bridge reads them in order and the last one's keys win)")
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = NPU_OPTIMIZER
    if "use_off_line" in custom_op.parameter_map and not custom_op.parameter_map["use_off_line"].b:
        notify("your use_off_line False is replaced by True for this run (the graph must run on the NPU to be "
               "dumped; the original tool did the same)")
    custom_op.parameter_map["use_off_line"].b = True
    _apply_to_custom_op(custom_op, plan)
    _remapping_off(rewrite)
    return session_config


def _remapping_off(rewrite_options) -> None:
    """Grappler ``remapping`` OFF (as the original tool did), with a notice if the user had set another value."""
    toggle = rewriter_config_pb2.RewriterConfig
    if rewrite_options.remapping not in (toggle.DEFAULT, toggle.OFF):
        notify(f"your Grappler remapping {toggle.Toggle.Name(rewrite_options.remapping)} is replaced by OFF for this "
               "run (remapping fuses Conv2D+BiasAdd+Relu and renames ops before the NPU sees them; the original "
               "tool turned it off too)")
    rewrite_options.remapping = toggle.OFF


def update_custom_op(custom_op, action: ActionSpec = None, *, dump_data: Optional[str] = None, dump_layer=None):
    """Set ``action``'s parameters on an ``NpuOptimizer`` custom optimizer the script made; returns it.

    Only that entry changes (it cannot see the rest of the config): the script keeps its own Grappler settings.
    A value the user had set and that changes is reported.
    """
    if not hasattr(custom_op, "parameter_map") or not hasattr(custom_op, "name"):
        raise CaptureError(f"update_custom_op expects a custom optimizer from "
                           f"rewrite_options.custom_optimizers.add(), got {type(custom_op).__name__}")
    if custom_op.name and custom_op.name != NPU_OPTIMIZER:
        raise CaptureError(f"update_custom_op: this custom optimizer is {custom_op.name!r}, not {NPU_OPTIMIZER!r}")
    plan = build_plan(action, current=describe_custom_op(custom_op), dump_data=dump_data, dump_layer=dump_layer)
    prepare_workspace(plan)
    if not custom_op.name:
        notify(f"your unnamed custom optimizer is named {NPU_OPTIMIZER!r} (npu_bridge only reads that name)")
        custom_op.name = NPU_OPTIMIZER
    _apply_to_custom_op(custom_op, plan)
    return custom_op


def _apply_to_custom_op(custom_op, plan: CapturePlan) -> None:
    parameter_map = custom_op.parameter_map
    for name in plan.cleared:
        if name in parameter_map:
            del parameter_map[name]
    for param in plan.params:
        attr = parameter_map[param.name]
        if param.kind == "b":
            attr.b = bool(param.value)
        elif param.kind == "i":
            attr.i = int(param.value)
        else:
            attr.s = str(param.value).encode("utf-8")


def describe_custom_op(custom_op) -> Dict[str, object]:
    """``{key: python value}`` of an ``NpuOptimizer``'s ``parameter_map`` (for tests and messages)."""
    values: Dict[str, object] = {}
    for key, attr in custom_op.parameter_map.items():
        kind: Optional[str] = attr.WhichOneof("value")
        value = getattr(attr, kind) if kind else None
        values[key] = value.decode("utf-8") if isinstance(value, bytes) else value
    return values


def effective_npu_parameters(session_config) -> Dict[str, object]:
    """What npu_bridge reads from a session config: every ``NpuOptimizer``'s parameters, in order, a later
    entry's keys overriding an earlier one's (``{}`` without one)."""
    values: Dict[str, object] = {}
    for custom_op in session_config.graph_options.rewrite_options.custom_optimizers:
        if custom_op.name == NPU_OPTIMIZER:
            values.update(describe_custom_op(custom_op))
    return values


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


def estimator_dump_config(action: ActionSpec = None, *, dump_data: Optional[str] = None, dump_layer=None):
    """An ``npu_bridge`` ``DumpConfig`` for ``action``: ``NPURunConfig(dump_config=estimator_dump_config('dump'))``.

    As in the original tool, the ``DumpConfig`` carries the dump switches only (a ``DumpConfig`` has no
    ``op_debug_level`` or ``debug_dir``). For ``fusion_off``, ``fusion_switch`` or ``prof`` use
    :func:`npu_run_config_options`, which fills the other ``NPURunConfig`` arguments too (the original
    ignored those actions here, silently; this is an error saying what to use instead).

    Raises
    ------
    CaptureError
        ``npu_bridge`` cannot be imported (no Ascend software here), or an action that a DumpConfig
        cannot carry.
    """
    plan = build_plan(action, dump_data=dump_data, dump_layer=dump_layer)
    extra = [name for name in _NOT_IN_DUMP_CONFIG if name in plan.actions]
    if extra:
        raise CaptureError(f"estimator_dump_config returns a DumpConfig, which cannot carry {', '.join(extra)}",
                           f"use NPURunConfig(**npu_tf_config.npu_run_config_options({plan.spelled!r}), ...)")
    dump_config = _dump_config(plan, "estimator_dump_config")
    prepare_workspace(plan)
    return dump_config


def npu_run_config_options(action: ActionSpec = None, *, dump_data: Optional[str] = None,
                           dump_layer=None) -> Dict[str, object]:
    """Keyword arguments for ``npu_bridge``'s ``NPURunConfig`` carrying ``action`` (needs ``npu_bridge``).

    ``debug_dir`` always; ``dump_config`` (a DumpConfig) and ``op_debug_level`` for dump/overflow,
    ``fusion_switch_file`` for the fusion actions, ``profiling_config`` (a ProfilingConfig) for prof.
    """
    plan = build_plan(action, dump_data=dump_data, dump_layer=dump_layer)
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
def npu_device_dump_config(npu_device, action: ActionSpec = None, *, dump_data: Optional[str] = None,
                           dump_layer=None):
    """Set ``action`` on TF2's ``npu_device.global_options()`` (before ``npu_device.open()``); returns ``npu_device``.

    Options the user set (an npu_device option that is no longer its default) count as their config: a
    ``fusion_switch_file`` there is honoured by ``fusion_switch``, and a value that changes is reported.
    ``dump`` turns a stale ``dump_config.enable_dump_debug`` off and ``overflow`` a stale
    ``dump_config.enable_dump``.

    Raises
    ------
    CaptureError
        ``npu_device`` is not the ``npu_device`` module, its options lack one of the settings (checked before
        any option changes), or it refuses a value.
    """
    if npu_device is None or not callable(getattr(npu_device, "global_options", None)):
        raise CaptureError(f"npu_device_dump_config expects the npu_device module (import npu_device), "
                           f"got {type(npu_device).__name__}")
    options = npu_device.global_options()
    current: Dict[str, object] = {}
    for key, path in TF2_OPTIONS.items():
        explicit, text = _explicit_option(options, path)
        if explicit:
            current[key] = text
    plan = build_plan(action, current=current, dump_data=dump_data, dump_layer=dump_layer)
    changes: List[Tuple[str, object]] = [(TF2_OPTIONS[param.name], param.value) for param in plan.params]
    changes += [(TF2_OPTIONS[name], False) for name in plan.cleared]
    for path, _ in changes:
        _option_parent(options, path)  # every option exists before anything is set
    prepare_workspace(plan)
    for path, value in changes:
        _set_option(options, path, value)
    return npu_device


def _option_parent(options, path: str):
    """The object holding option ``path`` (``a.b.c`` -> ``options.a.b``), checking that ``c`` exists."""
    *parents, leaf = path.split(".")
    target = options
    try:
        for name in parents:
            target = getattr(target, name)
        getattr(target, leaf)  # refuse to invent options the installed npu_device does not have
    except AttributeError:
        raise CaptureError(f"npu_device.global_options() has no '{path}' (npu_device too old or too new?)") from None
    return target


def _explicit_option(options, path: str) -> Tuple[bool, Optional[str]]:
    """``(set by the user, value as text)`` of an npu_device option; ``(False, None)`` if it does not exist.

    npu_device keeps each option in an ``OptionValue`` whose ``value`` is text (``"1"`` for True) and whose
    ``default`` is the initial value: set means ``value`` differs from the default. A plain attribute counts
    as set when it is not ``None``, ``""`` or ``False``.
    """
    *parents, leaf = path.split(".")
    target = options
    for name in parents + [leaf]:
        target = getattr(target, name, None)
        if target is None:
            return False, None
    if hasattr(target, "value") and hasattr(target, "default"):
        value, default = target.value, target.default
        if value is None or (default is not None and value == as_text(default)):
            return False, None
        return True, as_text(value)
    if target in ("", False):
        return False, None
    return True, as_text(target)


def _set_option(options, path: str, value) -> None:
    target = _option_parent(options, path)
    leaf = path.rsplit(".", 1)[-1]
    try:
        setattr(target, leaf, value)
    except (ValueError, TypeError) as error:
        raise CaptureError(f"npu_device refused {path}={value!r} ({' '.join(str(error).split())})") from None


# -- the original tool's environment-dependent names ----------------------------------------------------------
def env_dependent_value(name: str) -> str:
    """The value of an original-tool name of ``npu_tf_config`` that depends on the environment when read.

    * ``FUSION_SWITCH_FILE`` -- the switch file the NPU reads for ``fusion_switch`` unless the script's config
      names its own: ``WORKSPACE/fusion/fusion_switch.cfg``, created from the shipped template if missing (so
      it is there to edit). It is checked when a helper hands it to the NPU, not when the name is read.
    * ``DEFAULT_OP_DEBUG_DIR``, ``OP_DEBUG_DIR`` -- the ``debug_dir`` every helper sets: ``WORKSPACE/npu/debug_N``.

    Only the workspace and ``PRECISION_TOOL_NPU_RUN`` are read: a bad NPU-only setting (dump step, debug
    level) is reported by the helper that uses it.

    Raises
    ------
    AttributeError
        Any other name (so ``getattr(module, name, default)`` keeps working).
    """
    if name == "FUSION_SWITCH_FILE":
        return ensure_fusion_switch_file(workspace_fusion_switch_file(), check=False)
    if name in ("DEFAULT_OP_DEBUG_DIR", "OP_DEBUG_DIR"):
        return workspace_from_env().npu_run(npu_run_from_env())
    raise AttributeError(name)
