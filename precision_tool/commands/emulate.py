"""``emulate MODEL_SCRIPT [-o WORKSPACE] [--scale S] [--fusion on|off|both] [--perturb OP=FAULT ...] [--seed N]``.

Runs a TensorFlow model on the CPU under Ascend NPU numerics and writes what an Ascend run with
``action='dump'`` (and ``'overflow'``, ``'fusion_off'`` with ``--fusion both``) would have written, next to the
float32 reference: ``npu/debug_0`` (and ``npu/debug_1``), ``overflow/dump``, ``fusion/fusion_result.json``,
``tf/dump`` and a ``manifest.json`` of what was planted. MODEL_SCRIPT:
:mod:`precision_tool.capture.emulate.model_script` (docs/emulate.md#model_script); FAULT:
:mod:`precision_tool.capture.emulate.faults`. TensorFlow is imported only when this runs.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence

from precision_tool.capture.determinism import DEFAULT_SEED
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace
from precision_tool.errors import UsageError
from precision_tool.reports.report import Report
from precision_tool.reports.format import counted


def add_arguments(parser) -> None:
    from precision_tool.capture.emulate.hardware import ASCEND910, PRECISION_MODES, TARGETS

    parser.add_argument("script", metavar="MODEL_SCRIPT",
                        help="Python file defining model(), graph_model() (TF1 graph code), graph_def() (a frozen "
                             "GraphDef with feeds and fetches) or train_graph() (a TF1 training step), and inputs()")
    parser.add_argument("-o", "--output", default=None, metavar="WORKSPACE",
                        help="workspace to write (default: the workspace, -d / $PRECISION_TOOL_DATA)")
    parser.add_argument("--scale", type=float, default=1.0, metavar="S",
                        help="multiply every float input by S on both sides (provokes fp16 overflow)")
    parser.add_argument("--fusion", choices=("on", "off", "both", "switch"), default="on",
                        help="npu/debug_0 fused (on) or not (off); both: fused debug_0 and a fusion-off "
                             "second run in npu/debug_1; switch: fused by the passes the workspace's "
                             "fusion/fusion_switch.cfg leaves on (all, without one), as the NPU reads it "
                             "(default: on). Ops named in precision/customize_dtypes.cfg run in float32.")
    parser.add_argument("--perturb", action="append", default=[], metavar="OP=FAULT",
                        help="plant a faulty kernel on TF op OP's output, propagated downstream (repeatable). "
                             "FAULT: REL or noise:REL (x*(1+REL*z)), bias:REL (x+REL*rms(x)), fp16acc[:CHUNK] "
                             "(Cube op accumulating in float16, CHUNK terms per partial sum, default 16), "
                             "saturate:LIMIT (clip to +-LIMIT), positions:N (N seeded elements set to "
                             "-x-4*rms*s, s=1 if x>0 else -1); FAULT@fp16 plants it only while the op computes "
                             "in float16 (kept in float32 by the workspace's precision/customize_dtypes.cfg, "
                             "it is right)")
    parser.add_argument("--perturb-pass", action="append", default=[], metavar="PASS=FAULT",
                        help="plant FAULT (as --perturb) on the output of every op fusion pass PASS produced: an "
                             "error the pass makes, gone when PASS is switched off (repeatable)")
    parser.add_argument("--numerics", choices=TARGETS, default=ASCEND910,
                        help="the NPU modelled: ascend910 (Atlas training, saturation, native float16 kernels), "
                             "ascend910b (Atlas A2: IEEE inf/NaN, HF32 convolutions) or ideal (float16 inputs, "
                             "float32 kernels, one rounding; earlier releases' model); docs/emulated-numerics.md "
                             "(default: ascend910)")
    parser.add_argument("--precision-mode", choices=PRECISION_MODES, default=None, metavar="MODE",
                        help="the TF adapter's precision_mode (default: the target's for training: "
                             "allow_fp32_to_fp16 on ascend910, must_keep_origin_dtype on ascend910b, "
                             "allow_mix_precision for ideal)")
    parser.add_argument("--exact", action="append", default=[], metavar="OP",
                        help="TF op OP computes as the reference does (float32 in and out, no fault, no hardware "
                             "deviation; its whole NPU op when fused): the counterfactual that tells what OP's "
                             "error costs (repeatable)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N",
                        help=f"seed for weights, inputs, noise and faulty positions (default {DEFAULT_SEED}, the "
                             "capture helpers' own: an emulated run and a captured reference share their weights)")
    parser.add_argument("--step", type=int, default=0, metavar="N",
                        help="for a training step (train_graph()): dump step N, after steps 0 to N-1 ran in float32 "
                             "(default: 0)")
    parser.add_argument("--dump-data", choices=("tensor", "stats"), default="tensor",
                        help="tensor: dump files (default); stats: GE's per-op statistics CSVs instead, as "
                             "dump_data='stats' writes them")
    parser.add_argument("--dump-layer", default="", metavar="OPS",
                        help="dump only these ops (NPU op names, or TF op names they implement, separated by spaces, "
                             "as dump_layer takes them)")
    parser.add_argument("--keep-tfdbg", action="store_true",
                        help="keep the raw tfdbg capture in tf/tf_debug (it holds wall-clock times)")
    parser.add_argument("--force", action="store_true",
                        help="replace WORKSPACE if it holds an earlier emulation (a manifest.json)")


def _switches(fusion: str, workspace: Workspace):
    """The workspace's fusion switch file for ``--fusion switch`` (one-line errors naming it), else ``None``."""
    from precision_tool.formats.fusion_result import read_fusion_switches

    from precision_tool.formats.fusion_result import FusionSwitches

    if fusion != "switch":
        return None
    if not os.path.lexists(workspace.fusion_switch):  # as on the NPU: action fusion_switch starts all on
        return FusionSwitches()
    return read_fusion_switches(workspace.fusion_switch)


