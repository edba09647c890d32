"""Names from hostile dumps and graphs never reach the terminal raw (issue 14): every command's text, the
one-line errors and (in ``tests/shell``) the shell go through one sanitiser; ``--json`` keeps the exact name.

The workspace (:mod:`hostile_builders`) is written with the project's own writers; the expected escapes are
spelled out by hand (:data:`~hostile_builders.EVIL_SHOWN`), and "raw" is the definition of the issue: any C0
control but tab and newline, DEL, or a C1 control.
"""
import json
import os

import pytest

from hostile_builders import EVIL, EVIL_SHOWN, dump_of, write_hostile_workspace
from precision_tool.cli import main
from precision_tool.reports.format import OutputSettings, format_report, terminal_safe
from precision_tool.reports.report import Report


def raw_controls(text: str) -> list:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 127 <= ord(c) < 160]


def run(capsys, *argv):
    code = main([os.fspath(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def holds_exactly(value, wanted: str) -> bool:
    """``wanted`` is one of the strings of a JSON value, or part of one (a tensor label ``NAME:output:0``)."""
    if isinstance(value, str):
        return wanted in value
    if isinstance(value, dict):
        return any(holds_exactly(k, wanted) or holds_exactly(v, wanted) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_exactly(v, wanted) for v in value)
    return False


# --------------------------------------------------------------------------------------------- the sanitiser
def test_terminal_safe_escapes_exactly_the_controls_bidi_marks_and_surrogates():
    every = "".join(chr(code) for code in range(0x10000))
    expected = []
    for code in range(0x10000):
        if (code < 0x20 and code not in (0x09, 0x0A)) or 0x7F <= code <= 0x9F:
            expected.append("\\x%02x" % code)
        elif 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069 or 0xD800 <= code <= 0xDFFF:
            expected.append("\\u%04x" % code)
        else:
            expected.append(chr(code))
    assert terminal_safe(every) == "".join(expected)
    assert terminal_safe("\U0001F600 a/b\\x1b") == "\U0001F600 a/b\\x1b"  # astral and backslashes untouched


def test_format_report_escapes_every_piece_and_aligns_on_the_escapes():
    report = Report(title=f"title {EVIL}", status=f"status {EVIL}")
    report.add_table(["op", f"h{EVIL}"], [[EVIL, 8], ["x", None]], title=f"table {EVIL}")
    report.add_text(f"line {EVIL}", "second")
    text = format_report(report, OutputSettings(max_rows=5))
    assert raw_controls(text) == []
    lines = text.split("\n")
    assert lines[0] == f"title {EVIL_SHOWN}" and lines[-1] == f"status {EVIL_SHOWN}"
    assert f"table {EVIL_SHOWN}" in lines and f"line {EVIL_SHOWN}" in lines and "second" in lines
    header = next(line for line in lines if line.startswith("op"))
    row = next(line for line in lines if line.startswith(EVIL_SHOWN))
    # the second column starts where the escaped name's column ends: widths counted on the escapes
    assert header.index("h" + EVIL_SHOWN) == row.index("8") == len(EVIL_SHOWN) + 2


# --------------------------------------------------------------------------------------------- the commands
@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_hostile_workspace(tmp_path_factory.mktemp("hostile") / "ws")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return tmp_path_factory.mktemp("outputs")


def commands(ws: str, out) -> list:
    """(argv, whether ``--json`` carries the name) for every command that shows the name; ``compare`` comes
    before ``vcs`` and ``report``, which read its result."""
    evil_dump = dump_of(ws, EVIL)
    return [(["ls", "-n", "relu"], True), (["ni", EVIL], True), (["pt", evil_dump], True),
            (["pt", f"{EVIL}:output:0"], True), (["cp", f"{EVIL}:output:0", f"{EVIL}:0"], True),
            (["dc", evil_dump, "-o", out / "dc"], False), (["compare", "-o", out / "compare"], True),
            (["vcs", "-f", out / "compare"], True), (["report", "-f", out / "compare", "-o", out / "r.html"], True),
            (["ac", "-c", "--no-replay", "--workers", "1", "-o", out / "ac"], True)]


def test_every_command_shows_the_name_escaped_and_json_keeps_it(workspace, outputs, capsys):
    for argv, json_has_name in commands(workspace, outputs):
        code, out, err = run(capsys, "-d", workspace, *argv)
        assert code in (0, 1), (argv, err)
        assert raw_controls(out + err) == [], argv
        assert "Traceback" not in out + err
        assert EVIL_SHOWN in out, argv
        code_json, out_json, err_json = run(capsys, "-d", workspace, "--json", *argv)
        assert code_json == code and raw_controls(out_json + err_json) == [], argv
        if json_has_name:
            assert holds_exactly(json.loads(out_json)["data"], EVIL), argv


def test_error_lines_are_escaped_and_one_line(workspace, tmp_path, capsys):
    missing = tmp_path / f"no{EVIL}such"
    code, out, err = run(capsys, "-d", workspace, "dc", missing)
    assert code == 2 and out == "" and "Traceback" not in err
    assert raw_controls(err) == [] and err.count("\n") == 1
    assert err.startswith(f"precision_tool: error: {tmp_path}/no{EVIL_SHOWN}such")
