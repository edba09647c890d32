"""``cp LEFT RIGHT [-p N] [-al ATOL] [-rl RTOL]``: compare two tensors.

LEFT is read as the NPU side and RIGHT as the reference (relative errors divide by RIGHT). Both take every form of
:mod:`.tensor_spec`; a whole dump file or op means its output 0, and a slice (``X:output:0[0]``) compares that part
only, read only where it lies (:mod:`.tensor_source`). The verdict is ``compare``'s own
(:func:`~precision_tool.comparison.worker.judge_pair`): the cosine gate and the honest statuses, the allclose ratio
against the dtype-aware tolerances reported but not judged unless ``-al``/``-rl`` ask for it, so a pair ``compare``
passes passes here too. The report adds msaccucmp's metrics, the N largest errors and the first N values side by
side, all with whole-array numpy operations. Exit code 1 when the pair fails, as in CI.
"""
from __future__ import annotations

from typing import List

import numpy as np

from precision_tool.commands.arg_hints import TENSOR, completes
from precision_tool.commands.options import add_cosine_option, add_run_option, non_negative_float, non_negative_int
from precision_tool.commands.command_registry import Command, Context
from precision_tool.commands.tensor_source import LoadedTensor, load_one_tensor
from precision_tool.metrics.array_stats import STATS_HEADERS, array_stats
from precision_tool.commands.lookups import lookup_for, with_graph_notes
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK
from precision_tool.formats.layouts import shape_text
from precision_tool.reports.report import Report

DEFAULT_COUNT = 10


def add_arguments(parser):
    from precision_tool.metrics import DEFAULT_COSINE_THRESHOLD

    completes(parser.add_argument("left", help="NPU side: dump file, .npy, OP:output:K, OP or TF_OP:K"), TENSOR)
    completes(parser.add_argument("right", help="reference side, same forms"), TENSOR)
    parser.add_argument("-p", "--print", dest="count", type=non_negative_int, default=DEFAULT_COUNT, metavar="N",
                        help=f"rows of the top-error and first-values tables (default {DEFAULT_COUNT})")
    parser.add_argument("-al", "--atol", type=non_negative_float, default=None,
                        help="absolute tolerance; giving -al or -rl makes allclose a gate (default: by dtype, "
                             "reported only, as compare does)")
    parser.add_argument("-rl", "--rtol", type=non_negative_float, default=None,
                        help="relative tolerance (default: by dtype); see -al")
    add_cosine_option(parser, DEFAULT_COSINE_THRESHOLD,
                      help_tail="; with -al/-rl a passing pair must also be allclose")
    add_run_option(parser, " (for op names on both sides)")
    parser.add_argument("--right-run", type=non_negative_int, default=None, metavar="N",
                        help="NPU run for op names on the right side (default: --run)")


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def handle(args, ctx: Context) -> Report:
    from precision_tool.comparison.worker import judge_pair

    right_run = args.run if args.right_run is None else args.right_run
    lookups = (lookup_for(ctx, args.run), lookup_for(ctx, right_run))
    for lookup in lookups:  # only this command's graph lookups (a shell session keeps the lookups)
        lookup.graph_notes = ()
    _, left, left_note = load_one_tensor(args.left, lookups[0])
    _, right, right_note = load_one_tensor(args.right, lookups[1])
    graph_notes = list(dict.fromkeys(lookups[0].graph_notes + lookups[1].graph_notes))
    result = judge_pair(left.array, right.array, cosine_threshold=args.cosine, dtype_labels=(left.dtype, right.dtype),
                        rtol=args.rtol, atol=args.atol)
    report = Report(title=f"{left.shown_label}  vs  {right.shown_label}")
    report.add_table(["side", "tensor", "stored", "dtype", "shape", *STATS_HEADERS],
                     [_side_row("left", left), _side_row("right", right)])
    tol = result.tolerance
    counted = (f"{result.compared_count} finite elements" if result.matched_non_finite  # the others match
               else str(result.element_count))
    summary = [["verdict", f"{result.status.value}: {result.reason}"],
               ["cosine", _number(result.cosine)],
               ["allclose", "-" if result.allclose_ratio is None else
                f"{result.allclose_ratio:.4%} within rtol {tol.rtol:g}, atol {tol.atol:g} "
                f"({result.mismatch_count} of {counted} outside)"],
               *([metric.name, metric.formatted if metric.reason is None else f"NaN ({metric.reason})"]
                 for metric in result.metrics if metric.name != "CosineSimilarity")]
    report.add_table(["metric", "value"], summary)
    notes = [note for note in (left_note, right_note, left.note, right.note, *result.notes, _allclose_note(result))
             if note]
    if notes:
        report.add_text(*(f"note: {note}" for note in notes))
    worst: List = []
    if args.count and left.array.size == right.array.size and result.compared_count:
        worst = _worst_table(report, left, right, args.count)
    first = _first_values_table(report, left, right, args.count) if args.count else []
    verdict = "passed" if result else "failed"
    report.status = verdict if result.status.cosine_gated else f"{verdict} ({result.status.value})"
    report.exit_code = EXIT_OK if result else EXIT_FAILED_CHECK
    report.data = {"left": left.shown_label, "right": right.shown_label, "status": result.status.value,
                   "passed": bool(result), "reason": result.reason, "cosine": result.cosine,
                   "allclose_ratio": result.allclose_ratio, "mismatch_count": result.mismatch_count,
                   "rtol": tol.rtol, "atol": tol.atol,
                   "metrics": {metric.name: metric.formatted for metric in result.metrics},
                   "worst": worst, "first_values": first, "notes": notes}
    return with_graph_notes(report, graph_notes)


