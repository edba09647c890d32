"""``tf_dump [--run N] [-i DIR] [-o DIR] [--clean] [--list]``: a captured tfdbg run -> reference .npy folder.

Reads the captures under ``WORKSPACE/tf/tf_debug`` (``sess_dump`` / ``estimator_dump``: tfdbg v1
``run_*`` folders; ``enable_reference_dump``: a tfdbg v2 folder) and writes the chosen run -- the
newest by default, as the original tool did -- as ``WORKSPACE/tf/dump/{op name'}.{output}.{timestamp}.npy``
(``/`` and ``.`` of the op name become ``_``; the timestamp is the tensor's dump time). Resource handles
have no values and are skipped; strings and variants too. When one op output was dumped several times
in the run (a while loop, several ``tf.function`` calls in one v2 capture) the last one is kept, and
the report says how often. Tensors are read and written one at a time, so memory stays at the size of
the largest tensor. TensorFlow is not needed.
"""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from typing import Dict, List, Tuple

from precision_tool.commands.registry import Command, Context
from precision_tool.config import Workspace, ensure_output_dir
from precision_tool.errors import EXIT_OK, EXIT_UNUSABLE_INPUT, PrecisionToolError, WorkspaceError
from precision_tool.formats.npy_dir import build_name_mapping, write_reference_npy
from precision_tool.formats.tf_tensor import DT_RESOURCE, base_dtype_code
from precision_tool.formats.tfdbg import TfdbgRun, TfdbgTensor, iter_tfdbg, list_tfdbg_runs
from precision_tool.reports.report import Report

_REFERENCE_FILE = re.compile(r"[^.]+\.[0-9]+\.[0-9]+\.npy")
# Op types that mean several TF ops were executed as one: their inner ops have no reference tensor.
_FUSED_TYPE_PREFIXES = ("_Fused", "_Mkl", "_Xla", "XlaLaunch", "XlaRun", "TPUPartitionedCall")


def add_arguments(parser) -> None:
    parser.add_argument("--run", type=int, default=-1, metavar="N",
                        help="which run, oldest first from 0 (negative counts from the newest; default -1: newest)")
    parser.add_argument("-i", "--input", default=None, metavar="DIR",
                        help="tfdbg captures (default: WORKSPACE/tf/tf_debug), a capture folder or one run folder")
    parser.add_argument("-o", "--output", default=None, metavar="DIR",
                        help="reference folder to write (default: WORKSPACE/tf/dump)")
    parser.add_argument("--clean", action="store_true",
                        help="first delete the reference .npy files already in the output folder")
    parser.add_argument("--list", action="store_true", help="only list the runs found, with their numbers")


def find_runs(root: str) -> List[TfdbgRun]:
    """Every tfdbg run in ``root`` and in its immediate sub-folders (one per capture), oldest first."""
    if not os.path.isdir(root):
        raise WorkspaceError(f"{root}: no such folder", "capture a reference first with sess_dump, estimator_dump "
                                                        "or enable_reference_dump, or pass -i DIR")
    found: Dict[str, TfdbgRun] = {}
    for folder in [root, *sorted(os.path.join(root, n) for n in os.listdir(root))]:
        if not os.path.isdir(folder):
            continue
        try:
            runs = list_tfdbg_runs(folder)
        except WorkspaceError:
            continue
        for run in runs:
            found.setdefault(os.path.realpath(run.path), run)
    if not found:
        raise WorkspaceError(f"{root}: no tfdbg run here or in its sub-folders",
                             "capture a reference first with sess_dump, estimator_dump or enable_reference_dump")
    return sorted(found.values(), key=lambda run: (run.timestamp_us, run.counter, run.path))


def _run_time(run: TfdbgRun) -> str:
    if not run.timestamp_us:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.timestamp_us / 1e6))


def _list_report(root: str, runs: List[TfdbgRun]) -> Report:
    rows = [[index, index - len(runs), f"v{run.version}", _run_time(run), run.path] for index, run in enumerate(runs)]
    report = Report(title=f"tfdbg runs in {root}").add_table(["run", "from newest", "tfdbg", "time", "folder"], rows)
    report.status = f"{len(runs)} run{'s' if len(runs) != 1 else ''}; tf_dump converts --run -1 (the newest) by default"
    report.data = {"root": root, "runs": [{"index": i, "version": r.version, "timestamp_us": r.timestamp_us,
                                           "path": r.path} for i, r in enumerate(runs)]}
    return report


def _scan(run: TfdbgRun) -> Tuple[Dict[Tuple[str, int], TfdbgTensor], Counter, int, List[str]]:
    """Last record per op output (execution order of those last records), occurrence counts, resources
    skipped and non-numeric tensors skipped. Reads headers only."""
    last: Dict[Tuple[str, int], TfdbgTensor] = {}
    seen: Counter = Counter()
    resources, non_numeric = 0, []
    for record in iter_tfdbg(run.path, skip_resources=False):
        if base_dtype_code(record.dtype_code) == DT_RESOURCE:
            resources += 1
            continue
        if not record.loadable:
            non_numeric.append(f"{record.tensor_name} ({record.dtype_name})")
            continue
        key = (record.op_name, record.output_slot)
        seen[key] += 1
        last.pop(key, None)
        last[key] = record
    return last, seen, resources, non_numeric


