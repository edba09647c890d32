"""``pt [-n] TENSOR [SLICE] [-s] [--keep-layout]``: print a dump tensor or a ``.npy`` file.

For each tensor: dtype, layout and shape as stored and as shown, min/max/mean over the finite values and inf/NaN
counts, then the values printed to fit the terminal. TENSOR takes every form of :mod:`.tensor_spec`; with a slice
everything shown is the slice's, read only where it lies (:mod:`.tensor_source`). ``-s`` saves what is shown under
``WORKSPACE/temp/print_tensor/``: never next to the input, nor anywhere below a dump file's folder (refused, exit 2).
A dump with more than :data:`MAX_VALUE_BLOCKS` tensors (a 10,000-input Concat) gets a statistics row for every
tensor and the values of the first ones; its header is parsed once for all of them. See docs/commands.md#pt.
"""
from __future__ import annotations

import os
from typing import List

import numpy as np

from precision_tool.commands.arg_hints import NOTHING, TENSOR, completes
from precision_tool.commands.options import add_run_option
from precision_tool.commands.command_registry import Command, Context
from precision_tool.commands.tensor_source import LoadedTensor, load_tensors
from precision_tool.commands.tensor_spec import FORMS_HINT
from precision_tool.commands.terminal_text import array_text, terminal_size
from precision_tool.metrics.array_stats import STATS_HEADERS, array_stats
from precision_tool.commands.lookups import lookup_for, with_graph_notes
from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.formats.layouts import shape_text
from precision_tool.reports.report import Report


def add_arguments(parser):
    completes(parser.add_argument("tensor", nargs="?", help="dump file, .npy file, OP:output:K, OP or TF_OP:K"),
              TENSOR)
    completes(parser.add_argument("slice", nargs="?", default="",
                                  help="numpy slice, e.g. [0, :4] (or glued: X[0, :4])"), NOTHING)
    completes(parser.add_argument("-n", "--name", dest="name_flag", metavar="TENSOR",
                                  help="the tensor, as a flag (the original tool's form)"), TENSOR)
    parser.add_argument("-s", "--save", action="store_true",
                        help="save the shown values as .npy and .txt in WORKSPACE/temp/print_tensor/")
    parser.add_argument("--keep-layout", action="store_true",
                        help="show dump tensors as stored (device layout such as NC1HWC0), not in origin layout")
    add_run_option(parser, " (for op names)")


def tensor_argument(args) -> str:
    """``TENSOR`` or ``-n TENSOR``, with a separate ``SLICE`` glued back on."""
    if args.tensor and args.name_flag:
        if args.slice:
            raise UsageError("give the tensor once: pt TENSOR [SLICE] or pt -n TENSOR [SLICE]")
        args.slice, args.tensor = args.tensor, None  # "pt -n X [0]": the positional was the slice
    text = args.tensor or args.name_flag
    if not text:
        raise UsageError("which tensor? pt TENSOR [SLICE]", FORMS_HINT)
    if args.slice:
        if not args.slice.strip().startswith("["):
            raise UsageError(f"{args.slice!r} is not a slice like [0, :4]")
        text = text + args.slice.strip()
    return text


MAX_VALUE_BLOCKS = 64
"""Tensors whose values are printed; a dump with more (a 10,000-input Concat) gets a statistics row for every
tensor, values for the first 64 and one line saying how to print any other."""