def _allclose_note(result) -> str:
    """Say so when the allclose ratio is below the dtype's default but did not decide (as ``compare`` lists it)."""
    from precision_tool.metrics import DEFAULT_TOLERANCES

    default = DEFAULT_TOLERANCES[result.dtype].min_ratio
    if result.tolerance.min_ratio or result.allclose_ratio is None or result.allclose_ratio >= default - 1e-12:
        return ""
    return (f"allclose {result.allclose_ratio:.4%} is below the {result.dtype} default of {default:.4%}: "
            "reported, not failed, as compare does (give -al/-rl to make it a gate)")


def _side_row(side: str, tensor: LoadedTensor) -> list:
    return [side, tensor.shown_label, tensor.stored, str(tensor.array.dtype), shape_text(tensor.array.shape),
            *array_stats(tensor.array).cells()]


def _worst_table(report: Report, left: LoadedTensor, right: LoadedTensor, count: int) -> List[dict]:
    from precision_tool.metrics.errors_detail import worst_elements

    worst = worst_elements(left.array, right.array, count, "abs")
    rows = [[str(list(e.index)), f"{e.npu:.6g}", f"{e.reference:.6g}", f"{e.abs_error:.6g}",
             f"{e.rel_error:.6g}"] for e in worst]
    report.add_table(["index", "left", "right", "abs error", "rel error"], rows,
                     title=f"Largest {len(rows)} absolute errors")
    return [{"index": list(e.index), "left": e.npu, "right": e.reference, "abs_error": e.abs_error,
             "rel_error": e.rel_error} for e in worst]


def _first_values_table(report: Report, left: LoadedTensor, right: LoadedTensor, count: int) -> List[dict]:
    n = min(count, left.array.size, right.array.size)
    x: np.ndarray = left.array.reshape(-1)[:n].astype(np.float64)
    y: np.ndarray = right.array.reshape(-1)[:n].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(x - y)
    index = np.stack(np.unravel_index(np.arange(n), left.array.shape), axis=1) if left.array.ndim else np.zeros((n, 0))
    rows = [[str(list(map(int, idx))), f"{a:.6g}", f"{b:.6g}", f"{d:.6g}"]
            for idx, a, b, d in zip(index.tolist(), x.tolist(), y.tolist(), diff.tolist())]
    report.add_table(["index", "left", "right", "|left - right|"], rows, title=f"First {n} values (C order)")
    return [{"index": list(map(int, idx)), "left": a, "right": b} for idx, a, b in zip(index.tolist(), x.tolist(),
                                                                                       y.tolist())]


COMMAND = Command(
    name="cp",
    summary="Compare two tensors: verdict, cosine, allclose, msaccucmp metrics, top errors, values side by side.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("compare_tensors",),
    epilog="Examples:\n  cp conv1/Conv2D:output:0 conv1/Relu:0\n  cp a.npy b.npy -p 20 -al 1e-3 -rl 1e-3",
)
