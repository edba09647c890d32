"""The result CSV: msaccucmp's exact header and cell formats, safe quoting, atomic writes, and our reader."""
import csv
import io
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "comparison"))

from cmp_builders import chain_case
from precision_tool.alignment import align, load_graph
from precision_tool.comparison import TensorResult, compare_alignment
from precision_tool.status import Status

NO_DUMP, NOT_COMPARED = Status.NO_DUMP, Status.NOT_COMPARED
from precision_tool.errors import ResultCsvError  # noqa: E402
from precision_tool.fileio import TEMP_PREFIX  # noqa: E402
from precision_tool.metrics import MeanStd  # noqa: E402
from precision_tool.reports import result_csv  # noqa: E402
from precision_tool.reports.result_csv import (csv_line, quote_cell, read_result_csv, result_row,  # noqa: E402
                                               write_result_csv)

MSACCUCMP_HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
                    "MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
                    "StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,MeanRelativeError,"
                    "CompareFailReason")
HOSTILE = ["-neg/Add", "=cmd|' /C calc'!A0", "+plus", "@at", "%pct", "a,b", 'say "hi"', "line\nbreak", "\ttab",
           "\uff1dfull", " lead space", ""]


def compared_rows(tmp_path, **options):
    case = chain_case(tmp_path / "case", **options)
    graph = load_graph(case.graph)
    return compare_alignment(align(case.npu, case.ref, graph), graph=graph, workers=1)


def test_header_is_msaccucmps_exactly(tmp_path):
    path = write_result_csv(tmp_path / "r.csv", [])
    with open(path, "rb") as handle:
        assert handle.read() == (MSACCUCMP_HEADER + "\r\n").encode()
    assert ",".join(result_csv.HEADER_NPU_VS_NPU) == MSACCUCMP_HEADER.replace("DataType,TensorIndex",
                                                                              "DataType,Address,TensorIndex")


def test_cells_are_formatted_like_msaccucmps():
    row = TensorResult(index=3, tensor_id="conv/Conv2D:output:0", op_name="conv/Conv2D", kind="output",
                       tensor_index=0, op_type="Conv2D", status=Status.PASS, reason="cosine 1 >= 0.99",
                       npu_dtype="float16", address="1234", ground_truth="conv/Conv2D,conv/Relu",
                       reference="conv/Relu:output:0", ref_dtype="float32", shape=(1, 64, 64, 64),
                       metrics=(0.99999939, 0.0046798, 4623.4912739, 0.0011024, 3.2e-08,
                                MeanStd(0.00066, 0.906475, -0.00066, 0.906473), 0.000797, 0.000999, 1678.6546,
                                0.0176372))
    assert result_row(row) == ["3", "Conv2D", "conv/Conv2D", "float16", "1234", "conv/Conv2D,conv/Relu", "float32",
                               "conv/Conv2D:output:0", "[1,64,64,64]", "0.999999", "0.004680", "4623.491274",
                               "0.001102", "0.000000", "(0.000;0.906),(0.000;0.906)", "0.000797", "0.000999",
                               "1678.654600", "0.017637", ""]
    assert csv_line(result_row(row)).startswith('3,Conv2D,conv/Conv2D,float16,1234,"conv/Conv2D,conv/Relu",')
    scalar = TensorResult(index=0, tensor_id="s:output:0", op_name="s", kind="output", tensor_index=0, op_type="Neg",
                          status=Status.NAN_INF,
                          reason="NPU has 1 NaN, reference none; no pair is finite on both sides",
                          shape=())
    cells = result_row(scalar)
    assert cells[8] == "[]" and cells[9:19] == ["NaN"] * 10
    assert cells[19] == "NAN_INF: NPU has 1 NaN, reference none; no pair is finite on both sides"
    no_dump = TensorResult(index=7, tensor_id="", op_name="lost", kind="", tensor_index=-1, op_type="Add",
                           status=NO_DUMP, reason="no file")
    assert result_row(no_dump) == ["7", "Add", "lost", "NaN", "NaN", "*", "NaN", "NaN", "NaN"] + ["NaN"] * 10 + \
        ["NO_DUMP: no file"]
    assert result_row(no_dump, npu_vs_npu=True)[7] == "NaN"
    assert len(result_row(no_dump, npu_vs_npu=True)) == len(MSACCUCMP_HEADER.split(",")) + 1  # a second Address


def test_formula_like_and_special_cells_are_quoted_and_read_back_unchanged():
    assert quote_cell("-neg/Add") == '"-neg/Add"'
    assert quote_cell("float16") == "float16" and quote_cell("0.999999") == "0.999999"
    assert quote_cell("-0.500000") == '"-0.500000"'  # harmless: every reader gets the same number back
    line = csv_line(HOSTILE)
    assert next(csv.reader(io.StringIO(line, newline=""))) == HOSTILE
    benign = ["1", "Add", "a/b", "float16", "[1,2]", "(0.000;1.000),(0.000;1.000)", "x y", ""]
    expected = io.StringIO()
    csv.writer(expected).writerow(benign)  # msaccucmp's writer: same bytes for ordinary cells
    assert csv_line(benign) == expected.getvalue()


