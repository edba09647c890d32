"""CANN's own comparator agrees the emulated data is real (``make check-peer``).

On the committed ``sample_dumps/cnn_workspace`` (which ``test_emulate_workspace`` proves is what the
emulator writes today): ``msaccucmp convert`` parses every NPU file, ``compare`` (graph through
``precision_tool ge2json``) puts the planted op below cosine 0.98 and every other op at or above 0.99,
and ``overflow`` finds the planted overflow. The peer needs flat folders holding one kind of file, so
files are copied to temporary folders; the workspace is never written.
"""
import csv
import glob
import json
import os
import shutil
from pathlib import Path

import pytest

from precision_tool.cli import main
from precision_tool.formats.dump_file import read_dump_header

pytestmark = pytest.mark.peer
REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "sample_dumps" / "cnn_workspace"
MOBILENET = REPO / "sample_dumps" / "mobilenet_workspace"
PLANTED = "small_cnn_1/res_conv_1/convolution"
OVERFLOW_OP = "small_cnn_1/conv3_1/convolution"


def flat_copy(files, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path in files:
        shutil.copy(path, folder / os.path.basename(path))
    return folder


def run_files(ws: Path, run: int):
    info = json.loads((ws / "manifest.json").read_text())
    return sorted(glob.glob(str(ws / info["runs"][run]["dump_dir"] / "*")))


def compare(peer, ws: Path, run: int, tmp: Path) -> dict:
    """``{npu op: (op type, output-0 cosine or None)}`` from msaccucmp's CSV for NPU run ``run``."""
    npu = flat_copy(run_files(ws, run), tmp / "npu")
    ref = flat_copy(sorted(glob.glob(str(ws / "tf" / "dump" / "*.npy"))), tmp / "ref")
    graph = tmp / "graph.json"
    assert main(["ge2json", str(ws / "npu" / f"debug_{run}" / "graph"), "-o", str(graph)]) == 0
    out = tmp / "out"
    out.mkdir()
    peer.run("compare", "-m", npu, "-g", ref, "-f", graph, "-out", out, check=False)  # 2: Data/Const have no dump
    (csv_path,) = out.glob("result_*.csv")
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    cosines = {}
    for row in rows:
        if row["TensorIndex"].endswith(":output:0"):
            value = row["CosineSimilarity"]
            cosines[row["NPUDump"]] = (row["OpType"], None if value == "NaN" else float(value))
    return cosines


def carriers(ws: Path, run: int, planted_ops) -> set:
    """The Cast/TransData ops GE inserted after a planted op: they carry its output, error included (under
    allow_fp32_to_fp16 a Cube op's float16 output is cast up for the float32 vector op after it)."""
    from precision_tool.formats.ge_io import read_ge_graph

    graph = read_ge_graph(ws / "npu" / f"debug_{run}" / "graph" / "ge_proto_00000001_Build.txt").root
    found = set(planted_ops)
    for op in graph.ops:  # execution order: a carrier's producer comes first
        if op.type in ("Cast", "TransData") and any(ref.producer in found for ref in op.data_inputs):
            found.add(op.name)
    return found - set(planted_ops)


def check_figures(cosines: dict, planted_ops=(), carried=()) -> dict:
    figures = {"planted": {op: cosines[op][1] for op in planted_ops}, "lowest_unplanted": None}
    others = {op: cos for op, (_, cos) in cosines.items()
              if op not in planted_ops and op not in carried and cos is not None}
    for op in planted_ops:
        assert cosines[op][1] < 0.98, (op, cosines[op])
    worst = min(others, key=others.get)
    figures["lowest_unplanted"] = (worst, others[worst])
    assert others[worst] >= 0.99, figures
    return figures


def test_peer_converts_every_emulated_npu_file(peer, tmp_path):
    files = [p for run in (0, 1) for p in run_files(CNN, run)] + run_files(MOBILENET, 0)
    files += sorted(glob.glob(str(CNN / "overflow" / "dump" / "*" / "*" / "*" / "*" / "*" / "*")))
    src = flat_copy(files, tmp_path / "npu")
    result = peer.run("convert", "-d", src, "-out", tmp_path / "out")
    assert "[ERROR]" not in result.stdout + result.stderr
    produced = os.listdir(tmp_path / "out")
    for path in files:
        name = os.path.basename(path)
        header = read_dump_header(path)
        expected = len(header.inputs) + len(header.outputs)
        assert sum(1 for out in produced if out.startswith(name + ".")) == expected, name


def executed_ops(ws: Path, run: int) -> int:
    """How many ops the emulation executed in npu/debug_RUN (its manifest)."""
    return json.loads((ws / "manifest.json").read_text())["runs"][run]["executed_ops"]


def test_peer_compare_finds_the_planted_op_and_passes_the_rest(peer, tmp_path):
    cosines = compare(peer, CNN, 0, tmp_path)
    assert sum(1 for _, cos in cosines.values() if cos is not None) == executed_ops(CNN, 0)  # every op compared
    figures = check_figures(cosines, planted_ops=(PLANTED,), carried=carriers(CNN, 0, (PLANTED,)))
    assert figures["planted"][PLANTED] < 0.95  # about 0.90: relative noise 0.5


def test_peer_compare_fusion_off_run(peer, tmp_path):
    cosines = compare(peer, CNN, 1, tmp_path)
    assert sum(1 for _, cos in cosines.values() if cos is not None) == executed_ops(CNN, 1)
    # BiasAdd reads the noise; unfused, conv3's overflow saturates (910) and its bias add reads it, before ReLU6
    # clamps both to 6 (in the fused run only the overflow run sees it)
    planted = (PLANTED, "small_cnn_1/res_conv_1/BiasAdd", OVERFLOW_OP, "small_cnn_1/conv3_1/BiasAdd")
    check_figures(cosines, planted_ops=planted, carried=carriers(CNN, 1, planted))


def test_peer_compare_clean_mobilenet(peer, tmp_path):
    cosines = compare(peer, MOBILENET, 0, tmp_path)
    assert sum(1 for _, cos in cosines.values() if cos is not None) == executed_ops(MOBILENET, 0)
    check_figures(cosines)


def test_peer_overflow_finds_the_planted_overflow(peer, tmp_path):
    info = json.loads((CNN / "manifest.json").read_text())["overflow"]
    src = flat_copy(sorted(glob.glob(str(CNN / info["dir"] / "*"))), tmp_path / "ovf")
    out = tmp_path / "out"
    out.mkdir()
    peer.run("overflow", "-d", src, "-out", out)
    (summary,) = out.glob("overflow_summary_*.txt")
    lines = summary.read_text().splitlines()
    assert lines[1] == f"[Conv2D] {OVERFLOW_OP}"
    from precision_tool.formats.dump_names import parse_dump_name, sanitize_op_name

    (dumped,) = [name for name in map(os.path.basename, glob.glob(str(CNN / "npu" / "debug_0" / "dump" / "*" / "*" /
                                                                       "*" / "*" / "*" / "*")))
                 if parse_dump_name(name).op_name == sanitize_op_name(OVERFLOW_OP)]
    task = parse_dump_name(dumped).task_id  # the overflowing op's task, as its dump file names it
    assert lines[2] == f" [AI Core][TaskId:{task}][StreamId:2][Status:256]"