def _remove_reference_files(folder: str) -> int:
    removed = 0
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if _REFERENCE_FILE.fullmatch(name) and os.path.isfile(path):
            os.unlink(path)
            removed += 1
    return removed


def handle(args, ctx: Context) -> Report:
    workspace = Workspace(ctx.data_dir)
    root = args.input or workspace.tf_debug
    runs = find_runs(root)
    if args.list:
        return _list_report(root, runs)
    try:
        run = runs[args.run]
    except IndexError:
        raise WorkspaceError(f"{root}: run {args.run} does not exist "
                             f"({len(runs)} run(s); see 'tf_dump --list')") from None
    out_dir = ensure_output_dir(args.output or workspace.tf_dump, root, run.path)
    removed = _remove_reference_files(out_dir) if args.clean else 0
    last, seen, resources, non_numeric = _scan(run)
    if not last:
        hint = ("enable_reference_dump() must run before the step is first traced"
                if run.version == 2 else "was anything run under the wrapped session?")
        raise WorkspaceError(f"{run.path}: the run holds no tensor with values", hint)

    rows, written, failures, fused = [], [], [], Counter()
    total_bytes = 0
    for (op_name, slot), record in last.items():
        if record.op_type and record.op_type.startswith(_FUSED_TYPE_PREFIXES):
            fused[record.op_type] += 1
        try:
            array = record.load()
            path = write_reference_npy(out_dir, op_name, slot, array, record.timestamp_us)
        except PrecisionToolError as error:
            failures.append(str(error))
            continue
        total_bytes += array.nbytes
        name = os.path.basename(path)
        written.append({"op_name": op_name, "output_slot": slot, "op_type": record.op_type,
                        "dtype": record.dtype_name, "shape": list(array.shape), "file": name})
        rows.append([op_name, slot, record.op_type or "-", record.dtype_name, str(list(array.shape)), name])
        del array

    repeated = {f"{op}:{slot}": count for (op, slot), count in seen.items() if count > 1}
    kept_files = {entry["file"] for entry in written}
    others = sorted(name for name in os.listdir(out_dir)
                    if _REFERENCE_FILE.fullmatch(name) and name not in kept_files)
    collisions = {file_name: names for file_name, names in build_name_mapping(op for op, _ in last).items()
                  if len(names) > 1}

    report = Report(title=f"Reference tensors: {run.path} (tfdbg v{run.version}) -> {out_dir}")
    report.add_table(["tf op", "output", "op type", "dtype", "shape", "file"], rows)
    notes = []
    if removed:
        notes.append(f"--clean removed {removed} earlier reference files from {out_dir}.")
    if repeated:
        examples = ", ".join(f"{name} x{count}" for name, count in list(repeated.items())[:5])
        notes.append(f"{len(repeated)} op outputs were dumped more than once in this run (loop, or several "
                     f"function calls); kept the last of each: {examples}.")
    if fused:
        kinds = ", ".join(f"{count} {op_type}" for op_type, count in fused.most_common())
        notes.append(f"Fused ops in the reference ({kinds}): their inner TF ops have no reference. Capture with "
                     "Grappler off (sess_dump / reference_session_config), TF_ENABLE_ONEDNN_OPTS=0 and no XLA.")
    if collisions:
        example = next(iter(collisions.items()))
        notes.append(f"{len(collisions)} file names stand for several TF ops once '/' and '.' become '_' "
                     f"(e.g. {example[0]}: {', '.join(example[1])}).")
    if non_numeric:
        notes.append(f"Skipped {len(non_numeric)} non-numeric tensors: {', '.join(non_numeric[:5])}"
                     f"{' ...' if len(non_numeric) > 5 else ''}.")
    if others:
        notes.append(f"{len(others)} other reference files are in {out_dir} from earlier conversions (for each op "
                     "output the newest file is the one compared); rerun with --clean to keep only this run.")
    if notes:
        report.add_text("Notes:", *notes)
    if failures:
        report.add_text(f"Failed ({len(failures)}):", *failures)
    report.status = (f"wrote {len(written)} tensors ({total_bytes / 2**20:.1f} MiB); skipped {resources} resource "
                     f"handles and {len(non_numeric)} non-numeric tensors; {len(repeated)} op outputs repeated "
                     f"(kept the last)" + (f"; {len(failures)} failed" if failures else ""))
    report.exit_code = EXIT_UNUSABLE_INPUT if failures else EXIT_OK
    report.data = {"run": run.path, "tfdbg_version": run.version, "out_dir": out_dir, "written": len(written),
                   "bytes": total_bytes, "skipped_resources": resources, "skipped_non_numeric": non_numeric,
                   "repeated": repeated, "fused_op_types": dict(fused), "name_collisions": collisions,
                   "other_files": len(others), "removed": removed, "failures": failures, "tensors": written}
    return report


COMMAND = Command(
    name="tf_dump",
    summary="Turn a captured TensorFlow run (tfdbg v1 or v2) into the reference .npy folder.",
    add_arguments=add_arguments,
    handler=handle,
    epilog="Output names: {op name with / and . as _}.{output}.{timestamp}.npy, as msaccucmp reads them.\n"
           "Capture first: npu_tf_config.sess_dump(sess), estimator_dump() or enable_reference_dump().",
)
