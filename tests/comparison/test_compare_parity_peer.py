"""``compare`` against msaccucmp's ``compare`` on the same files (``make check-peer``).

* On the peer-style chain (ND and NC1HWC0 variants of ``benchmarks/make_case.py``) every metric cell of our CSV
  equals msaccucmp's within 1e-6 (relative above 1; AccumulatedRelativeError per element, as in
  ``tests/metrics/test_peer_metrics.py``), StandardDeviation character for character, and our reader reads
  msaccucmp's CSV.
* On the emulated workspaces of ``sample_dumps/`` (fused ops, device layouts, GE Cast/TransData) the same
  tensors are compared and every metric agrees the same way; only all-zero pairs differ (cosine 1 vs NaN).
* Where msaccucmp is wrong, its CSV says so and ours gives the honest verdict: a tensor whose dims are all 1,
  a NaN, more NPU elements than reference, the same count in another shape, an op name starting with ``-``,
  and exit code 2 for a complete result whose Data op has no dump.
"""
import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from cmp_builders import Step, write_chain
from sample_counts import dumped_tensors
from precision_tool.cli import main
from precision_tool.metrics import ALL
from precision_tool.reports.result_csv import read_result_csv

pytestmark = pytest.mark.peer
REPO = Path(__file__).resolve().parents[2]
SD = "StandardDeviation"


