"""The sections of ``ni``'s report, one function each; every function adds its blocks and its JSON data.

A section whose files are missing says so in one line instead of failing the whole command: ``ni`` is
most useful exactly when a workspace is incomplete.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

from precision_tool.metrics.array_stats import STATS_HEADERS, array_stats
from precision_tool.errors import PrecisionToolError, WorkspaceError
from precision_tool.formats.layouts import shape_text
from precision_tool.reports.report import Report

MAX_CONSUMERS_SHOWN = 3
MAX_ATTR_TEXT = 100


def _desc_cells(desc) -> List[str]:
    if desc is None:
        return ["-", "-", "-", "-"]
    origin_shape = "-" if desc.origin_shape is None else shape_text(desc.origin_shape)
    return [desc.dtype.replace("DT_", "").lower(), desc.layout or "-", shape_text(desc.shape),
            f"{desc.origin_format or '-'} {origin_shape}"]


def add_graph_sections(report: Report, data: dict, op, graph) -> None:
    """Inputs, outputs, TF origins, fusion passes and kernel, from the graph alone."""
    from precision_tool.alignment.npu_side import input_desc

    input_rows = [[k, str(ref), *_desc_cells(input_desc(op, k))] for k, ref in enumerate(op.data_inputs)]
    report.add_table(["in", "from", "dtype", "layout", "shape", "origin"], input_rows, title="Inputs")
    readers: Dict[int, List[str]] = {}
    for consumer in graph.consumers(op.name):
        ref = consumer.op.inputs[consumer.input_position]
        if not ref.is_control:
            readers.setdefault(ref.index, []).append(consumer.op.name)
    output_rows = []
    for k, desc in enumerate(op.output_descs):
        tf_tensor = f"{desc.origin_name}:{desc.origin_output_index}" if desc.origin_name else "-"
        names = readers.get(k, [])
        shown = ", ".join(names[:MAX_CONSUMERS_SHOWN])
        if len(names) > MAX_CONSUMERS_SHOWN:
            shown += f" (+{len(names) - MAX_CONSUMERS_SHOWN} more)"
        output_rows.append([k, *_desc_cells(desc), tf_tensor, shown or "-"])
    report.add_table(["out", "dtype", "layout", "shape", "origin", "TF tensor", "consumers"], output_rows,
                     title="Outputs")
    control = [ref.producer for ref in op.inputs if ref.is_control]
    lines = [f"Original TF ops: {', '.join(op.original_op_names) or '-'}",
             f"Fusion passes:   {', '.join(op.pass_names) or '-'}",
             f"Kernel:          {op.kernel_name or '-'}" + (f" ({op.kernel_lib})" if op.kernel_lib else "")]
    if op.l1_fusion_group:
        lines.append(f"L1 fusion group: {op.l1_fusion_group}")
    if control:
        lines.append(f"Control inputs:  {', '.join(control)}")
    report.add_text(*lines)
    data.update(inputs=[{"from": str(ref)} for ref in op.data_inputs], outputs=len(op.output_descs),
                original_op_names=list(op.original_op_names), pass_names=list(op.pass_names),
                kernel=op.kernel_name, kernel_lib=op.kernel_lib, control_inputs=control)


def add_dump_section(report: Report, data: dict, dumped, op, dump_dir: str = "") -> None:
    """The op's latest dump file and per-tensor statistics (origin layout), or why there is none
    (:func:`~precision_tool.alignment.npu_side.why_not_dumped`, for graph op ``op`` under ``dump_dir``)."""
    from precision_tool.alignment.npu_side import why_not_dumped
    from precision_tool.commands.tensor_source import npu_tensor_ref
    from precision_tool.formats.dump_file import read_dump_header

    if dumped is None:
        report.add_text(f"NPU dump: none ({why_not_dumped(op.type if op is not None else '', dump_dir)})")
        data["dump"] = None
        return
    older = f"; {len(dumped.superseded)} older executions" if dumped.superseded else ""
    title = f"NPU dump {os.path.basename(dumped.latest.path)}{older}"
    try:
        dump = read_dump_header(dumped.latest.path)
    except PrecisionToolError as error:
        report.add_text(f"{title}: unreadable: {error}")
        data["dump"] = {"path": dumped.latest.path, "error": str(error)}
        return
    rows, tensors = [], []
    for entry in dump.tensors:
        ref = npu_tensor_ref(dumped.latest.path, dump, entry, op)
        try:
            decoded = ref.load()
            stats = array_stats(decoded.array)
            cells = [f"{decoded.origin_format} {shape_text(decoded.array.shape)}", *stats.cells()]
            tensors.append({"tensor": ref.tensor_id, **stats.to_dict()})
        except PrecisionToolError as error:
            cells = [f"unreadable: {error}", "", "", "", "", ""]
            tensors.append({"tensor": ref.tensor_id, "error": str(error)})
        rows.append([f"{entry.kind}:{entry.index}", ref.dtype, f"{entry.format_name} {shape_text(entry.shape)}",
                     *cells])
    report.add_table(["tensor", "dtype", "stored", "origin", *STATS_HEADERS], rows, title=title)
    data["dump"] = {"path": dumped.latest.path, "op_name": dump.op_name,
                    "older": [ref.path for ref in dumped.superseded], "tensors": tensors}


def add_reference_section(report: Report, data: dict, op_name: str, lookup) -> None:
    """The reference tensors the alignment pairs with this op's tensors, and why others have none."""
    try:
        alignment = lookup.alignment()
    except PrecisionToolError as error:
        report.add_text(f"Reference: alignment failed: {error}")
        data["references"] = {"error": str(error)}
        return
    if alignment is None:
        report.add_text(f"Reference: none ({lookup.reference_dir} or the NPU dump folder is missing)")
        data["references"] = None
        return
    pairs = [pair for pair in alignment.pairs if pair.npu.op_name == op_name]
    rows, found = [], []
    for pair in pairs:
        try:
            stats = array_stats(pair.ref.load()).cells()
        except PrecisionToolError as error:
            stats = [f"unreadable: {error}", "", "", "", ""]
        rows.append([f"{pair.npu.kind}:{pair.npu.index}", pair.ref.tensor_id, shape_text(pair.ref.shape), *stats])
        found.append({"tensor": pair.npu.tensor_id, "reference": pair.ref.tensor_id, "path": pair.ref.path,
                      "rule": pair.rule})
    missing = [(item.npu.tensor_id, item.reason) for item in alignment.unaligned if item.npu.op_name == op_name]
    if rows:
        report.add_table(["tensor", "reference", "shape", *STATS_HEADERS], rows,
                         title=f"Reference tensors ({lookup.reference_dir})")
    if missing:
        report.add_text("Not compared:", *(f"  {tensor}: {reason}" for tensor, reason in missing))
    if not rows and not missing:
        report.add_text("Reference: this op has no dumped tensor to pair")
    data["references"] = {"pairs": found, "not_compared": [list(item) for item in missing]}


