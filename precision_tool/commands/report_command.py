"""``report [-f RESULT] [-o FILE.html] [--plots DIR]``: one self-contained HTML page of a compare result.

Reads the latest result under ``WORKSPACE/temp/vector_compare`` (where ``ac -c`` and ``compare`` write), or ``-f`` a
result CSV or a folder holding one, with the ``summary.json`` beside it, and writes the page
(:mod:`precision_tool.reports.html`) beside the CSV as ``report_{timestamp}.html`` unless ``-o`` says where;
``--plots DIR`` also writes the plots as SVG files, and as PNG when Chromium is installed. Exit codes, as ``vcs``
(:func:`~precision_tool.comparison.judgment.exit_code`): 0 every compared tensor passes and no culprit is named, 1
some fail or a culprit is named (the page is written either way), 2 the runs do not compute the same model, nothing
was compared or some input files could not be read (and nothing fails), no result to read, or nowhere to write.
"""
from __future__ import annotations

import os

from precision_tool.commands.command_registry import Command, Context
from precision_tool.errors import WorkspaceError
from precision_tool.metrics.tensor_verdict import threshold_text


def add_arguments(parser):
    from precision_tool.commands.options import add_cosine_option, add_result_file_option, non_negative_int
    from precision_tool.reports.html import DEFAULT_DETAILS, DEFAULT_WORST

    add_result_file_option(parser)
    parser.add_argument("-o", "--output", dest="output", default=None, metavar="FILE.html",
                        help="where to write the page (default: report_{timestamp}.html beside the CSV)")
    parser.add_argument("--plots", default=None, metavar="DIR",
                        help="also write the plots into DIR as SVG, and as PNG when Chromium is installed")
    add_cosine_option(parser, None, default_text="the run's threshold, else 0.99")
    parser.add_argument("--details", type=non_negative_int, default=DEFAULT_DETAILS, metavar="N",
                        help=f"element error histograms for the first N failing tensors (default {DEFAULT_DETAILS}; "
                             "0 = all)")
    parser.add_argument("--worst", type=non_negative_int, default=DEFAULT_WORST, metavar="N",
                        help=f"worst elements listed per failing tensor (default {DEFAULT_WORST})")
    parser.add_argument("--no-checks", dest="checks", action="store_false",
                        help="leave out ac's overflow and fusion checks (the verdict is then the comparison's "
                             "judgment, or ac's when ac -c wrote the result)")
    parser.add_argument("--graph-only", action="store_true",
                        help="a page with the graph view alone (the NPU graph coloured by error; default name "
                             "graph_{timestamp}.html beside the CSV)")


def handle(args, ctx: Context):
    from precision_tool.reports.result_outputs import require_result_folder
    from precision_tool.reports.html import build_report, default_report_path, ensure_report_folder, write_report
    from precision_tool.reports.report import Report
    from precision_tool.comparison.judgment import exit_code
    from precision_tool.reports.summary import exit_status, unusable_inputs, unusable_note

    from precision_tool.commands.stats_views import statistics_report, stored_statistics_for

    statistics = stored_statistics_for(args.file, ctx.data_dir, ctx.selection)
    if statistics is not None:
        return statistics_report(statistics, 0, "report", "No HTML report of a statistics run: it holds no tensor "
                                 "to plot or replay. 'report' on the full dump of the suspects draws one.")
    target = args.file or require_result_folder(ctx.data_dir)
    data = build_report(target, threshold=args.cosine, data_dir=ctx.data_dir, run_checks=args.checks,
                        details=args.details, worst=args.worst, graph_only=args.graph_only, selection=ctx.selection)
    inputs = data.inputs
    default_path = default_report_path(data.csv_path)
    if args.graph_only:
        folder, name = os.path.split(default_path)
        default_path = os.path.join(folder, name.replace("report_", "graph_", 1))
    if args.graph_only and not data.graph:
        raise WorkspaceError(f"{data.csv_path}: no graph to draw (the result names no readable Build graph and no "
                             f"execution order)", "compare with -f GRAPH, or from a workspace with its graph")
    html_path = ensure_report_folder(args.output or default_path, inputs)
    try:
        write_report(data, html_path, graph_only=args.graph_only)
    except OSError as error:
        raise WorkspaceError(f"{html_path}: cannot write the report ({error.strerror or error})") from None
    lines = [f"Report: {html_path} ({os.path.getsize(html_path) / 1024:.0f} KB, self-contained; open it in any "
             "browser)"]
    plots = None
    if args.plots:
        from precision_tool.reports.html.export import write_plots

        ensure_report_folder(os.path.join(args.plots, "plot.svg"), inputs)
        try:
            plots = write_plots(data, args.plots)
        except OSError as error:
            raise WorkspaceError(f"{args.plots}: cannot write the plots ({error.strerror or error})") from None
        lines.append(f"Plots: {len(plots.files)} file(s) in {args.plots}" + (f" ({plots.png_note})"
                                                                            if plots.png_note else ""))
    failing = len(data.failing_rows)
    headline = data.findings.verdict.headline if data.findings is not None else (
        f"Culprit: {data.culprit}, by {data.culprit_evidence}." if data.culprit else "No culprit found."
        if data.same_model else
        "No verdict: the two runs do not compute the same model.")
    report = Report(title=f"{data.csv_path}: {data.counts['compared']} tensors compared, {failing} failing at cosine "
                          f"{threshold_text(data.threshold)}")
    report.add_text(headline, *lines)
    unusable = unusable_inputs(data.facts.coverage if data.facts is not None else None)
    if unusable:
        report.add_text(unusable_note(unusable))
    report.exit_code = exit_code(failing > 0, bool(data.culprit), data.counts["compared"], len(unusable),
                                 data.same_model)
    report.status = exit_status(report.exit_code, failing, data.counts["compared"], len(unusable), data.culprit,
                                data.same_model)
    report.data = {"html": os.path.abspath(html_path), "csv": data.csv_path, "compared": data.counts["compared"],
                   "failing": failing, "first_divergence": data.first_divergence,
                   "unusable_inputs": [list(item) for item in unusable],
                   "verdict": data.findings.verdict.to_dict() if data.findings is not None else None,
                   "plots": list(plots.files) if plots is not None else [],
                   "png_note": plots.png_note if plots is not None else None}
    return report


COMMAND = Command(
    name="report",
    summary="Write one self-contained HTML page of a compare result: verdict, plot, failing tensors, table.",
    add_arguments=add_arguments,
    handler=handle,
    aliases=("html",),
    epilog=("Example: precision_tool -d precision_data report -o accuracy.html --plots plots/\n"
            "Exit codes: 0 every compared tensor passes and no culprit is named, 1 some fail or a culprit is named "
            "(the page is written either way), 2 the runs do not compute the same model, nothing compared or some "
            "inputs of the run unreadable (and nothing fails), no result to read (run ac -c or compare first) or "
            "nowhere to write."),
)
