"""The lossless result file and reading results back: exact round trip, exact re-judging at another threshold,
the fallbacks (an older CSV + summary.json, a bare CSV) and one-line errors for a damaged file."""
import contextlib
import io
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))
sys.path.insert(0, os.path.dirname(__file__))

from cmp_builders import chain_case
from html_builders import tensor
from precision_tool.cli import main
from precision_tool.comparison import CompareRequest, ComparisonResult, RunFacts, run_comparison
from precision_tool.errors import ResultFileError
from precision_tool.reports.result_csv import write_result_csv
from precision_tool.reports.result_outputs import plan_outputs, write_outputs
from precision_tool.reports.result_store import (FROM_CSV, FROM_CSV_AND_SUMMARY, FROM_RESULTS_FILE, load_result,
                                                 read_results_file, results_path_for, write_results_file)
from precision_tool.status import Status

NAMES = ["op0", "op1", "op2", "op3", "op4"]


def _quiet(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    case = chain_case(root / "case", names=NAMES, break_at="op2", nan_at="op0", no_ref=["op4"])
    result = run_comparison(CompareRequest(case.npu, case.ref, case.graph, workers=1))
    paths = plan_outputs(str(root / "out"), str(root / "unused"), [case.npu, case.ref, case.graph])
    write_outputs(result, paths)
    return case, result, paths


def test_every_row_comes_back_exactly_as_the_engine_made_it(broken):
    _case, result, paths = broken
    header, back = read_results_file(paths.results)
    assert header["result_csv"] == os.path.basename(paths.csv)
    assert back.results == result.results  # dataclass equality: every float bit for bit, statuses, reasons
    assert back.facts.order == result.facts.order and back.facts.data_inputs == result.facts.data_inputs
    assert back.facts.coverage == result.facts.coverage and back.divergence == result.divergence
    assert back.inputs == result.inputs and back.exit_code() == result.exit_code() == 1
    assert all(isinstance(row.status, Status) for row in back.results)


def test_strict_json_with_non_finite_floats_as_text(broken):
    _case, _result, paths = broken
    with open(paths.results, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    for line in lines:  # RFC 8259 JSON: no NaN/Infinity literals, so jq and other readers take it
        json.loads(line, parse_constant=lambda name: pytest.fail(f"non-standard constant {name}"))
    assert len(lines) == 1 + len(read_results_file(paths.results)[1].results)


@pytest.mark.parametrize("threshold", [0.5, 0.9999, 1.0])
def test_judging_again_equals_a_fresh_compare_at_that_threshold(broken, tmp_path, threshold):
    case, _result, paths = broken
    stored = load_result(paths.csv, threshold)
    fresh = run_comparison(CompareRequest(case.npu, case.ref, case.graph, cosine=threshold, workers=1))
    assert stored.origin == FROM_RESULTS_FILE and stored.threshold == threshold
    assert [(r.tensor_id, r.status) for r in stored.comparison.results] == \
        [(r.tensor_id, r.status) for r in fresh.results]
    assert stored.comparison.divergence == fresh.divergence


def test_a_cosine_the_csv_rounds_up_still_fails(tmp_path):
    # 0.9899996 prints as 0.990000: read from the CSV alone it would pass at 0.99; the result file keeps it
    rows = [tensor(0, "a", cosine=1.0), tensor(1, "b", cosine=0.9899996, status="FAIL")]
    facts = RunFacts("npu_vs_tf", ("a", "b"), "graph", {"b": (("a", 0),)})
    result = ComparisonResult.judged(rows, facts, 0.99)
    csv_path = str(tmp_path / "result_20260101000000.csv")
    write_result_csv(csv_path, result.results)
    write_results_file(results_path_for(csv_path), result, csv_path)
    with open(csv_path, encoding="utf-8") as handle:
        assert ",0.990000," in handle.read()
    stored = load_result(csv_path)
    assert [r.status for r in stored.comparison.results] == [Status.PASS, Status.FAIL]
    assert stored.comparison.divergence.first.op_name == "b"
    os.remove(results_path_for(csv_path))
    bare = load_result(csv_path)
    assert bare.origin == FROM_CSV and [r.status for r in bare.comparison.results] == [Status.PASS, Status.PASS]


def test_older_results_fall_back_to_csv_and_summary(broken, tmp_path):
    _case, result, paths = broken
    folder = tmp_path / "old"
    folder.mkdir()
    for name in (paths.csv, paths.summary):
        (folder / os.path.basename(name)).write_bytes(open(name, "rb").read())
    stored = load_result(str(folder))
    assert stored.origin == FROM_CSV_AND_SUMMARY
    assert stored.comparison.facts.order == result.facts.order
    assert [(r.tensor_id, r.status) for r in stored.comparison.results] == \
        [(r.tensor_id, r.status) for r in result.results]
    assert stored.comparison.divergence.first.op_name == result.divergence.first.op_name


def test_a_result_file_of_another_csv_is_not_used(broken, tmp_path):
    _case, _result, paths = broken
    csv_copy = tmp_path / "result_20990101000000.csv"
    csv_copy.write_bytes(open(paths.csv, "rb").read())
    (tmp_path / "result_20990101000000.jsonl").write_bytes(open(paths.results, "rb").read())
    assert load_result(str(csv_copy)).origin == FROM_CSV  # the header names the other CSV


@pytest.mark.parametrize("damage, message", [
    (lambda lines: ["{not json"] + lines[1:], "line 1 is not JSON"),
    (lambda lines: [lines[0].replace('"version": 2', '"version": 7')] + lines[1:], "version 7"),
    (lambda lines: lines[:2] + ['{"index": "x"}'] + lines[3:], "line 3: malformed row"),
    (lambda lines: lines[:2] + ['[' * 100000 + ']' * 100000], "line 3 is not JSON"),
    (lambda lines: lines[:1] + [lines[1].replace('"status": "', '"status": "NOPE')] + lines[2:],
     "line 2: malformed row"),
    (lambda lines: lines[:1] + [lines[1].replace('"shape": [', '"shape": ["1", ')] + lines[2:],
     "line 2: malformed row"),
    (lambda lines: lines[:1] + [lines[1].replace('"notes": [', '"notes": "x", "n": [')] + lines[2:],
     "line 2: malformed row"),
    (lambda lines: [lines[0].replace('"cosine_threshold": 0.99', '"cosine_threshold": "nan"')] + lines[1:],
     "cosine_threshold is a string, not a number from -1 to 1"),
    (lambda lines: [lines[0].replace('"cosine_threshold": 0.99', '"cosine_threshold": NaN')] + lines[1:],
     "NaN is not JSON"),
])
def test_a_damaged_result_file_is_a_one_line_error_naming_file_and_line(broken, tmp_path, capsys, damage, message):
    _case, _result, paths = broken
    csv_path = tmp_path / os.path.basename(paths.csv)
    csv_path.write_bytes(open(paths.csv, "rb").read())
    with open(paths.results, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    results = tmp_path / os.path.basename(paths.results)
    results.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    with pytest.raises(ResultFileError, match=message):
        load_result(str(csv_path))
    assert main(["vcs", "-f", str(csv_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(results) in err and message in err


def test_vcs_ni_and_report_read_the_same_rows(broken, tmp_path, capsys):
    _case, result, paths = broken
    assert main(["--json", "vcs", "-f", paths.csv, "-l", "0"]) == 1
    data = json.loads(capsys.readouterr().out)["data"]
    failing = [r for r in result.results if r.compared and not r.passed]
    assert [item["tensor_id"] for item in data["failing"]][0] == result.divergence.first.op_name + ":output:0"
    assert sorted(item["tensor_id"] for item in data["failing"]) == sorted(r.tensor_id for r in failing)
    assert {item["tensor_id"]: item["cosine"] for item in data["failing"]} == \
        {r.tensor_id: r.cosine for r in failing}  # full precision, not six decimals


def test_a_name_with_unicode_line_separators_round_trips(tmp_path):
    odd = "a\u2028b\x85c\u2029d"  # str.splitlines() would cut a JSON line at each of these
    rows = [tensor(0, odd, cosine=0.5, status="FAIL")]
    result = ComparisonResult.judged(rows, RunFacts("npu_vs_tf", (odd,), "graph"), 0.99)
    csv_path = str(tmp_path / "result_20260101000000.csv")
    write_result_csv(csv_path, result.results)
    write_results_file(results_path_for(csv_path), result, csv_path)
    stored = load_result(csv_path)
    assert stored.origin == FROM_RESULTS_FILE and stored.comparison.results == result.results


def test_vcs_and_report_take_the_result_file_itself(broken, capsys):
    _case, _result, paths = broken
    assert main(["--json", "vcs", "-f", paths.results]) == 1
    assert json.loads(capsys.readouterr().out)["data"]["csv"] == paths.csv


MSACCUCMP_CSV = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
    "MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
    "StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,MeanRelativeError,"
    "CompareFailReason\r\n"
    '0,Data,input,NaN,NaN,input,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,'
    '"[input] There is no dump file for my output operator ""input"". The type is Data."\r\n'
    "1,Neg,one,float16,0,one,float32,one:output:0,[1],1.000000,8.000000,1.600000,1.600000,0.000000,"
    '"(3.000;0.000),(-5.000;0.000)",8.000000,8.000000,1.600000,1.600000,This tensor is scalar.\r\n'
    "2,Add,two,float16,0,two,float32,two:output:0,[4],0.500000,1.000000,0.500000,0.500000,0.000000,"
    '"(abc;1),(1;1)",0.500000,0.500000,0.500000,0.500000,\r\n')


def test_msaccucmp_remarks_and_odd_cells_are_shown_as_written(tmp_path, capsys):
    path = tmp_path / "result_20260101000000.csv"
    path.write_bytes(MSACCUCMP_CSV.encode("utf-8"))  # as written, CRLF kept
    assert main(["--json", "vcs", "-f", str(path), "-c", "1.0", "-l", "0"]) == 1
    data = json.loads(capsys.readouterr().out)["data"]
    # "one" passes at 1.0 (msaccucmp's cosine 1 for a scalar) but its remark is kept; "two" fails at 0.5
    assert [item["tensor_id"] for item in data["failing"]] == ["two:output:0"]
    assert data["not_compared"] == 1 and data["source"] == "csv"
    stored = load_result(str(path))
    assert [stored.reason_cell(k) for k in range(3)] == [
        '[input] There is no dump file for my output operator "input". The type is Data.', "This tensor is scalar.",
        ""]
    assert stored.comparison.results[0].status is Status.NO_DUMP
    assert stored.comparison.results[2].metric("StandardDeviation") is None  # "(abc;1),(1;1)": no traceback