def result_for(lookup, chosen: Optional[str]) -> Optional[str]:
    """The result CSV ``ni`` reads: ``-f RESULT`` (a CSV, or a folder searched for the latest; errors name it), else
    the newest under ``WORKSPACE/temp/vector_compare``, else ``None`` -- of the step and device whose dumps ``ni``
    shows, when the tree holds several: a result of another step is never shown beside this step's dumps."""
    from precision_tool.commands.compare_rows import latest_result_csv
    from precision_tool.reports.result_store import find_result_csv

    selection = shown_dumps(lookup)
    if chosen:
        if not os.path.lexists(chosen):
            raise WorkspaceError(f"{chosen}: no such file or folder", "give -f a result folder or result_*.csv")
        return find_result_csv(chosen, selection=selection)
    return latest_result_csv(lookup.workspace.temp, selection)


def shown_dumps(lookup):
    """The step and device of the dumps the lookup reads, as a selection, when its tree holds several (or one was
    asked for); else the request (empty: any result)."""
    from precision_tool.formats.dump_tree import DumpSelection

    try:
        scan = lookup.dump_scan(required=False)
    except PrecisionToolError:  # the dumps' own error is the dump section's to say
        scan = None
    choice = scan.choice if scan is not None else None
    if choice is None or choice.step is None or (len(choice.held) < 2 and lookup.selection.empty):
        return lookup.selection
    return DumpSelection(choice.step, choice.device)


def add_compare_section(report: Report, data: dict, op_name: str, lookup, path: Optional[str] = None) -> None:
    """This op's rows of the comparison result at ``path`` (:func:`result_for`), or a line saying there is none."""
    from precision_tool.commands.compare_rows import compare_rows_for_op

    from precision_tool.reports.result_store import position_text, recorded_position

    if path is None:
        asked = shown_dumps(lookup)
        of = f" of {position_text(asked.step, asked.device)}" if not asked.empty else ""
        report.add_text(f"Comparison result{of}: none under {lookup.workspace.temp} ('ac -c' or 'compare' writes one; "
                        f"-f RESULT reads one written elsewhere, as with -o)")
        data["compare"] = None
        return
    try:
        headers, rows = compare_rows_for_op(path, op_name)
    except PrecisionToolError as error:
        report.add_text(f"Comparison result: {error}")
        data["compare"] = {"path": path, "error": str(error)}
        return
    position = position_text(*recorded_position(path))
    shown = f"{path} ({position})" if position else path
    if rows:
        report.add_table(headers, rows, title=f"Comparison result {shown}")
    else:
        report.add_text(f"Comparison result {shown}: no row for this op")
    data["compare"] = {"path": path, "headers": headers, "rows": rows}


