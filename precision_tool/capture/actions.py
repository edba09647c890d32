"""Actions (``'dump|fusion_off'``) and the NPU parameters each one sets: one table, plain Python.

:func:`build_plan` turns the actions into a :class:`CapturePlan` -- ``parameter_map`` entries (:class:`NpuParam`),
folders, GE graph variables and notices -- which every NPU-side helper applies, so they cannot drift. ``dump``
and ``overflow`` cannot be combined, nor ``fusion_off`` and ``fusion_switch``; an unknown action is an error.
The table: docs/capture-custom-op.md#parameters-per-action; the differences from the original tool:
docs/capture-custom-op.md#differences-from-the-original-precision_tool-on-purpose; the ``customize_dtypes`` row
and the reasons: docs/internals/capture.md#actions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple, Union

from precision_tool.capture.fusion_files import FUSION_OFF_FILE, workspace_fusion_switch_file
from precision_tool.capture.settings import (DEFAULT_DUMP_DATA, ENV_ACTION, ENV_NPU_RUN, CaptureSettings,
                                             action_from_env, check_npu_choice)
from precision_tool.errors import CaptureError

DUMP, OVERFLOW, FUSION_OFF, FUSION_SWITCH, PROF = "dump", "overflow", "fusion_off", "fusion_switch", "prof"
ACTIONS: Tuple[str, ...] = (DUMP, OVERFLOW, FUSION_OFF, FUSION_SWITCH, PROF)
_FUSION_ACTIONS = frozenset({FUSION_OFF, FUSION_SWITCH})
_CONFLICTS = (
    (frozenset({DUMP, OVERFLOW}), "the NPU cannot collect a data dump and overflow data in one run "
                                  "(and both use dump_path); run twice"),
    (frozenset({FUSION_OFF, FUSION_SWITCH}), "both set fusion_switch_file; to turn everything off but a few "
                                            "passes, edit the fusion_switch file and use fusion_switch alone"),
)
# Switches the NPU refuses to see together: an action removes the other side's switch if the user set it.
CLEARED_BY = {DUMP: ("enable_dump_debug",), OVERFLOW: ("enable_dump",)}

# What GE needs to write the graph that goes with a run (ascend-formats.md §6).
DUMP_GE_GRAPH, DUMP_GRAPH_LEVEL, DUMP_GRAPH_PATH = "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH"
GRAPH_ENV_VALUES = ((DUMP_GE_GRAPH, "2"), (DUMP_GRAPH_LEVEL, "3"))

PROFILING_SWITCHES = (("training_trace", "on"), ("task_trace", "on"), ("aicpu", "on"), ("fp_point", ""),
                      ("bp_point", ""), ("aic_metrics", "PipeUtilization"))

ActionSpec = Union[None, str, Iterable[str]]
Value = Union[bool, str, int]


@dataclass(frozen=True)
class NpuParam:
    """One ``NpuOptimizer`` ``parameter_map`` entry: ``kind`` is the AttrValue field (b, s or i)."""

    name: str
    kind: str
    value: Value


@dataclass(frozen=True)
class CapturePlan:
    """What an NPU-side helper sets for a set of actions.

    Attributes
    ----------
    actions : the parsed actions.
    params : ``parameter_map`` entries, in table order (``debug_dir`` only, for no action).
    cleared : parameter names to remove from an existing ``parameter_map``.
    folders : folders that must exist before the run (the NPU does not create ``dump_path``).
    graph_env : environment variables for the GE graph dump (empty without an action).
    fusion_switch_file : the switch file the NPU will read for ``fusion_switch``, checked before the run.
    fusion_switch_from_template : create ``fusion_switch_file`` from the shipped template if it is missing
        (the workspace file; never the user's own).
    npu_run : N of ``npu/debug_N``.
    notices : one-line messages for the user (what differs from their config or from the original tool).
    """

    actions: FrozenSet[str]
    params: Tuple[NpuParam, ...]
    cleared: Tuple[str, ...]
    folders: Tuple[str, ...]
    graph_env: Tuple[Tuple[str, str], ...]
    fusion_switch_file: Optional[str]
    fusion_switch_from_template: bool
    npu_run: int
    notices: Tuple[str, ...] = ()

    def values(self) -> Dict[str, Value]:
        """``{parameter name: value}``."""
        return {param.name: param.value for param in self.params}

    @property
    def spelled(self) -> str:
        """The actions as ``'a|b'``, in table order."""
        return spell(self.actions)


def parse_actions(action: ActionSpec = None, environ=None) -> FrozenSet[str]:
    """``'dump|fusion_off'`` (or a list of names) -> ``{'dump', 'fusion_off'}``, checked.

    ``None`` reads the environment (:func:`~precision_tool.capture.settings.action_from_env`).
    Blank parts are ignored, so ``""`` means no action.

    Raises
    ------
    CaptureError
        An unknown action (the message lists the valid ones) or two actions that cannot be combined.
    """
    if action is None:
        action = action_from_env(environ)
    if isinstance(action, str):
        parts = action.split("|")
    else:
        try:
            parts = list(action)
        except TypeError:
            raise CaptureError(f"action must be a string like 'dump|fusion_off', got {type(action).__name__}") from None
    names = []
    for part in parts:
        if not isinstance(part, str):
            raise CaptureError(f"action must be a string like 'dump|fusion_off', got {part!r}")
        name = part.strip()
        if not name:
            continue
        if name not in ACTIONS:
            raise CaptureError(f"unknown action {name!r} in {_spelled(action)!r}",
                               f"valid actions: {', '.join(ACTIONS)}; combine them with '|', e.g. 'dump|fusion_off'")
        names.append(name)
    chosen = frozenset(names)
    for pair, reason in _CONFLICTS:
        if pair <= chosen:
            first, second = sorted(pair, key=ACTIONS.index)
            raise CaptureError(f"actions {first!r} and {second!r} cannot be combined: {reason}")
    return chosen


def _spelled(action) -> str:
    return action if isinstance(action, str) else "|".join(map(str, action))


def profiling_options(output_dir: str) -> str:
    """The ``profiling_options`` JSON: output folder plus training/task trace and AI CPU data."""
    return json.dumps({"output": output_dir, **dict(PROFILING_SWITCHES)}, separators=(",", ":"))


def as_text(value) -> str:
    """A parameter value as npu_device and npu_bridge spell it: ``True`` -> ``"1"``, 4 -> ``"4"``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def build_plan(action: ActionSpec = None, settings: Optional[CaptureSettings] = None, environ=None,
               current: Optional[Mapping[str, object]] = None, dump_data: Optional[str] = None,
               dump_layer=None) -> CapturePlan:
    """The :class:`CapturePlan` for ``action`` (the table the module docstring points to); touches nothing on disk.

    Parameters
    ----------
    action : ``'dump'``, ``'dump|fusion_off'``, a list of names, or ``None`` (read the environment).
    settings : defaults to :meth:`CaptureSettings.from_env(environ) <CaptureSettings.from_env>`.
    current : the values the user's NPU config already has (``{key: value}``, only keys set explicitly).
        ``fusion_switch`` keeps a ``fusion_switch_file`` found there, and every value the plan changes or
        removes becomes a notice.
    dump_data, dump_layer : the ``dump`` action's ``dump_data`` (``"tensor"`` or ``"stats"``) and ``dump_layer``
        (names separated by spaces, or a list), over the settings' (``PRECISION_TOOL_DUMP_DATA`` /
        ``PRECISION_TOOL_DUMP_LAYER``); set on the NPU when given here or not the default (so an adapter older
        than them, before r1.11, is not handed a key it does not know unless the script names it): a given
        ``'tensor'`` or ``''`` replaces a ``'stats'`` or a ``dump_layer`` the config had.

    Raises
    ------
    CaptureError
        Unknown or conflicting actions, a setting npu_bridge would refuse, or ``dump_data``/``dump_layer`` given
        without the ``dump`` action.
    """
    settings = settings or CaptureSettings.from_env(environ)
    actions = parse_actions(action, environ)
    asked = [(name, value) for name, value in (("dump_data", dump_data), ("dump_layer", dump_layer))
             if value is not None]
    if asked and DUMP not in actions:
        raise CaptureError(f"{asked[0][0]}={asked[0][1]!r} applies to a data dump, and the action is "
                           f"{spell(actions) or 'none'!r}", "add 'dump' to the action: action='dump'")
    if asked:  # checked as npu_bridge checks them
        settings = replace(settings, dump_data=settings.dump_data if dump_data is None else dump_data,
                           dump_layer=settings.dump_layer if dump_layer is None else dump_layer)
    current = dict(current or {})
    workspace = settings.workspace
    run = settings.run_index
    debug_dir = workspace.npu_run(run)
    params: List[NpuParam] = [NpuParam("debug_dir", "s", debug_dir)]
    folders: List[str] = [debug_dir]
    notices: List[str] = []
    switch_file, from_template = None, False
    if DUMP in actions:
        dump_dir = workspace.npu_dump(run)
        params += [NpuParam("enable_dump", "b", True), NpuParam("dump_path", "s", dump_dir),
                   NpuParam("dump_step", "s", settings.dump_step), NpuParam("dump_mode", "s", "all"),
                   NpuParam("op_debug_level", "i", settings.op_debug_level)]
        if settings.dump_data != DEFAULT_DUMP_DATA or dump_data is not None:  # given: set, the default too
            params.append(NpuParam("dump_data", "s", settings.dump_data))
        elif as_text(current.get("dump_data") or DEFAULT_DUMP_DATA) != DEFAULT_DUMP_DATA:
            notices.append(f"your dump_data {as_text(current['dump_data'])!r} is kept: statistics, not tensors, "
                           "are dumped")
        if settings.dump_layer or dump_layer is not None:
            params.append(NpuParam("dump_layer", "s", settings.dump_layer))
        elif current.get("dump_layer"):
            notices.append(f"your dump_layer {as_text(current['dump_layer'])!r} is kept: only those ops are "
                           "dumped")
        folders.append(dump_dir)
        if actions & _FUSION_ACTIONS and settings.npu_run is None:
            notices.append(f"this '{spell(actions)}' run dumps into {dump_dir}, as the original tool did; "
                           f"to compare it with a run without this fusion setting, capture one of the two with "
                           f"{ENV_NPU_RUN}=1 (npu/debug_1)")
    if OVERFLOW in actions:
        overflow_dir = workspace.overflow_dump
        params += [NpuParam("enable_dump_debug", "b", True), NpuParam("dump_path", "s", overflow_dir),
                   NpuParam("dump_debug_mode", "s", "all"), NpuParam("op_debug_level", "i", settings.op_debug_level)]
        folders.append(overflow_dir)
    if FUSION_OFF in actions:
        params.append(NpuParam("fusion_switch_file", "s", FUSION_OFF_FILE))
    if FUSION_SWITCH in actions:
        default_file = workspace_fusion_switch_file(settings)
        users = as_text(current.get("fusion_switch_file") or "")
        switch_file = users if users and users != FUSION_OFF_FILE else default_file
        from_template = switch_file == default_file
        if not from_template:
            notices.append(f"fusion_switch: the NPU reads your own fusion_switch_file {switch_file} (kept as it is; "
                           "the original tool replaced it with its own)")
        params.append(NpuParam("fusion_switch_file", "s", switch_file))
    if PROF in actions:
        prof_dir = os.path.join(settings.data_dir, "profiling")
        params += [NpuParam("profiling_mode", "b", True),
                   NpuParam("profiling_options", "s", profiling_options(prof_dir))]
        folders.append(prof_dir)
    if actions and os.path.isfile(workspace.customize_dtypes):
        params.append(NpuParam("customize_dtypes", "s", workspace.customize_dtypes))
        notices.append(f"customize_dtypes: the NPU keeps the ops {workspace.customize_dtypes} names in the dtypes "
                       "it gives (it needs a precision_mode other than must_keep_origin_dtype)")
    graph_env: Tuple[Tuple[str, str], ...] = ()
    if actions:
        graph_dir = workspace.npu_graph(run)
        graph_env = (*GRAPH_ENV_VALUES, (DUMP_GRAPH_PATH, graph_dir))
        folders.append(graph_dir)
    else:
        given = f"action=None and {ENV_ACTION} unset" if action is None else f"action={action!r}"
        notices.append(f"no capture action ({given}): only debug_dir is set, nothing is dumped, and the GE graph "
                       "variables are left alone (the original tool set them on every call)")
    for param in params:
        check_npu_choice(param.name, param.value)
    cleared = tuple(name for name in ACTIONS if name in actions for name in CLEARED_BY.get(name, ()))
    notices += _changes(current, params, cleared, actions)
    return CapturePlan(actions, tuple(params), cleared, tuple(dict.fromkeys(folders)), graph_env,
                       switch_file, from_template, run, tuple(notices))


def spell(actions: Iterable[str]) -> str:
    """Action names as ``'a|b'``, in table order."""
    chosen = set(actions)
    return "|".join(name for name in ACTIONS if name in chosen)


def _changes(current: Mapping[str, object], params: List[NpuParam], cleared: Tuple[str, ...],
             actions: FrozenSet[str]) -> List[str]:
    """A notice for each value of the user's config that the plan replaces or removes."""
    why = f"'{spell(actions)}'" if actions else "no action"
    lines = []
    for param in params:
        if param.name in current and as_text(current[param.name]) != as_text(param.value):
            lines.append(f"your {param.name} {as_text(current[param.name])!r} is replaced by "
                         f"{as_text(param.value)!r} for this run ({why})")
    for name in cleared:
        if name in current and as_text(current[name]) != "0":
            lines.append(f"your {name} is removed for this run: it cannot be on with {why}")
    return lines