def emulate_arguments(manifest: dict) -> List[str]:
    """The ``emulate`` arguments that repeat the emulation ``manifest`` records, with ``--fusion switch`` (it reads
    the workspace's fusion switch and customize_dtypes files): what ``bisect`` re-runs."""
    from precision_tool.capture.emulate.hardware import ASCEND910, DEFAULT_PRECISION_MODE, IDEAL

    fusion = "off" if manifest.get("fusion") == "off" else "switch"  # an unfused run stays unfused
    words = [manifest["model_script"], "--fusion", fusion]
    if manifest.get("seed", DEFAULT_SEED) != DEFAULT_SEED:
        words += ["--seed", str(manifest["seed"])]
    if manifest.get("scale", 1.0) != 1.0:
        words += ["--scale", repr(manifest["scale"])]
    if manifest.get("training_step"):
        words += ["--step", str(manifest["training_step"])]
    numerics = manifest.get("numerics", IDEAL)  # a workspace written before --numerics: the ideal model
    if numerics != ASCEND910:
        words += ["--numerics", numerics]
    if manifest.get("precision_mode") and manifest["precision_mode"] != DEFAULT_PRECISION_MODE.get(numerics):
        words += ["--precision-mode", manifest["precision_mode"]]
    for op in manifest.get("exact", []):
        words += ["--exact", op]
    for planted in manifest.get("perturbations", []):
        spec = planted.get("spec") or f"{planted['rel']}" + ("@fp16" if planted.get("fp16_only") else "")
        words += ["--perturb", f"{planted['tf_op']}={spec}"]
    for planted in manifest.get("pass_faults", []):
        words += ["--perturb-pass", f"{planted['pass']}={planted['spec']}"]
    if manifest.get("dump_data", "tensor") != "tensor":
        words += ["--dump-data", manifest["dump_data"]]
    if manifest.get("dump_layer"):
        words += ["--dump-layer", " ".join(manifest["dump_layer"])]
    return words