def add_local_error_section(report: Report, data: dict, op_name: str, path: Optional[str]) -> None:
    """Local vs total error of this op's outputs from the lossless rows of the result at ``path`` (``ac -c``
    replays; see docs/local-error.md), or why there is none; then what the run's one judgment says of the op
    (:func:`judgment_line`)."""
    from precision_tool.comparison.attribution import percent, ratio_of, standard_text
    from precision_tool.reports.result_store import load_result

    if path is None:
        data["local_error"] = None
        return
    try:
        stored = load_result(path)
        rows = [row for _, row in stored.rows_of_op(op_name) if row.kind == "output" and row.compared]
    except PrecisionToolError as error:
        data["local_error"] = {"error": str(error)}
        return
    measured = [row for row in rows if row.local_error is not None]
    if not measured:
        notes = [note for row in rows for note in row.notes if note.startswith("not replayed: ")]
        why = notes[0] if notes else (f"not measured in {os.path.basename(path)}: that run replayed nothing ('compare' "
                                      "and 'ac -c --no-replay' do not; 'ac -c' replays each op when tf/graph and "
                                      "TensorFlow are there)")
        report.add_text(f"Local error: {why}")
        data["local_error"] = {"rows": [], "why": why}
    else:
        table, figures = [], []
        for row in measured:
            local, floor = float(row.local_error or 0.0), float(row.local_floor or 0.0)
            ratio = ratio_of(row)
            total = row.metric("RelativeEuclideanDistance")
            standard = standard_text(row.op_type, row.npu_dtype, row.local_floor, row.local_spec_error)
            table.append([f"{row.kind}:{row.tensor_index}", percent(local), percent(floor), f"{ratio:.3g}",
                          percent(row.inherited_error), percent(total), standard or "-", row.local_method])
            figures.append({"tensor": row.tensor_id, "local": local, "floor": floor,
                            "ratio": ratio if floor else None, "inherited": row.inherited_error, "total": total,
                            "method": row.local_method, "spec_error": row.local_spec_error, "standard": standard})
        report.add_table(["tensor", "local", "floor", "local/floor", "inherited", "total", "Ascend standard",
                          "measured by"], table,
                         title="Local error (NPU vs the op replayed on its own dumped inputs; total = vs the "
                               "reference)")
        data["local_error"] = {"rows": figures}
    line = judgment_line(stored, op_name)
    report.add_text(line)
    data["judgment"] = line


def judgment_line(stored, op_name: str) -> str:
    """``Judgment: ...``: what the run's one judgment (:mod:`precision_tool.comparison.judgment`) says of the op --
    the culprit (``ac``'s when ``ac -c`` wrote the run), or whether it adds error of its own, and its outputs
    below the rounding noise or underflowing."""
    comparison = stored.comparison
    judgment = comparison.verdict
    if not judgment.same_model:
        return "Judgment: none -- the two runs do not compute the same model"
    measured = judgment.attribution.op(op_name)
    parts = []
    if stored.culprit_name == op_name:
        ac = stored.ac_culprit
        how = ac.get("evidence") if ac is not None else (comparison.culprit.how if comparison.culprit else "")
        parts.append(f"the run's culprit, by {how}")
    rows = [row for row in comparison.results if row.op_name == op_name and row.kind == "output"]
    noise = [row for row in rows if row.status.value == "BELOW_NOISE"]
    if measured is None and noise:
        parts.append("its outputs are rounding noise of sums that cancel, judged on absolute error (BELOW_NOISE): "
                     "relative figures -- local, inherited, total -- compare two noises and say nothing")
    elif measured is None:
        parts.append("its own error is not measured (no compared output)")
    elif not measured.measured:
        parts.append(f"its own error is not measured ({measured.why_not})")
    elif measured.beyond_spec:
        parts.append(f"it adds error of its own beyond Ascend's operator standard ({measured.ratio_text}; "
                     f"{measured.spec_text})")
    elif measured.standout:
        parts.append(f"it adds error of its own and stands out ({measured.ratio_text})")
    elif not measured.within_floor:
        parts.append(f"it exceeds its floor without standing out ({measured.ratio_text})")
    else:
        parts.append(f"it adds no error of its own ({measured.ratio_text})")
    for fault in judgment.systemic:
        if op_name in fault.ops:
            parts.append(f"part of a systemic fault: {fault.text}")
    if noise and measured is not None:
        parts.append(f"{len(noise)} output(s) are rounding noise, passing on absolute error")
    underflow = [row for row in judgment.underflow if row.op_name == op_name and row.kind == "output"]
    if underflow:
        parts.append(f"{len(underflow)} output(s) are float16 underflow")
    return "Judgment: " + "; ".join(parts)


def add_attribute_section(report: Report, data: dict, op) -> None:
    """Every op attribute, values shortened to one line."""
    rows = []
    for key in sorted(op.attrs):
        text = " ".join(repr(op.attrs[key]).split())
        if len(text) > MAX_ATTR_TEXT:
            text = text[: MAX_ATTR_TEXT - 3] + "..."
        rows.append([key, text])
    report.add_table(["attribute", "value"], rows, title="Attributes")
    data["attrs"] = {key: repr(value) for key, value in op.attrs.items()}
