"""summary.json and JUnit XML: counts, coverage, failing tensors, first divergence; one test case per tensor."""
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case
from precision_tool.alignment import align, load_graph
from precision_tool.comparison import compare_alignment
from precision_tool.errors import ResultFileError
from precision_tool.reports.junit import build_junit, write_junit, xml_text
from precision_tool.reports.summary import build_summary, summary_for_csv, write_summary


OPS = ["op0", "op1", "op2", "op3", "op4"]
TENSORS = 2 * len(OPS)  # each op's input 0 and output 0


def broken_run(tmp_path):
    case = chain_case(tmp_path / "case", names=OPS, break_at="op2", nan_at="op0", no_ref=["op4"])
    graph = load_graph(case.graph)
    return compare_alignment(align(case.npu, case.ref, graph), graph=graph, workers=1)


def test_summary_holds_counts_coverage_failing_and_the_first_divergence(tmp_path):
    result = broken_run(tmp_path)
    summary = build_summary(result, result_csv=str(tmp_path / "result_1.csv"), exit_code=1)
    assert summary["result_csv"] == "result_1.csv" and summary["cosine_threshold"] == 0.99
    # op4's output has no reference; op0's input (x) passes; op0's NaN flows down to every other tensor
    assert summary["counts"]["compared"] == TENSORS - 1 and summary["counts"]["not_compared"] == 1
    assert summary["counts"]["by_status"] == {"PASS": 1, "NAN_INF": TENSORS - 2, "NOT_COMPARED": 1}
    assert summary["coverage"]["unaligned"] == [["op4:output:0", "no reference file for op4:0 (op4.0.*.npy)"]]
    assert summary["first_divergence"]["op_name"] == "op0"
    assert [item["tensor_id"] for item in summary["failing"]][:2] == ["op0:output:0", "op1:input:0"]
    assert summary["failing"][0]["status"] == "NAN_INF" and "NaN" in summary["failing"][0]["reason"]
    assert summary["order"][:2] == ["x", "op0"] and summary["data_inputs"]["op1"] == [["op0", 0]]
    assert summary["allclose_gate"] is False


def test_summary_is_found_only_beside_the_csv_it_describes(tmp_path):
    result = broken_run(tmp_path)
    csv_path = tmp_path / "out" / "result_20240101000000.csv"
    csv_path.parent.mkdir()
    csv_path.write_text("")
    write_summary(csv_path.parent / "summary.json",
                  build_summary(result, result_csv=str(csv_path), exit_code=1))
    loaded = summary_for_csv(csv_path)
    assert loaded["first_divergence"]["op_name"] == "op0"
    json.loads((csv_path.parent / "summary.json").read_text())  # strict JSON: NaN written as text
    other = csv_path.parent / "result_20240101000001.csv"
    other.write_text("")
    assert summary_for_csv(other) is None
    (csv_path.parent / "summary.json").unlink()
    assert summary_for_csv(csv_path) is None
    (csv_path.parent / "summary.json").write_text("{not json")  # damaged: said, never taken for "no summary"
    with pytest.raises(ResultFileError, match=r"summary.json: is not JSON \(Expecting property name"):
        summary_for_csv(csv_path)


def test_junit_has_one_case_per_tensor_with_failures_and_skips(tmp_path):
    result = broken_run(tmp_path)
    path = write_junit(tmp_path / "junit.xml", result)
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(result.results) == TENSORS
    counts = (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped"))
    assert counts == (str(TENSORS), str(TENSORS - 2), "0", "1")  # as in the summary: 1 passes, 1 is skipped
    first = cases[0]
    assert (first.get("classname"), first.get("name")) == ("Add", "op0:input:0")
    failure = cases[1].find("failure")
    assert failure.get("type") == "NAN_INF" and failure.get("message").startswith("NPU has 1 NaN")
    assert "CosineSimilarity:" in failure.text
    skipped = cases[-1].find("skipped")
    assert cases[-1].get("name") == "op4:output:0" and skipped.get("message").startswith("NOT_COMPARED: no reference")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties == {"cosine_threshold": "0.99", "first_divergence": "op0"}


def test_junit_stays_valid_xml_for_any_name():
    assert xml_text("bad\x00name\x1b[0m") == "bad?name?[0m"
    assert xml_text("ok <&> \u00e9") == "ok <&> \u00e9"


def test_junit_tree_passes_for_a_clean_run(tmp_path):
    case = chain_case(tmp_path / "case")
    graph = load_graph(case.graph)
    tree = build_junit(compare_alignment(align(case.npu, case.ref, graph), graph=graph, workers=1))
    suite = tree.getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("tests") == str(4 * 2)  # the default chain's 4 ops
    assert all(len(case) == 0 for case in suite.findall("testcase"))
