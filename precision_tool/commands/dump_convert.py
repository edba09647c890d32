"""``dc PATH [-o OUT_DIR] [--keep-layout]``: every tensor of Ascend dump files to .npy.

Each input and output of each dump becomes ``OUT_DIR/{dump file name}.{input|output}.{i}.npy``, in its origin
layout and original shape (what a user compares with TensorFlow), or as stored with ``--keep-layout``; payloads
are read one tensor at a time, by offset. In a folder, a bad file or tensor is reported in one line and skipped;
the exit code is 0 only if everything converted. One file given whose header cannot be read is the command's error
(one line, exit 2), before any folder is made. Exception dumps convert too, under msaccucmp's names: their
``DT_UNDEFINED`` tensors become flat int8 arrays of their raw bytes (docs/commands.md#dc).
"""
from __future__ import annotations

import os
import time
from typing import List, Tuple

from precision_tool.commands.options import add_output_dir_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.config import Workspace, ensure_output_dir, input_folders_of
from precision_tool.errors import batch_exit_code, PrecisionToolError, WorkspaceError
from precision_tool.fileio import save_npy_atomic
from precision_tool.formats import layouts
from precision_tool.formats.dump_file import read_dump_header, read_dump_header_cached
from precision_tool.formats.dump_names import dump_name_of_file, scan_dump_folder
from precision_tool.formats.dump_tree import DumpSelection
from precision_tool.formats.origin_tensor import KEPT_AS_STORED, read_origin_tensor
from precision_tool.metrics.array_stats import STATS_HEADERS, array_stats
from precision_tool.reports.format import counted


def add_arguments(parser):
    parser.add_argument("path", help="a dump file, or a folder searched recursively for dump files")
    add_output_dir_option(parser, "the .npy files", "WORKSPACE/temp/dump_convert/{timestamp}")
    parser.add_argument("--keep-layout", action="store_true",
                        help="save tensors as stored (device layout, e.g. NC1HWC0) instead of the origin layout")
    parser.add_argument("--origin-format", default=None, metavar="FORMAT",
                        help="origin format of 4-D device tensors when the header does not say (NHWC, NCHW)")


def _dump_files(path: str, selection: DumpSelection) -> Tuple[List[str], List[str]]:
    """The dump files to convert -- ``path`` itself unless it is a folder, else every dump under it -- and one
    line per file under it that cannot be identified because its ``mapping.csv`` cannot be read (a tree: the
    step and device of ``selection``).

    Anything at ``path`` that is not a folder -- a FIFO, a dangling symlink too -- is taken as the one file
    to convert, so that the dump reader names its cause; only nothing at all is "no such file or folder"."""
    if not os.path.lexists(path):
        raise WorkspaceError(f"{path}: no such file or folder")
    if not os.path.isdir(path):
        dump_name_of_file(path)  # a single explicit file must have a dump file name
        return [path], []
    scan = scan_dump_folder(path, selection)
    files = [ref.path for op in scan.ops for ref in (op.latest, *op.superseded)]
    files += [ref.path for ref in scan.overflow_records]
    files += [ref.path for ref in scan.exception_dumps]
    unresolved = [message for _, message in scan.unresolved]
    if not files and unresolved:
        raise WorkspaceError(unresolved[0])
    if not files:
        raise WorkspaceError(f"{path}: no Ascend dump files in this folder",
                             "dump files are named {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}, "
                             "exception dumps exception_info.{stream_id}.{task_id}.{timestamp}")
    return sorted(files), unresolved


def handle(args, ctx: Context):
    from precision_tool.reports.report import Report

    files, unresolved = _dump_files(args.path, ctx.selection)
    if not os.path.isdir(args.path):
        read_dump_header(files[0])  # one file given: its unreadable header is the command's one-line error
    out_dir = args.out_dir or os.path.join(Workspace(ctx.data_dir).temp, "dump_convert",
                                           time.strftime("%Y%m%d%H%M%S"))
    workspace_inputs = Workspace(ctx.data_dir).input_folders
    out_dir = ensure_output_dir(out_dir, args.path, folders=(*input_folders_of(args.path), *workspace_inputs))
    rows, failures, notes, tensors = [], list(unresolved), [], []
    written = 0
    for path in files:
        try:
            dump = read_dump_header_cached(path)
        except PrecisionToolError as error:
            failures.append(str(error))
            continue
        base = os.path.basename(path)
        for entry in dump.tensors:
            try:
                decoded = read_origin_tensor(dump, entry, args.origin_format, keep_layout=args.keep_layout)
                target = os.path.join(out_dir, f"{base}.{entry.kind}.{entry.index}.npy")
                save_npy_atomic(target, decoded.array)
            except OSError as error:
                raise WorkspaceError(f"{out_dir}: cannot write ({error.strerror or error})") from None
            except PrecisionToolError as error:
                failures.append(_failure_line(path, entry.label, error))
                continue
            written += 1
            if decoded.note and not (args.keep_layout and decoded.note == KEPT_AS_STORED):  # the title says it once
                notes.append(f"{base} {entry.label}: {decoded.note}")
            stats = array_stats(decoded.array)
            saved_as = f"{decoded.origin_format} {layouts.shape_text(decoded.array.shape)}"
            rows.append([dump.op_name, entry.label, entry.dtype_name, entry.stored_text, saved_as,
                         *stats.cells(".4g"), os.path.basename(target)])
            tensors.append({"dump_file": path, "op": dump.op_name, "tensor": entry.label, "dtype": entry.dtype_name,
                            "stored": entry.stored_text, "format": decoded.origin_format,
                            "shape": [int(d) for d in decoded.array.shape], "file": target, "note": decoded.note,
                            **stats.to_dict()})
    report = Report(title=f"Converted {counted(written, 'tensor')} from {counted(len(files), 'dump file')} to "
                           f"{out_dir}{' as stored (--keep-layout)' if args.keep_layout else ''}")
    report.add_table(["op", "tensor", "dtype", "stored", "saved as", *STATS_HEADERS, "file"], rows)
    if notes:
        report.add_text("Notes:", *notes)
    if failures:
        report.add_text(f"Failed ({len(failures)}):", *failures)
    report.status = _status(len(failures), written)
    report.exit_code = batch_exit_code(False, bool(failures))  # a conversion finds nothing: failures are exit 2
    report.data = {"out_dir": out_dir, "files": len(files), "tensors_written": written, "failures": failures,
                   "notes": notes, "tensors": tensors}
    return report


def _failure_line(path: str, label: str, error: PrecisionToolError) -> str:
    """``PATH: output 0: cause``, once: a dump reader's error already starts with the path and the label."""
    text = str(error)
    if text.startswith(f"{path}: {label}: "):
        return text
    if text.startswith(f"{path}: "):
        text = text[len(path) + 2:]
    return f"{path}: {label}: {text}"


def _status(failures: int, written: int) -> str:
    """The last line: all converted, or how many failed and whether anything was written at all."""
    if not failures:
        return "all tensors converted"
    failed = f"{failures} failure{'s' if failures != 1 else ''}"
    return f"{failed}; the other tensors were written" if written else f"{failed}; no tensor was converted"


COMMAND = Command(
    name="dc",
    summary="Convert Ascend dump files to .npy (origin layout and shape by default).",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("dump_convert",),
    epilog="Output names: {dump file name}.{input|output}.{i}.npy. Input folders are never written to.",
)