def test_our_csv_round_trips_through_our_reader(tmp_path):
    result = compared_rows(tmp_path, names=["-neg/Add", "=sum", "op,2", "op3"], break_at="op,2", no_ref=["op3"])
    path = write_result_csv(tmp_path / "r.csv", result.results)
    table = read_result_csv(path)
    assert [row.tensor_id for row in table.rows] == [row.tensor_id for row in result.results]
    assert [row.op_name for row in table.rows][:2] == ["-neg/Add", "-neg/Add"]
    for ours, back in zip(result.results, table.rows):
        assert back.index == ours.index and back.op_type == ours.op_type
        if ours.status in ("PASS", "FAIL"):
            assert back.status.cosine_gated and back.cosine == pytest.approx(ours.cosine, abs=5e-7)
            assert back.metric("MaxAbsoluteError") == pytest.approx(ours.metric("MaxAbsoluteError"), abs=5e-7)
            assert back.status.verdict == ("pass" if ours.passed else "fail")
        else:
            assert back.status == ours.status
    assert table.rows[-1].status == NOT_COMPARED and table.rows[-1].status.verdict == "not_compared"
    assert {row.key for row in table.rows if row.status.verdict == "fail"} == \
        {row.key for row in result.results if row.failed}


def test_matching_non_finite_cells_and_round_trips(tmp_path):
    """Issue 16: the classification is written in CompareFailReason and read back; the result file keeps it."""
    note = ("matching non-finite: 2 NaN/inf at identical positions on both sides (2 NaN); metrics over the 6 finite "
            "elements")
    empty_note = ("matching non-finite: 4 NaN/inf at identical positions on both sides (4 NaN); no finite element: "
                  "nothing to measure")
    base = dict(kind="output", tensor_index=0, op_type="Select", shape=(2, 4))
    std = MeanStd(0.5, 1.0, 0.5, 1.0)
    rows = [TensorResult(index=0, tensor_id="a:output:0", op_name="a", status=Status.PASS, reason="cosine 1 >= 0.99",
                         metrics=(1.0,) + (0.0,) * 4 + (std,) + (0.0,) * 4, notes=(note,), matched_non_finite=2,
                         **base),
            TensorResult(index=1, tensor_id="b:output:0", op_name="b", status=Status.EMPTY, reason=empty_note,
                         notes=(empty_note,), matched_non_finite=4, **base),
            TensorResult(index=2, tensor_id="c:output:0", op_name="c", status=Status.BOTH_ZERO,
                         reason="both tensors are all zero where finite (6 elements): identical", notes=(note,),
                         matched_non_finite=2, **base),
            TensorResult(index=3, tensor_id="d:output:0", op_name="d", status=Status.FAIL, reason="cosine 0.5 < 0.99",
                         metrics=(0.5,) + (0.1,) * 4 + (std,) + (0.1,) * 4, matched_non_finite=3,
                         **base)]  # no note: the short form
    cells = [result_row(row)[19] for row in rows]
    assert cells == [note, f"EMPTY: {empty_note}",
                     f"BOTH_ZERO: both tensors are all zero where finite (6 elements): identical; {note}",
                     "matching non-finite: 3 NaN/inf at identical positions on both sides"]
    assert result_row(rows[1])[9:19] == ["NaN"] * 10
    table = read_result_csv(write_result_csv(tmp_path / "r.csv", rows))
    assert [(row.status, row.matched_non_finite) for row in table.rows] == \
        [(Status.PASS, 2), (Status.EMPTY, 4), (Status.BOTH_ZERO, 2), (Status.FAIL, 3)]
    assert list(table.reason_cells) == cells
    assert [TensorResult.from_dict(row.to_dict()) for row in rows] == rows
    older = rows[0].to_dict()
    del older["matched_non_finite"]  # a result file written before issue 16
    assert TensorResult.from_dict(older).matched_non_finite == 0
    plain = TensorResult(index=4, tensor_id="e:output:0", op_name="e", status=Status.NOT_COMPARED,
                         reason="matching non-finite: 9 NaN/inf in a file name", **base)
    back = read_result_csv(write_result_csv(tmp_path / "p.csv", [plain])).rows[0]
    assert back.matched_non_finite == 0  # only compared rows carry the classification


def test_reader_refuses_what_is_not_a_result_csv(tmp_path):
    (tmp_path / "x.csv").write_text("a,b,c\r\n1,2,3\r\n")
    with pytest.raises(ResultCsvError, match="header lacks Index, OpType, NPUDump, GroundTruth, TensorIndex"):
        read_result_csv(tmp_path / "x.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ResultCsvError, match="is empty"):
        read_result_csv(tmp_path / "empty.csv")


def test_a_run_killed_while_writing_leaves_no_csv(tmp_path, monkeypatch):
    result = compared_rows(tmp_path)
    target = tmp_path / "out" / "result_20240101000000.csv"
    target.parent.mkdir()
    written = []

    def dies_after_three_rows(row, npu_vs_npu=False):
        if len(written) == 3:
            raise KeyboardInterrupt
        written.append(row)
        return original(row, npu_vs_npu)

    original = result_csv.result_row
    monkeypatch.setattr(result_csv, "result_row", dies_after_three_rows)
    with pytest.raises(KeyboardInterrupt):
        write_result_csv(target, result.results)
    assert os.listdir(target.parent) == []  # neither the CSV nor a temporary file is left
    assert not any(name.startswith(TEMP_PREFIX) for name in os.listdir(target.parent))