def _make_case():
    spec = importlib.util.spec_from_file_location("make_case", REPO / "benchmarks" / "make_case.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _agrees(ours: float, theirs: float, name: str, n: int) -> bool:
    if name == "AccumulatedRelativeError" and n > 1:
        ours, theirs = ours / n, theirs / n
    return abs(ours - theirs) <= 1e-6 * max(1.0, abs(theirs)) + 1e-6  # + one unit of the sixth decimal


def both(peer, case, out):
    """``(our table, peer table, our exit code, peer exit code)`` for one case folder."""
    ours_code = main(["compare", "-m", str(case / "npu"), "-g", str(case / "ref"), "-f", str(case / "graph.json"),
                      "-out", str(out / "ours")])
    peer_run = peer.run("compare", "-m", case / "npu", "-g", case / "ref", "-f", case / "graph.json",
                        "-out", out / "peer", check=False)
    (ours_csv,) = (out / "ours").glob("result_*.csv")
    peer_csvs = list((out / "peer").glob("result_*.csv"))
    assert len(peer_csvs) == 1, peer_run.stdout[-2000:]
    return read_result_csv(ours_csv), read_result_csv(peer_csvs[0]), ours_code, peer_run.returncode


def _sd_cells(table) -> dict:
    """``{TensorIndex: StandardDeviation cell}`` as written in the CSV, character for character."""
    with open(table.path, newline="", encoding="utf-8-sig") as handle:
        lines = list(csv.reader(handle))
    tensor, sd = lines[0].index("TensorIndex"), lines[0].index(SD)
    return {cells[tensor]: cells[sd] for cells in lines[1:] if len(cells) > sd}


@pytest.mark.parametrize("variant", ["nd", "nc1hwc0"])
def test_every_metric_cell_equals_msaccucmps(peer, tmp_path, variant, capsys):
    ops = 4
    case = Path(_make_case().build_case(str(tmp_path / variant), variant=variant, ops=ops))
    ours, theirs, ours_code, peer_code = both(peer, case, tmp_path)
    capsys.readouterr()
    peer_rows = {row.tensor_id: row for row in theirs.rows if row.tensor_id}
    our_rows = {row.tensor_id: row for row in ours.rows}
    assert set(our_rows) == set(peer_rows) and len(our_rows) == 2 * ops  # each Add's input 0 and output 0
    n = 512 * 512  # elements of each tensor: [512, 512] ND, or [1, 64, 64, 64] NHWC
    our_sd, peer_sd = _sd_cells(ours), _sd_cells(theirs)
    for tensor_id, mine in our_rows.items():
        other = peer_rows[tensor_id]
        assert (mine.index, mine.op_type, mine.op_name, mine.npu_dtype, mine.ground_truth, mine.ref_dtype) == \
            (other.index, other.op_type, other.op_name, other.npu_dtype, other.ground_truth, other.ref_dtype)
        for name in ALL:
            if name == SD:
                assert our_sd[tensor_id] == peer_sd[tensor_id], tensor_id
            else:
                assert _agrees(mine.metric(name), other.metric(name), name, n), (tensor_id, name)
    assert ours.rows[0].shape == ((1, 64, 64, 64) if variant == "nc1hwc0" else (512, 512))
    # msaccucmp exits 2 because the Data op has no dump, though its CSV is complete; we exit 0
    assert (ours_code, peer_code) == (0, 2)
    data_row = theirs.rows[0]
    assert (data_row.op_type, data_row.status, data_row.status.verdict) == ("Data", "NO_DUMP", "not_compared")


def test_where_msaccucmp_is_wrong_we_give_the_honest_verdict(peer, tmp_path, capsys):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    half = (x * 0.5).astype(np.float16)
    with_nan = half.copy()
    with_nan[1, 1] = np.nan
    steps = [Step("ok", half, x * 0.5),
             Step("one_element", np.float16([[3.0]]), np.float32([[-5.0]])),
             Step("nan_out", with_nan, x * 0.5),
             Step("more_npu", np.arange(32, dtype=np.float16).reshape(4, 8),
                  np.arange(16, dtype=np.float32).reshape(4, 4)),
             Step("transposed", np.arange(32, dtype=np.float16).reshape(4, 8),
                  np.arange(32, dtype=np.float32).reshape(8, 4))]
    write_chain(tmp_path / "case", x, x.astype(np.float16), steps, json_graph=True, graph_layout="file")
    ours, theirs, ours_code, _ = both(peer, tmp_path / "case", tmp_path)
    capsys.readouterr()
    mine = {row.tensor_id: row for row in ours.rows}
    peer_rows = {row.tensor_id: row for row in theirs.rows if row.tensor_id}

    def peer_cell(tensor_id, name="CosineSimilarity"):
        return peer_rows[tensor_id].metric(name)

    # all dims 1: msaccucmp writes cosine 1 whatever the values; ours is -1 and fails
    assert peer_cell("one_element:output:0") == 1.0
    assert mine["one_element:output:0"].cosine == -1.0 and mine["one_element:output:0"].status.verdict == "fail"
    # a NaN: msaccucmp writes nan in every cell; ours names it and still computes the finite pairs
    assert peer_cell("nan_out:output:0") is None and peer_cell("nan_out:output:0", "MaxAbsoluteError") is None
    assert mine["nan_out:output:0"].status == "NAN_INF" and mine["nan_out:output:0"].cosine > 0.99
    assert mine["nan_out:output:0"].reason.startswith("NPU has 1 NaN, reference none")
    # 32 NPU elements against 16: msaccucmp compares the first 16 without a word
    assert peer_cell("more_npu:output:0") == 1.0 and peer_rows["more_npu:output:0"].reason == ""
    assert mine["more_npu:output:0"].status == "COUNT_MISMATCH" and mine["more_npu:output:0"].cosine is None
    # same count, another shape: msaccucmp compares flat without a word
    assert peer_cell("transposed:output:0") == 1.0 and peer_rows["transposed:output:0"].reason == ""
    assert mine["transposed:output:0"].status == "SHAPE_MISMATCH"
    assert mine["ok:output:0"].status.verdict == "pass" and ours_code == 1
    # vcs reads msaccucmp's CSV too, and does not take its NaN cosines for passes
    assert main(["--json", "vcs", "-f", theirs.path, "-l", "0"]) == 1
    listed = [item["tensor_id"] for item in json.loads(capsys.readouterr().out)["data"]["failing"]]
    assert listed == ["nan_out:output:0", "more_npu:input:0"]


def test_nan_the_reference_holds_too_msaccucmp_writes_nan_we_the_finite_elements(peer, tmp_path, capsys):
    """Issue 16: the NPU (float16) and the reference (float32) hold NaN at the same two positions. msaccucmp's
    cells are ``nan`` (it computes over every element); ours are the finite elements', which equal what
    msaccucmp computes on those 30 elements alone (step ``finite_part``), and the tensor passes."""
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    reference = x * 0.5
    reference[1, 1] = reference[2, 5] = np.nan
    npu = reference.astype(np.float16)
    finite = np.isfinite(reference)
    steps = [Step("nan_both", npu, reference), Step("finite_part", npu[finite], reference[finite])]
    write_chain(tmp_path / "case", x, x.astype(np.float16), steps, json_graph=True, graph_layout="file")
    ours, theirs, ours_code, _ = both(peer, tmp_path / "case", tmp_path)
    capsys.readouterr()
    mine = {row.tensor_id: (row, cell) for row, cell in zip(ours.rows, ours.reason_cells)}
    peer_rows = {row.tensor_id: row for row in theirs.rows if row.tensor_id}
    row, cell = mine["nan_both:output:0"]
    assert peer_rows["nan_both:output:0"].metric("CosineSimilarity") is None  # msaccucmp: nan
    assert row.status == "PASS" and row.matched_non_finite == 2 and ours_code == 0
    assert cell == ("matching non-finite: 2 NaN/inf at identical positions on both sides (2 NaN); metrics over the "
                    "30 finite elements")
    alone = peer_rows["finite_part:output:0"]
    for name in ALL:
        if name != SD:
            assert _agrees(row.metric(name), alone.metric(name), name, 30), name
    assert _sd_cells(ours)["nan_both:output:0"] == _sd_cells(theirs)["finite_part:output:0"]


def test_an_op_name_starting_with_minus_aborts_msaccucmp_not_us(peer, tmp_path, capsys):
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    steps = [Step("-neg/Add", (x * 0.5).astype(np.float16), x * 0.5), Step("after", (x * 0.5).astype(np.float16),
                                                                          x * 0.5)]
    write_chain(tmp_path / "case", x, x.astype(np.float16), steps, json_graph=True, graph_layout="file")
    ours, theirs, ours_code, peer_code = both(peer, tmp_path / "case", tmp_path)
    capsys.readouterr()
    assert peer_code != 0 and [row.tensor_id for row in theirs.rows] == [""]  # only the Data row was written
    assert ours_code == 0
    assert [row.tensor_id for row in ours.rows] == ["-neg/Add:input:0", "-neg/Add:output:0", "after:input:0",
                                                   "after:output:0"]
    (csv_path,) = (tmp_path / "ours").glob("result_*.csv")
    with open(csv_path, newline="") as handle:
        assert sum(line.startswith('1,Add,"-neg/Add",') for line in handle) == 2


@pytest.mark.parametrize("workspace", ["cnn_workspace", "mobilenet_workspace"])
def test_emulated_workspace_metrics_equal_msaccucmps(peer, tmp_path, workspace, capsys):
    """A whole emulated model (fused ops, NC1HWC0/FRACTAL layouts, GE Cast/TransData): same tensors, same
    numbers; the only cells that differ are all-zero pairs, where msaccucmp writes cosine 1 and relative
    errors 0 and we write NaN with the reason (BOTH_ZERO: nothing to measure, and the tensor passes)."""
    from precision_tool.formats.ge_io import find_build_graph, read_ge_graph, write_ge_graph_json

    root = REPO / "sample_dumps" / workspace
    if not (root / "manifest.json").is_file():
        pytest.skip(f"sample_dumps/{workspace} not generated (make sample-dumps)")
    case = tmp_path / "flat"  # msaccucmp needs flat folders and the graph as JSON
    sources = {"npu": (root / "npu" / "debug_0" / "dump").glob("**/*"), "ref": (root / "tf" / "dump").glob("*.npy")}
    for sub, paths in sources.items():
        (case / sub).mkdir(parents=True)
        for path in paths:
            if path.is_file():
                (case / sub / path.name).write_bytes(path.read_bytes())
    write_ge_graph_json(read_ge_graph(find_build_graph(root / "npu" / "debug_0" / "graph")), case / "graph.json")
    ours, theirs, _, _ = both(peer, case, tmp_path)
    capsys.readouterr()
    mine = {row.tensor_id: row for row in ours.rows if row.tensor_id}
    peer_rows = {row.tensor_id: row for row in theirs.rows if row.tensor_id}
    assert set(mine) == set(peer_rows) and len(mine) == dumped_tensors(root)  # every input and output dumped
    both_zero = 0
    our_sd, peer_sd = _sd_cells(ours), _sd_cells(theirs)
    for tensor_id, row in mine.items():
        other = peer_rows[tensor_id]
        if row.status == "BOTH_ZERO":
            both_zero += 1
            assert other.cosine == 1.0 and row.cosine is None and row.reason.startswith("both tensors are all zero")
            continue
        size = int(np.prod(row.shape))
        for name in ALL:
            if name == SD:
                assert our_sd[tensor_id] == peer_sd[tensor_id], (tensor_id, name)
            elif row.metric(name) is not None or other.metric(name) is not None:
                assert _agrees(row.metric(name), other.metric(name), name, size), (tensor_id, name)
    assert both_zero >= 1