def recorded_emulation(workspace_root: str) -> Optional[List[str]]:
    """:func:`emulate_arguments` of the workspace's ``manifest.json`` (written by ``emulate``); ``None`` for a
    workspace without one, or with one that cannot be read."""
    import json

    try:
        with open(os.path.join(workspace_root, "manifest.json"), encoding="utf-8") as handle:
            return emulate_arguments(json.load(handle))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def layer_run_command(workspace_root: str, dump_layer: str) -> str:
    """The ``emulate`` line that repeats the workspace's emulation as a tensor dump of ``dump_layer``'s ops alone,
    into ``{workspace}_layer`` (the statistics run's second pass); ``""`` for a workspace ``emulate`` did not
    write."""
    import json

    try:
        with open(os.path.join(workspace_root, "manifest.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
        words = emulate_arguments(dict(manifest, dump_data="tensor", dump_layer=dump_layer.split()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    words[2] = manifest.get("fusion", "on")  # the run as it was, not bisect's switchable one
    if os.path.isfile(words[0]):  # a script named from here: a line that runs from anywhere
        words[0] = os.path.abspath(words[0])
    output = os.path.normpath(workspace_root) + "_layer"
    return emulate_command_line(words + ["-o", output])


def emulate_command_line(arguments: Sequence[str]) -> str:
    """``precision_tool emulate ARGUMENTS``, quoted for a shell."""
    import shlex

    return " ".join(shlex.quote(word) for word in ["precision_tool", "emulate", *arguments])


def _kept_in_float32(workspace: Workspace) -> frozenset:
    """The op names the workspace's ``precision/customize_dtypes.cfg`` keeps in float32 (none without it)."""
    from precision_tool.formats.customize_dtypes import read_customize_dtypes

    if not os.path.lexists(workspace.customize_dtypes):
        return frozenset()
    return read_customize_dtypes(workspace.customize_dtypes).float32_ops()


def emulation_of(arguments) -> dict:
    """What an ``emulate`` command line computes, to tell two lines that emulate the same run apart from two that do
    not: the script's real path, seed, scale, step, every fault by op or pass in one spelling, and whether it fuses
    (``on`` and ``switch`` are the same run without a switch file). :class:`UsageError` for a line ``emulate``
    would refuse."""
    from precision_tool.commands.command_registry import CommandParser

    parser = CommandParser(prog="emulate", add_help=False)
    add_arguments(parser)
    args = parser.parse_args(list(arguments))
    from precision_tool.capture.emulate.hardware import DEFAULT_PRECISION_MODE

    return {"script": os.path.realpath(args.script), "seed": args.seed, "scale": args.scale, "step": args.step,
            "numerics": args.numerics, "precision_mode": args.precision_mode or DEFAULT_PRECISION_MODE[args.numerics],
            "exact": sorted(args.exact),
            "fused": args.fusion != "off", "second_run": args.fusion == "both",
            "perturb": {op: fault.spec for op, fault in parse_perturbations(args.perturb).items()},
            "perturb_pass": {name: fault.spec for name, fault in parse_perturbations(args.perturb_pass).items()},
            "dump_data": args.dump_data, "dump_layer": sorted(set(args.dump_layer.split()))}


def parse_perturbations(items, flag: str = "--perturb", what: str = "OP") -> dict:
    """``["conv/Conv2D=0.3", "fc/MatMul=bias:0.05"]`` -> ``{"conv/Conv2D": Fault("noise", 0.3),
    "fc/MatMul": Fault("bias", 0.05)}``, each FAULT parsed by
    :func:`~precision_tool.capture.emulate.faults.parse_fault`. The op is what comes before the last ``=``.
    :class:`UsageError` (one line, naming the item) for a malformed item or fault."""
    from precision_tool.capture.emulate.emulate_errors import EmulationError
    from precision_tool.capture.emulate.faults import parse_fault

    planted: dict = {}
    for item in items:
        op, sep, value = item.rpartition("=")
        if not sep or not op or not value.strip():
            example = ("ConvBiasaddFusionPass=0.3" if what == "PASS"
                       else "model/conv2/Conv2D=0.3 or model/conv2/Conv2D=bias:0.05")
            raise UsageError(f"{flag} {item!r}: expected {what}=FAULT, e.g. {example}")
        try:
            planted[op] = parse_fault(op, value)
        except EmulationError as error:
            raise UsageError(str(error)) from None
    return planted


def handle(args, ctx: Context) -> Report:
    from precision_tool.capture.emulate import EmulationOptions, emulate
    from precision_tool.capture.emulate.status_line import terminal_status

    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: must be >= 0")
    target = Workspace(args.output or ctx.data_dir)
    options = EmulationOptions(scale=args.scale, fusion=args.fusion, perturb=parse_perturbations(args.perturb),
                               seed=args.seed, keep_tfdbg=args.keep_tfdbg, step=args.step,
                               switches=_switches(args.fusion, target),
                               pass_faults=parse_perturbations(args.perturb_pass, "--perturb-pass", "PASS"),
                               keep_fp32=_kept_in_float32(target), numerics=args.numerics,
                               precision_mode=args.precision_mode, exact=frozenset(args.exact),
                               dump_data=args.dump_data, dump_layer=frozenset(args.dump_layer.split()))
    status = terminal_status()  # a status line on stderr, when it is a terminal
    if status is None:
        result = emulate(args.script, args.output or ctx.data_dir, options, force=args.force)
    else:
        try:
            with status.redirect():
                result = emulate(args.script, args.output or ctx.data_dir, options, force=args.force,
                                 progress=status)
        finally:
            status.close()
    manifest = result.manifest
    report = Report(title=f"Emulated {args.script} -> {result.workspace}")
    report.add_table(["run", "fusion", "executed ops", "dump files", "dump folder"],
                     [[run["dir"], "switch file" if manifest["fusion"] == "switch" and run["dir"] == "npu/debug_0"
                       else "on" if run["fusion"] else "off", run["executed_ops"], run["files"],
                       run["dump_dir"]] for run in manifest["runs"]])
    lines = [f"reference: {manifest['reference']['files']} tensors in {manifest['reference']['dir']}",
             f"fused ops: {len(manifest['fusion_groups'])}"]
    if "training_step" in manifest:
        step = manifest["training_step"]
        ran = f"after steps 0-{step - 1} ran in float32" if step > 1 else ("after step 0 ran in float32" if step
                                                                          else "from the initial weights")
        lines.insert(0, f"training step {step}, {ran}; {len(manifest['outputs'])} outputs: the loss and the "
                        "updated variables")
    for planted in manifest["perturbations"]:
        where = ", ".join(f"{run}: {op}" for run, op in planted["npu_op"].items())
        what = f"noise {planted['rel']}" if "kind" not in planted else planted["spec"]
        lines.append(f"planted {what} on {planted['tf_op']} (NPU op {where})")
    overflow = manifest["overflow"]
    if overflow["first_op"]:
        lines.append(f"fp16 overflow: first at {overflow['first_op']}; {counted(len(overflow['ops']), 'op')} "
                     f"overflowed, Opdebug records in {overflow['dir']}")
    else:
        lines.append("fp16 overflow: none")
    report.add_text(*lines)
    manifest_path = os.path.join(result.workspace, "manifest.json")
    report.status = f"wrote {counted(len(manifest['files']), 'file')}; manifest: {manifest_path}"
    report.data = {key: value for key, value in manifest.items() if key != "files"}
    report.data["workspace"] = result.workspace
    return report


COMMAND = Command(
    name="emulate",
    summary="Run a TF model on the CPU under NPU numerics; write an Ascend-style dump workspace.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="Example: precision_tool emulate sample_dumps/models/cnn.py -o ws --fusion both "
           "--perturb small_cnn_1/res_conv_1/convolution=0.5\nWrites npu/debug_N, overflow/dump, tf/dump, "
           "fusion/fusion_result.json and manifest.json.",
)
