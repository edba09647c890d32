"""``emulate()``: a complete NPU-side workspace from a TensorFlow model, on the CPU.

Steps: seed everything, build the model and the batch (scaled by ``scale``), freeze the graph, run the float32
reference under tfdbg (``tf/dump``), then for each NPU run plan the Build graph, compute NPU numerics and write
dumps, graph and (first run) ``fusion/fusion_result.json`` and the overflow run, and finally ``manifest.json``.
Everything is written into a hidden staging folder next to the workspace (``.NAME.emulating-XXXX``), renamed into
place once ``manifest.json`` is written: a failed (or interrupted) emulation removes it, so the workspace folder is
either a complete emulation or untouched. See docs/internals/emulator.md#run.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from precision_tool.capture.determinism import DEFAULT_SEED, seed_everything
from precision_tool.capture.emulate import artifacts
from precision_tool.capture.emulate.emulate_errors import EmulationError, ModelScriptError
from precision_tool.capture.emulate.faults import Fault, as_fault, check_fault_site
from precision_tool.capture.emulate.fusion_groups import Fusion
from precision_tool.capture.emulate.graph_info import TfGraph, compute_ops, constant_ops
from precision_tool.capture.emulate.hardware import ASCEND910, Hardware
from precision_tool.capture.emulate.manifest import build_manifest, write_manifest
from precision_tool.capture.emulate.model_script import load_model_script
from precision_tool.capture.emulate.npu_values import NpuValues, find_overflows
from precision_tool.capture.emulate.numerics import run_numerics
from precision_tool.capture.emulate.npu_plan import NpuPlan, plan_npu_graph
from precision_tool.capture.emulate.status_line import Progress, no_progress
from precision_tool.capture.emulate.reference_run import capture_reference, check_reference_names
from precision_tool.capture.emulate.tf_freeze import GraphFunction, describe_graph, freeze_model
from precision_tool.capture.emulate.train_step import TrainStep
from precision_tool.config import Workspace
from precision_tool.errors import WorkspaceError
from precision_tool.formats.fusion_result import FusionSwitches

FUSION_CHOICES = ("on", "off", "both", "switch")
DUMP_DATA = ("tensor", "stats")  # the adapter's dump_data values
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class EmulationOptions:
    """How to emulate.

    Attributes
    ----------
    scale : every float input is multiplied by it (both sides): a way to provoke fp16 overflow.
    fusion : ``"on"`` (``npu/debug_0`` fused), ``"off"`` (``npu/debug_0`` unfused), ``"both"``
        (``npu/debug_0`` fused and a fusion-off second run in ``npu/debug_1``) or ``"switch"`` (``npu/debug_0``
        fused by the passes ``switches`` leave on: the workspace's fusion switch file, as the NPU reads it).
    switches : the pass switches of ``"switch"``.
    pass_faults : fusion pass -> the fault planted on the output of every op that pass produced (none when the
        pass is off: a fault of the pass, not of a kernel).
    keep_fp32 : NPU op names computed in float32 (the workspace's ``customize_dtypes`` file).
    numerics : the modelled NPU, ``ascend910`` (default), ``ascend910b`` or ``ideal`` (:mod:`~.hardware`).
    precision_mode : the TF adapter's ``precision_mode``; ``None``: the target's default for training.
    exact : TF ops computed as the reference does, their whole NPU op when fused
        (docs/emulated-numerics.md#--exact-op-the-counterfactual).
    perturb : TF op name -> the fault planted on its output: a :class:`~.faults.Fault`, a spec string
        (``"bias:0.05"``) or a number (relative noise, the original form). Stored as ``{op: Fault}``.
    seed : seeds Python, numpy, TensorFlow/Keras, the perturbation noise and the faulty positions; default: the
        capture helpers' (:data:`~precision_tool.capture.determinism.DEFAULT_SEED`, 2022).
    keep_tfdbg : keep the raw tfdbg dump in ``tf/tf_debug`` (not bit-reproducible: wall-clock times).
    step : for a training step (``train_graph()``), the step dumped: steps 0 to ``step - 1`` run first, in
        float32.
    dump_data : ``"tensor"`` (dump files) or ``"stats"`` (GE's per-op statistics CSVs instead), as the adapter's
        ``dump_data``.
    dump_layer : NPU op names (or TF op names an NPU op implements) whose tensors alone are dumped, as the adapter's
        ``dump_layer``; empty: every executed op.
    """

    scale: float = 1.0
    fusion: str = "on"
    perturb: Mapping[str, Union[float, str, Fault]] = field(default_factory=dict)
    seed: int = DEFAULT_SEED
    keep_tfdbg: bool = False
    step: int = 0
    switches: Optional[FusionSwitches] = None
    pass_faults: Mapping[str, Fault] = field(default_factory=dict)
    keep_fp32: FrozenSet[str] = frozenset()
    numerics: str = ASCEND910
    precision_mode: Optional[str] = None
    exact: FrozenSet[str] = frozenset()
    dump_data: str = "tensor"
    dump_layer: FrozenSet[str] = frozenset()

    def __post_init__(self):
        object.__setattr__(self, "exact", frozenset(self.exact))
        object.__setattr__(self, "dump_layer", frozenset(self.dump_layer))
        if self.dump_data not in DUMP_DATA:
            raise EmulationError(f"--dump-data must be one of {', '.join(DUMP_DATA)}, not {self.dump_data!r}")
        Hardware.of(self.numerics, self.precision_mode)  # a one-line error for a target or mode not known
        if self.fusion not in FUSION_CHOICES:
            raise EmulationError(f"--fusion must be one of {', '.join(FUSION_CHOICES)}, not {self.fusion!r}")
        object.__setattr__(self, "perturb", {op: as_fault(op, value) for op, value in self.perturb.items()})
        if not (np.isfinite(self.scale) and self.scale != 0):
            raise EmulationError(f"--scale {self.scale}: must be a finite number other than 0")

    @property
    def hardware(self) -> Hardware:
        """The modelled NPU (:class:`~.hardware.Hardware`)."""
        return Hardware.of(self.numerics, self.precision_mode)

    @property
    def faults(self) -> Dict[str, Fault]:
        """``perturb`` as ``{TF op: Fault}`` (what ``__post_init__`` stored)."""
        return {op: as_fault(op, value) for op, value in self.perturb.items()}

    @property
    def runs(self) -> List[Tuple[str, Fusion]]:
        """``[(run folder, fusion on? or the pass switches)]``."""
        if self.fusion == "both":
            return [("debug_0", True), ("debug_1", False)]
        if self.fusion == "switch":
            return [("debug_0", self.switches if self.switches is not None else FusionSwitches())]
        return [("debug_0", self.fusion == "on")]

    def faults_of(self, plan: NpuPlan) -> Dict[str, Fault]:
        """The TF op faults of one run: ``perturb``, and each pass fault on the last TF op of every group its pass
        made in this plan (the fused op's output)."""
        planted = dict(self.faults)
        for group in plan.groups:
            passes = set(group.graph_passes) | ({group.ub_pass} if group.ub_pass else set())
            for pass_name, fault in self.pass_faults.items():
                if pass_name in passes:
                    planted.setdefault(group.last, fault)
        return planted


@dataclass
class EmulationResult:
    workspace: str
    manifest: dict
    plans: Dict[str, NpuPlan]

    @property
    def manifest_path(self) -> str:
        return os.path.join(self.workspace, MANIFEST_NAME)


def run_config_only(path: str) -> List[str]:
    """The run configuration files (:attr:`~precision_tool.config.Workspace.run_config_files`) in ``path`` when
    they are all it holds -- a workspace set up for its run (``bisect`` writes one per trial) -- else ``[]``."""
    wanted = {os.path.abspath(f) for f in Workspace(path).run_config_files}
    found = []
    for folder, _subfolders, files in os.walk(path):
        for name in files:
            full = os.path.abspath(os.path.join(folder, name))
            if full not in wanted:
                return []
            found.append(full)
    return found


def check_workspace(path: str, force: bool = False) -> str:
    """The workspace's absolute path, if it may be written: new, empty, holding only its run configuration
    (:func:`run_config_only`: the files are kept), or (with ``force``) an earlier emulation -- a folder holding
    ``manifest.json`` -- never anything else a user has."""
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise WorkspaceError(f"{path}: exists and is not a folder")
    if os.path.isdir(path) and os.listdir(path) and not run_config_only(path):
        if not os.path.isfile(os.path.join(path, MANIFEST_NAME)):  # never replaced, --force or not
            raise WorkspaceError(f"{path}: folder exists, is not empty and holds no earlier emulation (no "
                                 f"{MANIFEST_NAME})", "choose a new folder")
        if not force:
            raise WorkspaceError(f"{path}: holds an earlier emulation", "pass --force to replace it, or choose a "
                                                                       "new folder")
    return path


def _first_missing(path: str) -> Optional[str]:
    """The outermost folder of ``path`` (itself included) that does not exist yet."""
    missing = None
    while not os.path.exists(path):
        missing, parent = path, os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


class StagedWorkspace:
    """A hidden folder next to the workspace, where the emulation writes; :meth:`commit` renames it into
    place (replacing an earlier emulation, checked again by :func:`check_workspace`), :meth:`discard`
    removes it and any parent folder it had to create."""

    def __init__(self, target: str, force: bool):
        self.target, self.force = target, force
        parent = os.path.dirname(target)
        self.created = _first_missing(parent)
        os.makedirs(parent, exist_ok=True)
        self.path = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.emulating-", dir=parent)

    def commit(self) -> str:
        target = check_workspace(self.target, self.force)
        old = None
        if os.path.isdir(target):
            if os.listdir(target):  # an earlier emulation: moved aside first, removed once the new one is in
                old = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.replaced-", dir=os.path.dirname(target))
                os.rmdir(old)
                os.rename(target, old)
            else:
                os.rmdir(target)
        try:
            os.rename(self.path, target)
        except OSError:
            if old is not None:  # the earlier emulation goes back where it was
                os.rename(old, target)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.created is None:
            return
        folder = os.path.dirname(self.path)
        while True:  # the parents it created, innermost first, as long as they are empty
            try:
                os.rmdir(folder)
            except OSError:
                return
            if folder == self.created:
                return
            folder = os.path.dirname(folder)


def dumped_ops(plan: NpuPlan, dump_layer: FrozenSet[str]) -> List[str]:
    """The NPU ops of ``plan`` that ``dump_layer`` names: by NPU (GE node) name, or by a TF op name the NPU op
    implements (GE also matches original op names: ``../shared/docs/ascend-dump-trees.md`` §2). An
    :class:`EmulationError` for a name that names no executed op."""
    chosen = [op.name for op in plan.tasks if op.name in dump_layer or dump_layer & set(op.tf_ops)]
    known = {op.name for op in plan.tasks} | {tf_op for op in plan.tasks for tf_op in op.tf_ops}
    missing = sorted(dump_layer - known)
    if missing:
        close = sorted(name for name in known if missing[0].split("/")[-1] in name)[:3]
        raise EmulationError(f"--dump-layer {missing[0]}: no executed op of the NPU graph is called so",
                             f"ops look like: {', '.join(close or sorted(known)[:3])}")
    return chosen


def _check_pass_faults(pass_faults: Mapping[str, Fault]) -> None:
    """Every ``--perturb-pass`` names a pass the emulator runs (:data:`~.op_tables.EMULATED_PASSES`)."""
    from precision_tool.capture.emulate.op_tables import EMULATED_PASSES

    for name, fault in pass_faults.items():
        if name not in EMULATED_PASSES:
            raise EmulationError(f"--perturb-pass {name}: not a fusion pass the emulator runs",
                                 f"one of {', '.join(EMULATED_PASSES)}")
        if fault.kind not in ("noise", "bias", "saturate", "positions"):
            raise EmulationError(f"--perturb-pass {name}={fault.spec}: a pass fault is noise, bias, saturate or "
                                 "positions (fp16acc is a kernel's, not a pass's)")


def _check_exact(graph: TfGraph, exact: FrozenSet[str]) -> None:
    """One line for an ``--exact`` op that is not a compute op of the model."""
    compute = {op.name for op in compute_ops(graph, constant_ops(graph))}
    missing = sorted(name for name in exact if name not in compute)
    if missing:
        raise EmulationError(f"--exact {missing[0]}: not a compute op of the model (ops are named as in the "
                             "reference dump, e.g. by the manifest's fusion_groups)")


def _check_perturb(graph: TfGraph, perturb: Mapping[str, Fault]) -> None:
    executed = {op.name for op in compute_ops(graph, constant_ops(graph))}
    for name, fault in perturb.items():
        if name in executed:
            op = graph.op(name)
            if not op.outputs or not op.outputs[0].is_float:
                raise EmulationError(f"--perturb {name}: its output is not a float tensor", "choose a float op")
            weight = graph.tensor(op.inputs[1]).shape if len(op.inputs) > 1 else None
            check_fault_site(fault, name, op.type, op.outputs[0].shape, weight, op.attrs)
            continue
        if name in graph:
            raise EmulationError(f"--perturb {name}: this op is {graph.op(name).type}, which the NPU does not "
                                 "execute (constant, input or pass-through)", "choose a compute op")
        close = sorted(op for op in executed if name.split("/")[-1] in op)[:3]
        raise EmulationError(f"--perturb {name}: no such op in the model",
                             f"ops look like: {', '.join(close or sorted(executed)[:3])}")


def _scaled(batch: Sequence[np.ndarray], scale: float) -> Tuple[np.ndarray, ...]:
    if scale == 1:
        return tuple(batch)
    return tuple((a * np.asarray(scale, dtype=a.dtype)).astype(a.dtype) if a.dtype.kind == "f" else a for a in batch)


def _write_run(workspace: Workspace, plan: NpuPlan, values: NpuValues, run_name: str, model_name: str,
               step: int, options: EmulationOptions) -> dict:
    index, base = int(run_name.split("_")[1]), artifacts.RUN_BASE_US[run_name]
    only = dumped_ops(plan, options.dump_layer) if options.dump_layer else None
    write = artifacts.write_npu_stats if options.dump_data == "stats" else artifacts.write_npu_dumps
    dumps = write(plan, values, workspace.npu_dump(index), base, model_name, only=only, step=step)
    graph_file = artifacts.write_build_graph(plan, workspace.npu_graph(index), model_name)
    return {"name": run_name, "fusion": plan.fusion, "plan": plan, "dumps": dumps, "graph": graph_file,
            "dump_dir": artifacts.dump_folder(workspace.npu_dump(index), base, model_name, step),
            "faults": values.numerics.faults}


def _write_overflow_run(workspace: Workspace, plan: NpuPlan, values: NpuValues, model_name: str, step: int) -> dict:
    """The ``action='overflow'`` run (same model and inputs as ``npu/debug_0``, its own time)."""
    base = artifacts.RUN_BASE_US["overflow"]
    events = find_overflows(plan, values)
    files = artifacts.write_overflow_run(plan, values, events, workspace.overflow_dump, base, model_name, step)
    return {"events": events, "files": files,
            "dump_dir": artifacts.dump_folder(workspace.overflow_dump, base, model_name, step) if events else None}


def emulate_model(model, batch: Sequence[np.ndarray], workspace_dir: str,
                  options: EmulationOptions = EmulationOptions(), script: str = "<model>",
                  force: bool = False, progress: Progress = no_progress) -> EmulationResult:
    """Emulate an already built model on ``batch`` into ``workspace_dir``.

    Parameters
    ----------
    model : a Keras model, a function of TF ops, or a :class:`~.tf_freeze.GraphFunction` of TF1 graph code
        (see :mod:`~.model_script`); seed before building it.
    batch : the input arrays (before ``options.scale``).
    workspace_dir : folder to write; must be new or empty (or, with ``force``, an earlier emulation).
    options : :class:`EmulationOptions`.
    script : how messages and the manifest name the model.
    progress : called with the name of each step as it starts (``precision_tool emulate`` shows it on a
        terminal, :mod:`~.status_line`).

    Returns
    -------
    EmulationResult
        the workspace path, the manifest (also in ``manifest.json``) and the plan of each NPU run.

    Raises
    ------
    ModelScriptError, EmulationError, WorkspaceError
        one line each; nothing is written before the model traced and the options were checked, and a
        failure leaves nothing (see the module docstring).
    """
    if not (callable(model) or isinstance(model, (GraphFunction, TrainStep))):
        raise ModelScriptError(f"{script}: model() returned {type(model).__name__}; expected a Keras model "
                               "or a function of tf.Tensors")
    target = check_workspace(workspace_dir, force)
    batch = _scaled(batch, options.scale)
    progress("tracing and freezing the model")
    frozen = freeze_model(model, batch, script, step=options.step, seed=options.seed)
    progress("checking the graph")
    graph = describe_graph(frozen, script)
    _check_perturb(graph, options.faults)
    _check_pass_faults(options.pass_faults)
    progress("planning the NPU graph")
    _check_exact(graph, options.exact)
    plans = {run_name: plan_npu_graph(graph, fusion, options.keep_fp32, options.hardware, options.exact)
             for run_name, fusion in options.runs}
    for plan in plans.values():
        dumped_ops(plan, options.dump_layer)  # a one-line error for a name no NPU op answers to
    staging = StagedWorkspace(target, force)
    try:
        for config in [f for f in Workspace(target).run_config_files if os.path.isfile(f)]:  # its settings stay
            copy = os.path.join(staging.path, os.path.relpath(config, target))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copyfile(config, copy)
        manifest = _write_workspace(Workspace(staging.path), frozen, graph, plans, batch, options, script,
                                    progress)
        workspace = staging.commit()
    except BaseException:  # interrupted too: nothing half-written stays
        staging.discard()
        raise
    return EmulationResult(workspace, manifest, plans)


def _write_workspace(workspace: Workspace, frozen, graph: TfGraph, plans: Dict[str, NpuPlan],
                     batch: Sequence[np.ndarray], options: EmulationOptions, script: str,
                     progress: Progress) -> dict:
    """Write every file of the workspace into ``workspace`` (the staging folder); returns the manifest."""
    progress("float32 reference (tfdbg)")
    reference = capture_reference(frozen, batch, workspace, [op.name for op in graph.ops], options.keep_tfdbg)
    check_reference_names(reference.dump_dir, [m for g in plans["debug_0"].groups for m in g.members])
    model_name = artifacts.model_name_for()
    runs, overflow = [], None
    for run_name, plan in plans.items():
        progress(f"npu/{run_name}: NPU numerics and dumps" + (" and the overflow run" if run_name == "debug_0" else ""))
        values = NpuValues(plan, run_numerics(frozen, plan, batch, options.faults_of(plan), options.seed))
        step = frozen.training_step or 0
        runs.append(_write_run(workspace, plan, values, run_name, model_name, step, options))
        if run_name == "debug_0":
            if plan.fusion:
                artifacts.write_fusion_result_file(plan, workspace.fusion_result)
            overflow = _write_overflow_run(workspace, plan, values, model_name, step)
    progress("manifest")
    manifest = build_manifest(workspace.root, script, model_name, options, batch, frozen, reference, runs, overflow)
    write_manifest(manifest, os.path.join(workspace.root, MANIFEST_NAME))
    return manifest


def emulate(model_script: str, workspace_dir: str, options: EmulationOptions = EmulationOptions(),
            force: bool = False, progress: Progress = no_progress) -> EmulationResult:
    """Emulate the model of a MODEL_SCRIPT into ``workspace_dir``: seeds are set (``options.seed``),
    then ``model()`` and ``inputs()`` are called and :func:`emulate_model` does the rest.

    >>> result = emulate("sample_dumps/models/cnn.py", "ws", EmulationOptions(fusion="both"))  # doctest: +SKIP
    >>> result.manifest["overflow"]["first_op"]  # doctest: +SKIP
    'small_cnn_1/conv3_1/convolution'
    """
    check_workspace(workspace_dir, force)
    progress("loading the model script")
    script = load_model_script(model_script)
    seed_everything(options.seed, deterministic=True)
    progress("building the model and its inputs")
    model = script.build_model()
    batch = script.batch()
    return emulate_model(model, batch, workspace_dir, options, script=script.path, force=force, progress=progress)
