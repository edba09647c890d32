"""Actions (``'dump|fusion_off'``) and the NPU parameters each one sets: one table, plain Python.

Every NPU-side helper -- the session ``ConfigProto``, ``custom_op``, ``DumpConfig``, TF2's
``npu_device.global_options()`` -- applies the same :class:`CapturePlan`, so they cannot drift.

============== ======================= ====== =============================================
action         ``parameter_map`` key   kind   value
============== ======================= ====== =============================================
dump           enable_dump             b      True
               dump_path               s      ``WORKSPACE/npu/debug_N/dump``
               dump_step               s      settings (``"0"``)
               dump_mode               s      ``"all"`` (inputs and outputs)
overflow       enable_dump_debug       b      True
               dump_path               s      ``WORKSPACE/overflow/dump``
               dump_debug_mode         s      ``"all"`` (AI Core and atomic overflow)
               op_debug_level          i      settings (4)
               debug_dir               s      ``WORKSPACE/overflow`` (``kernel_meta`` goes there)
fusion_off     fusion_switch_file      s      shipped ``fusion_off.cfg`` (ALL off)
fusion_switch  fusion_switch_file      s      ``WORKSPACE/fusion/fusion_switch.cfg``
prof           profiling_mode          b      True
               profiling_options       s      JSON, ``output`` = ``WORKSPACE/profiling``
============== ======================= ====== =============================================

Rules: ``dump`` and ``overflow`` cannot be combined (the NPU cannot collect a data dump and
overflow data at once; they also share ``dump_path``); nor can ``fusion_off`` and ``fusion_switch``
(one ``fusion_switch_file``). ``dump`` and ``overflow`` also ask GE for the graph that goes with the
dump: ``DUMP_GE_GRAPH=2`` (no weights), ``DUMP_GRAPH_LEVEL=3`` (Build stage only),
``DUMP_GRAPH_PATH=WORKSPACE/npu/debug_N/graph``. N is 0, or 1 when a fusion action is set, so a
fusion-off run lands beside the normal one (``npu/debug_0`` vs ``npu/debug_1``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from precision_tool.capture.fusion_files import FUSION_OFF_FILE, workspace_fusion_switch_file
from precision_tool.capture.settings import CaptureSettings, action_from_env
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

# What GE needs to write the graph that goes with a dump (ascend-formats.md §6).
DUMP_GE_GRAPH, DUMP_GRAPH_LEVEL, DUMP_GRAPH_PATH = "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH"
GRAPH_ENV_VALUES = ((DUMP_GE_GRAPH, "2"), (DUMP_GRAPH_LEVEL, "3"))

PROFILING_SWITCHES = (("training_trace", "on"), ("task_trace", "on"), ("aicpu", "on"), ("fp_point", ""),
                      ("bp_point", ""), ("aic_metrics", "PipeUtilization"))

ActionSpec = Union[None, str, Iterable[str]]


@dataclass(frozen=True)
class NpuParam:
    """One ``NpuOptimizer`` ``parameter_map`` entry: ``kind`` is the AttrValue field (b, s or i)."""

    name: str
    kind: str
    value: Union[bool, str, int]


@dataclass(frozen=True)
class CapturePlan:
    """What an NPU-side helper sets for a set of actions.

    Attributes
    ----------
    actions : the parsed actions.
    params : ``parameter_map`` entries, in table order (empty for no action).
    cleared : parameter names to remove from an existing ``parameter_map``.
    folders : folders that must exist before the run (the NPU does not create ``dump_path``).
    graph_env : environment variables for the GE graph dump (empty without dump/overflow).
    fusion_switch_copy : the workspace switch file to create from the template (``fusion_switch``).
    npu_run : N of ``npu/debug_N``.
    """

    actions: FrozenSet[str]
    params: Tuple[NpuParam, ...]
    cleared: Tuple[str, ...]
    folders: Tuple[str, ...]
    graph_env: Tuple[Tuple[str, str], ...]
    fusion_switch_copy: Optional[str]
    npu_run: int

    def values(self) -> Dict[str, Union[bool, str, int]]:
        """``{parameter name: value}``."""
        return {param.name: param.value for param in self.params}


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


def npu_run_index(actions: FrozenSet[str], settings: CaptureSettings) -> int:
    """N of ``npu/debug_N``: the setting, else 1 with a fusion action (a second run), else 0."""
    if settings.npu_run is not None:
        return settings.npu_run
    return 1 if actions & _FUSION_ACTIONS else 0


def profiling_options(output_dir: str) -> str:
    """The ``profiling_options`` JSON: output folder plus training/task trace and AI CPU data."""
    return json.dumps({"output": output_dir, **dict(PROFILING_SWITCHES)}, separators=(",", ":"))


def build_plan(action: ActionSpec = None, settings: Optional[CaptureSettings] = None, environ=None) -> CapturePlan:
    """The :class:`CapturePlan` for ``action`` (see the module table). Touches nothing on disk."""
    settings = settings or CaptureSettings.from_env(environ)
    actions = parse_actions(action, environ)
    workspace = settings.workspace
    run = npu_run_index(actions, settings)
    params: List[NpuParam] = []
    folders: List[str] = []
    cleared: List[str] = []
    fusion_copy = None
    if DUMP in actions:
        dump_dir = workspace.npu_dump(run)
        params += [NpuParam("enable_dump", "b", True), NpuParam("dump_path", "s", dump_dir),
                   NpuParam("dump_step", "s", settings.dump_step), NpuParam("dump_mode", "s", "all")]
        folders.append(dump_dir)
    if OVERFLOW in actions:
        overflow_dir = workspace.overflow_dump
        debug_dir = os.path.dirname(overflow_dir)
        params += [NpuParam("enable_dump_debug", "b", True), NpuParam("dump_path", "s", overflow_dir),
                   NpuParam("dump_debug_mode", "s", "all"), NpuParam("op_debug_level", "i", settings.op_debug_level),
                   NpuParam("debug_dir", "s", debug_dir)]
        folders += [overflow_dir, debug_dir]
    if FUSION_OFF in actions:
        params.append(NpuParam("fusion_switch_file", "s", FUSION_OFF_FILE))
    if FUSION_SWITCH in actions:
        fusion_copy = workspace_fusion_switch_file(settings)
        params.append(NpuParam("fusion_switch_file", "s", fusion_copy))
        folders.append(os.path.dirname(fusion_copy))
    if PROF in actions:
        prof_dir = os.path.join(settings.data_dir, "profiling")
        params += [NpuParam("profiling_mode", "b", True),
                   NpuParam("profiling_options", "s", profiling_options(prof_dir))]
        folders.append(prof_dir)
    graph_env: Tuple[Tuple[str, str], ...] = ()
    if actions & {DUMP, OVERFLOW}:
        graph_dir = workspace.npu_graph(run)
        graph_env = (*GRAPH_ENV_VALUES, (DUMP_GRAPH_PATH, graph_dir))
        folders.append(graph_dir)
    for name in ACTIONS:
        if name in actions:
            cleared += CLEARED_BY.get(name, ())
    return CapturePlan(actions, tuple(params), tuple(cleared), tuple(dict.fromkeys(folders)), graph_env,
                       fusion_copy, run)