def handle(args, ctx: Context) -> Report:
    text = tensor_argument(args)
    lookup = lookup_for(ctx, args.run)
    lookup.graph_notes = ()  # only this command's graph lookups (a shell session keeps the lookup)
    spec, tensors = load_tensors(text, lookup, keep_layout=args.keep_layout)
    columns, lines = terminal_size(ctx)
    value_lines_each = max(8, lines // max(1, min(len(tensors), MAX_VALUE_BLOCKS)))
    rows, data, saved = [], [], []
    value_lines: List[str] = []
    for number, tensor in enumerate(tensors):
        shown = tensor.array
        stats = array_stats(shown)
        part = f", slice {shape_text(shown.shape)}" if tuple(shown.shape) != tuple(tensor.whole_shape) else ""
        rows.append([tensor.shown_label, tensor.stored,  # the statistics are the slice's: say its shape too
                     f"{tensor.layout} {shape_text(tensor.whole_shape)}{part}".strip(), *stats.cells()])
        if number < MAX_VALUE_BLOCKS:
            value_lines += _value_block(tensor, columns, value_lines_each)
        item = {"tensor": tensor.label, "path": tensor.path, "stored": tensor.stored, "layout": tensor.layout,
                "shape": list(tensor.whole_shape), "dtype": str(shown.dtype), **stats.to_dict(),
                "shown_shape": list(shown.shape), "values": shown.tolist() if shown.size <= 10000 else None}
        if args.save:
            item["saved"] = _save(tensor, lookup)
            saved += item["saved"]
        data.append(item)
    if len(tensors) > MAX_VALUE_BLOCKS:
        value_lines.append(f"values of the other {len(tensors) - MAX_VALUE_BLOCKS:,} tensors are not printed "
                           f"(their statistics are above): name one, e.g. pt {spec.base}:output:0")
    report = Report(title=text)
    report.add_table(["tensor", "stored", "shown as", *STATS_HEADERS], rows)
    report.add_text(*(value_lines[:-1] if value_lines and not value_lines[-1] else value_lines))
    if saved:
        report.status = "saved " + ", ".join(saved)
    report.data = {"spec": text, "slice": spec.slice_text, "tensors": data}
    return with_graph_notes(report, lookup.graph_notes)


def _value_block(tensor: LoadedTensor, columns: int, lines: int) -> List[str]:
    """Heading, values sized to ``columns`` x ``lines``, the tensor's note if any, and a blank line."""
    shown = tensor.array
    block = [f"{tensor.shown_label}: {shown.dtype} {shape_text(shown.shape)}", array_text(shown, columns, lines)]
    if tensor.note:
        block.append(f"note: {tensor.note}")
    return block + [""]


def safe_file_stem(label: str) -> str:
    """A file name from a tensor label: ``a/b:output:0`` -> ``a_b.output.0``."""
    stem = label[:-4] if label.endswith(".npy") else label
    return "".join("_" if c in '/\\ *?"<>|' else c for c in stem).replace(":", ".")


def _save(tensor: LoadedTensor, lookup) -> List[str]:
    from precision_tool.config import ensure_output_dir, input_folders_of
    from precision_tool.fileio import atomic_write, save_npy_atomic

    # a dump file's folder is scanned for dumps: nothing goes in it or below (a workspace given as -d DUMP_DIR)
    dump_folders = () if tensor.path.lower().endswith(".npy") else input_folders_of(tensor.path)
    folder = ensure_output_dir(os.path.join(lookup.workspace.temp, "print_tensor"), tensor.path,
                               folders=(*dump_folders, *lookup.workspace.input_folders))
    stem = safe_file_stem(tensor.label) + (".slice" if tensor.slice_text else "")
    npy_path, txt_path = os.path.join(folder, stem + ".npy"), os.path.join(folder, stem + ".txt")
    values = np.asarray(tensor.array)
    columns = values.shape[-1] if values.ndim and values.shape[-1] else 1
    table = values.reshape(1, 1) if values.ndim == 0 else values.reshape(-1, columns)
    fmt = "%.9g" if values.dtype.kind in "fc" else "%d"
    try:
        save_npy_atomic(npy_path, values)
        with atomic_write(txt_path, "w") as out:
            out.write(f"# {tensor.shown_label} dtype {values.dtype} shape {list(values.shape)}\n")
            np.savetxt(out, table.astype(np.float64) if values.dtype.kind == "f" and values.itemsize < 4 else table,
                       fmt=fmt)
    except OSError as error:
        raise WorkspaceError(f"{folder}: cannot write ({error.strerror or error})") from None
    return [npy_path, txt_path]


COMMAND = Command(
    name="pt",
    summary="Print a tensor (dump file, npy, OP:output:K, TF_OP:K): stats and values, optionally a numpy slice.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("print_tensor",),
    epilog="Examples:\n  pt conv1/Conv2D:output:0[0, :4]\n  pt conv1/Relu:0 [..., :8] -s\n"
           "  pt npu/debug_0/dump/.../Conv2D.conv1_Conv2D.3.2.1700000000000001",
)
