import json

from precision_tool.reports.format import OutputSettings, format_report, report_to_json
from precision_tool.reports.report import Report


def test_format_report_title_table_status():
    report = Report(title="Dumps", status="2 tensors").add_table(["op", "value"], [["-neg/Add", 1.5], ["1e5", 2]])
    text = format_report(report)
    assert text.splitlines()[0] == "Dumps"
    assert "-neg/Add" in text
    assert "1e5" in text  # op names that look like numbers are printed as they are
    assert text.endswith("2 tensors")


def test_long_tables_are_truncated_with_a_note():
    report = Report().add_table(["i"], [[i] for i in range(10)])
    text = format_report(report, OutputSettings(max_rows=3))
    assert "... 7 more rows not shown" in text


def test_empty_table_says_none():
    assert "(none)" in format_report(Report().add_table(["a"], []))


def test_json_is_strict_even_with_nan_and_inf():
    import numpy as np

    report = Report(title="t", exit_code=1, data={"cos": float("nan"), "max": np.float32(np.inf), "n": np.int64(3)})
    parsed = json.loads(report_to_json(report))
    assert parsed == {"title": "t", "status": "", "exit_code": 1, "data": {"cos": "nan", "max": "inf", "n": 3}}


def test_json_status_has_no_pointer_to_text_above():
    """A user walk found "exit 1: a check found a problem (see above)" in --json output, where nothing is above."""
    from precision_tool.reports.format import exit_line

    report = Report(title="t", status=exit_line(1, 0.5), exit_code=1)
    assert json.loads(report_to_json(report))["status"] == "exit 1: a check found a problem; 0.50 s"
    assert "(see above)" in format_report(report)  # the terminal keeps it
