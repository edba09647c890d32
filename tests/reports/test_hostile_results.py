"""Hostile and broken result files -- the result CSV, the lossless ``result_*.jsonl``, ``summary.json`` -- end in
one line naming the file (and the line) and exit 2: never a traceback, a hang or a memory blow-up (issue 14).

Every file here is written by hand, byte for byte, so the expectations do not come from our own writers.
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case
from precision_tool.cli import main
from precision_tool.errors import ResultCsvError, ResultFileError
from precision_tool.reports import result_csv
from precision_tool.reports.result_csv import read_result_csv
from precision_tool.reports.result_store import load_result, read_results_file
from precision_tool.reports.summary import summary_for_csv

HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
          "MaxAbsoluteError,CompareFailReason\r\n")
GOOD_ROW = "1,Add,op0,float16,0,op0,float32,op0:output:0,[4],0.5,1.0,\r\n"
CSV_NAME = "result_20260101000000.csv"


def write_csv(folder, *rows, name=CSV_NAME):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(str(folder), name)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(HEADER + "".join(rows))
    return path


def one_error_line(capsys, argv):
    """Run the CLI; return its exit code and its only stderr line (asserting there is exactly one)."""
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.count("\n") == 1, captured.err
    return code, captured.err.rstrip("\n")


# --------------------------------------------------------------------------------------------- result CSV
@pytest.mark.parametrize("row, cause", [
    ("\u00b2,Add,op0,float16,0,op0,float32,op0:output:0,[4],0.5,1.0,\r\n",
     "line 2: Index '\u00b2' is not a whole number of at most 18 digits"),
    ("\u0661,Add,op0,float16,0,op0,float32,op0:output:0,[4],0.5,1.0,\r\n",  # ARABIC-INDIC ONE: int() takes it
     "line 2: Index '\u0661' is not a whole number of at most 18 digits"),
    ("9" * 5000 + ",Add,op0,float16,0,op0,float32,op0:output:0,[4],0.5,1.0,\r\n",
     "line 2: Index '" + "9" * 40 + "...' is not a whole number of at most 18 digits"),
    ("1,Add,op0,float16,0,op0,float32,op0:output:\u00b2,[4],0.5,1.0,\r\n",
     "line 2: TensorIndex 'op0:output:\u00b2' does not end in a tensor number of at most 9 ASCII digits"),
    ("1,Add,op0,float16,0,op0,float32,op0:input:" + "7" * 5000 + ",[4],0.5,1.0,\r\n",
     "line 2: TensorIndex 'op0:input:" + "7" * 30 + "...' does not end in a tensor number of at most 9 ASCII "
     "digits"),
    ("1,Add,op\x1b[31m,float16,0,op0,float32,x:output:\x07,[4],0.5,1.0,\r\n",
     "line 2: TensorIndex 'x:output:\\x07' does not end in a tensor number of at most 9 ASCII digits"),
])
def test_a_bad_index_in_the_csv_is_one_line_naming_file_and_line(tmp_path, capsys, row, cause):
    path = write_csv(tmp_path, GOOD_ROW.replace("1,", "0,", 1), row)
    row_line = 3
    cause = cause.replace("line 2:", f"line {row_line}:")
    with pytest.raises(ResultCsvError) as raised:
        read_result_csv(path)
    assert str(raised.value) == f"{path}: {cause}"
    assert one_error_line(capsys, ["vcs", "-f", path]) == (2, f"precision_tool: error: {path}: {cause}")


def test_exact_cells_still_read_as_before(tmp_path):
    path = write_csv(tmp_path, "NaN,Add,gone,NaN,NaN,*,NaN,NaN,NaN,NaN,NaN,\r\n",
                     "-1,Add,op0,float16,0,op0,float32,op0:output:123456789,\"[1, 2]\",0.5,1.0,\r\n",
                     "7,Add,op:x,float16,0,op0,float32,some free text,[\u00b2],NaN,NaN,\r\n")
    rows = read_result_csv(path).rows
    assert [row.index for row in rows] == [-1, -1, 7]
    assert [(row.op_name, row.kind, row.tensor_index) for row in rows] == \
        [("gone", "", -1), ("op0", "output", 123456789), ("op:x", "", -1)]
    assert [row.shape for row in rows] == [None, (1, 2), None]  # Shape is display text: '[²]' is unknown
    assert [row.status.value for row in rows] == ["NO_DUMP", "FAIL", "NOT_COMPARED"]


def test_a_row_longer_than_the_bound_is_refused_before_it_is_split(tmp_path, monkeypatch):
    monkeypatch.setattr(result_csv, "MAX_ROW_CHARS", 200)
    path = write_csv(tmp_path, GOOD_ROW, "," * 201 + "\r\n")
    with pytest.raises(ResultCsvError) as raised:
        read_result_csv(path)
    assert str(raised.value) == f"{path}: line 3: a row is longer than 200 characters: not a result CSV"
    quoted_lines = '1,Add,op0,float16,0,"' + "x\r\n" * 80 + '",float32,op0:output:0,[4],0.5,1.0,\r\n'
    with pytest.raises(ResultCsvError, match="a row is longer than 200 characters"):  # line breaks count too
        read_result_csv(write_csv(tmp_path / "quoted", quoted_lines))
    fits = "1,Add,op0,float16,0,op0,float32,op0:output:0,[4],0.5,1.0," + "x" * (199 - len(GOOD_ROW)) + "\r\n"
    assert len(fits) == 199 and len(HEADER) < 200  # each row under the bound; header and rows together over it
    assert len(read_result_csv(write_csv(tmp_path / "fits", fits, fits, fits)).rows) == 3


@pytest.mark.parametrize("content, cause", [
    (HEADER.encode() + b"1,Add,op\xff,float16\r\n", "is not UTF-8 text (invalid start byte)"),
    (HEADER.encode() + b'1,Add,"' + b"x" * 200000 + b'",\r\n', "line 2: not CSV (field larger than field limit "
                                                                 "(131072))"),
    (b"", "is empty; a result CSV starts with msaccucmp's header line"),
    (b"\xef\xbb\xbfa,b\r\n", "header lacks Index, OpType, NPUDump, GroundTruth, TensorIndex: not a compare result "
                             "CSV"),
])
def test_undecodable_or_unparsable_csv(tmp_path, content, cause):
    path = tmp_path / CSV_NAME
    path.write_bytes(content)
    with pytest.raises(ResultCsvError) as raised:
        read_result_csv(path)
    assert str(raised.value) == f"{path}: {cause}"


def _cli(*argv, timeout=60):
    """The CLI in a child process, so that a regression that hangs fails the test instead of the suite."""
    return subprocess.run([sys.executable, "-m", "precision_tool", *argv], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("make, kind", [(os.mkfifo, "is a FIFO (named pipe)"),
                                        (lambda path: os.symlink("/dev/zero", path), "is a character device")])
@pytest.mark.parametrize("command", ["vcs", "report"])
def test_a_fifo_or_dev_zero_named_like_a_result_is_refused_not_read(tmp_path, make, kind, command):
    folder = tmp_path / "results"
    folder.mkdir()
    make(str(folder / CSV_NAME))
    extra = ["-o", str(tmp_path / "page.html"), "--no-checks"] if command == "report" else []
    done = _cli(command, "-f", str(folder), *extra)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == f"precision_tool: error: {folder / CSV_NAME}: {kind}, not a regular file\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("beside", ["summary.json", "result_20260101000000.jsonl"])
def test_a_fifo_beside_the_csv_is_refused_not_skipped(tmp_path, beside):
    path = write_csv(tmp_path, GOOD_ROW)
    os.mkfifo(str(tmp_path / beside))
    done = _cli("vcs", "-f", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"precision_tool: error: {tmp_path / beside}: is a FIFO (named pipe), not a "
                                  "regular file")


@pytest.mark.parametrize("swap, kind", [
    (lambda path: (os.remove(path), os.symlink(path + ".gone", path)), "does not exist (or is a dangling symlink)"),
    (lambda path: (os.remove(path), os.mkdir(path)), "is a folder, not a regular file"),
])
def test_the_csv_beside_a_good_results_file_must_be_a_file_too(tmp_path, capsys, swap, kind):
    case = chain_case(tmp_path / "case", names=["op0", "op1"])
    assert main(["compare", "-m", case.npu, "-g", case.ref, "-f", case.graph, "-out", str(tmp_path / "out")]) == 0
    (name,) = [name for name in os.listdir(tmp_path / "out") if name.endswith(".csv")]
    csv_path = str(tmp_path / "out" / name)
    capsys.readouterr()
    swap(csv_path)  # the rows would come from the lossless file; the CSV in its place is still named
    assert one_error_line(capsys, ["vcs", "-f", str(tmp_path / "out")]) == \
        (2, f"precision_tool: error: {csv_path}: {kind}")


def test_a_missing_symlink_target_and_a_symlink_loop_are_one_line(tmp_path, capsys):
    dangling = tmp_path / "a" / CSV_NAME
    dangling.parent.mkdir()
    dangling.symlink_to(tmp_path / "nowhere.csv")
    assert one_error_line(capsys, ["vcs", "-f", str(dangling.parent)]) == \
        (2, f"precision_tool: error: {dangling}: does not exist (or is a dangling symlink)")
    loop = tmp_path / "b" / CSV_NAME
    loop.parent.mkdir()
    loop.symlink_to(loop)
    assert one_error_line(capsys, ["vcs", "-f", str(loop.parent)]) == \
        (2, f"precision_tool: error: {loop}: cannot open: a symlink loop")


# --------------------------------------------------------------------------------------------- summary.json
def _summary_beside(folder, text):
    path = write_csv(folder, GOOD_ROW)
    (folder / "summary.json").write_text(text, encoding="utf-8")
    return path


def _summary(**fields):
    data = {"result_csv": CSV_NAME, "exit_code": 1, "cosine_threshold": 0.99, "order": ["op0"],
            "order_source": "graph", "data_inputs": {}, "counts": {"compared": 1},
            "coverage": {"aligned_count": 1, "unreadable": []}, "failing": [{"tensor_id": "op0:output:0"}],
            "inputs": {"npu": "/n", "reference": None}}
    data.update(fields)
    return json.dumps(data)


@pytest.mark.parametrize("text, cause", [
    (_summary(counts={"compared": "1"}), "counts.compared is a string, not a count"),
    (_summary(counts=[1]), "counts is a list, not an object"),
    (_summary(coverage=[1, 2]), "coverage is a list, not an object"),
    (_summary(coverage={"unreadable": [["a.dump"]]}), "coverage.unreadable[0] is a list, not a [string, string] "
                                                       "pair"),
    (_summary(coverage={"npu_tensors": -3}), "coverage.npu_tensors is a number, not a count"),
    (_summary(order="op0"), "order is a string, not a list"),
    (_summary(order=["op0", 7]), "order[1] is a number, not a string"),
    (_summary(data_inputs={"op1": [["op0", "0"]]}), "data_inputs['op1'][0] is a list, not a [string, count] pair"),
    (_summary(failing={"tensor_id": "x"}), "failing is an object, not a list"),
    (_summary(failing=[{"tensor": "x"}]), "failing[0] is an object, not an object with a tensor_id string"),
    (_summary(inputs=["/n"]), "inputs is a list, not an object"),
    (_summary(cosine_threshold="0.99"), "cosine_threshold is a string, not a number from -1 to 1"),
    (_summary(cosine_threshold=7), "cosine_threshold 7 is not a number from -1 to 1"),
    (_summary(exit_code=True), "exit_code is true/false, not 0, 1 or 2"),
    (_summary(timing={"workers": 1.5}), "timing.workers is a number, not a count"),
    (_summary(first_divergence=[1]), "first_divergence is a list, not an object"),
    ("[1]", "the summary is a list, not an object"),
    ('{"result_csv": 7}', "result_csv is a number, not a file name"),
    ('{"result_csv": "' + CSV_NAME + '", "order": ' + "[" * 100000 + "]" * 100000 + "}",
     "is not JSON (nested too deeply)"),
    ('{"result_csv": "' + CSV_NAME + '", "exit_code": ' + "9" * 5000 + "}",
     "is not JSON (an integer of 5,000 digits, more than 30)"),
    ('{"result_csv": "' + CSV_NAME + '", "cosine_threshold": NaN}',
     "is not JSON (NaN is not JSON (non-finite numbers are written as strings))"),
])
def test_a_damaged_summary_naming_the_csv_is_one_line(tmp_path, capsys, text, cause):
    path = _summary_beside(tmp_path, text)
    summary = tmp_path / "summary.json"
    expected = f"{summary}: {cause} (move it aside to read the result without it)"
    with pytest.raises(ResultFileError) as raised:
        summary_for_csv(path)
    assert str(raised.value) == expected
    assert one_error_line(capsys, ["vcs", "-f", path]) == (2, f"precision_tool: error: {expected}")


def test_a_summary_of_another_run_is_not_read_further_and_a_good_one_is_used(tmp_path, capsys):
    path = _summary_beside(tmp_path, _summary(result_csv="result_20990101000000.csv", counts="anything"))
    assert summary_for_csv(path) is None and load_result(path).origin == "csv"
    (tmp_path / "summary.json").write_text(_summary(failing=[]), encoding="utf-8")
    stored = load_result(path)  # the summary's list of failing tensors decides the cosine-gated row: none fail
    assert stored.origin == "csv+summary" and stored.comparison.facts.order == ("op0",)
    assert [row.status.value for row in stored.comparison.results] == ["PASS"]
    assert stored.inputs == {"npu": "/n", "reference": None}


# --------------------------------------------------------------------------------------------- result_*.jsonl
def _results_header(**facts):
    data = {"mode": "npu_vs_tf", "order": ["op0"], "order_source": "graph", "data_inputs": {}, "coverage": None}
    data.update(facts)
    return ('{"format": "precision_tool.results", "version": 1, "result_csv": "' + CSV_NAME +
            '", "cosine_threshold": 0.99, "facts": ' + json.dumps(data) + ', "inputs": {}, "timing": {}}')


@pytest.mark.parametrize("lines, cause", [
    ([_results_header(order="op0")], "line 1: malformed header (facts.order is a string, not a list)"),
    ([_results_header(coverage={"aligned_count": "1"})],
     "line 1: malformed header (facts.coverage.aligned_count is a string, not a count)"),
    ([_results_header(data_inputs=[])], "line 1: malformed header (facts.data_inputs is a list, not an object)"),
    ([_results_header(sources={"w": 3})], "line 1: malformed header (facts.sources['w'] is a number, not a string)"),
    ([_results_header().replace('"version": 1', '"version": ' + "1" * 31)],
     "line 1 is not JSON (an integer of 31 digits, more than 30)"),
    ([_results_header(), '{"index": ' + "1" * 5000 + "}"], "line 2 is not JSON (an integer of 5,000 digits, more "
                                                              "than 30)"),
    ([_results_header(), "[" * 100000], "line 2 is not JSON (nested too deeply)"),
    ([_results_header(), "[1]"], "line 2: malformed row (a row is an object, not a list)"),
    ([_results_header(), "{}"], "line 2: malformed row (it lacks 'metrics')"),
    (["", "   "], "is empty"),
    (['{"format": "other"}'], "line 1 is not a precision_tool.results header"),
])
def test_a_damaged_results_file_is_one_line_naming_file_and_line(tmp_path, capsys, lines, cause):
    path = write_csv(tmp_path, GOOD_ROW)
    results = tmp_path / CSV_NAME.replace(".csv", ".jsonl")
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = f"{results}: {cause} (move it aside to read the result CSV beside it instead, at six decimals)"
    with pytest.raises(ResultFileError) as raised:
        read_results_file(str(results))
    assert str(raised.value) == expected
    assert one_error_line(capsys, ["vcs", "-f", path]) == (2, f"precision_tool: error: {expected}")


def test_a_results_file_that_is_not_utf8_is_one_line(tmp_path):
    results = tmp_path / "result_20260101000000.jsonl"
    results.write_bytes(_results_header().encode() + b"\n{\"a\": \"\xff\"}\n")
    with pytest.raises(ResultFileError) as raised:
        read_results_file(str(results))
    assert str(raised.value).startswith(f"{results}: is not UTF-8 text (invalid start byte)")
