"""Fusion on vs fusion off: clean runs name nobody; a fault planted on a fused op names it and its passes."""
import json
import math

import numpy as np

from checks_builders import CNN, CONV2, POOL1, copy_cnn_workspace, dump_file_of, perturb_output
from precision_tool.checks.fusion_compare import DEFAULT_FLOOR, compare_fusion_runs
from precision_tool.comparison.attribution import fusion_excess as op_excess
from precision_tool.formats.dump_file import read_dump_header, read_tensor


def compare(workspace):
    npu = workspace / "npu"
    return compare_fusion_runs(str(npu / "debug_0" / "dump"), str(npu / "debug_1" / "dump"),
                               str(npu / "debug_0" / "graph"), str(npu / "debug_1" / "graph"))


def test_clean_sample_runs_differ_only_by_fp16_rounding():
    result = compare(CNN)
    assert result.culprits == () and result.other_differences == ()
    assert len(result.ops) == json.loads((CNN / "manifest.json").read_text())["runs"][0]["executed_ops"]
    assert max(op.excess for op in result.ops) < DEFAULT_FLOOR / 10
    conv2 = result.op(CONV2)
    assert conv2.other == "small_cnn_1/conv2_1/Relu:output:0"  # paired through the original names
    assert conv2.fused is not None and 0 < conv2.output_distance < 0.002


def test_planted_fault_on_a_fused_op_names_it_and_its_passes(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_conv2_1_convolution"), rel=0.3)
    result = compare(workspace)
    (culprit,) = result.culprits
    assert culprit.op_name == CONV2 and culprit.excess > 0.2
    assert culprit.fused.passes == ("ConvBiasaddFusionPass", "TbeConvElemwiseFusionPass")
    assert result.other_differences == ()
    # the next op reads the clean bytes dumped as its input, so nothing downstream is blamed
    assert not result.op(POOL1).differs


def test_a_difference_at_an_unfused_op_is_not_blamed_on_fusion(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    perturb_output(dump_file_of(workspace, 0, "small_cnn_1_pool1_1_MaxPool2d"), rel=0.3)
    result = compare(workspace)
    assert result.culprits == ()
    assert [op.op_name for op in result.other_differences] == [POOL1]


def test_nan_only_in_the_fused_run_is_a_difference(tmp_path):
    workspace = copy_cnn_workspace(tmp_path)
    path = dump_file_of(workspace, 0, "small_cnn_1_conv2_1_convolution")
    dump = read_dump_header(path)
    entry = dump.outputs[0]
    values = read_tensor(dump, entry).copy()
    values.reshape(-1)[5] = np.nan
    with open(path, "r+b") as handle:
        handle.seek(entry.offset)
        handle.write(values.tobytes())
    culprit = compare(workspace).op(CONV2)
    assert culprit.differs and math.isinf(culprit.output_distance)


def test_excess_rule():
    assert op_excess(0.3, 0.001) > DEFAULT_FLOOR
    assert op_excess(0.145, 0.097) < 0  # a Softmax amplifying inherited drift is not a culprit
    assert op_excess(math.inf, 0.0) == math.inf and op_excess(math.inf, math.inf) == 0.0


def test_an_unreadable_fusion_off_graph_is_said_not_skipped(tmp_path):
    from precision_tool.checks.autocheck import check_fusion
    from precision_tool.config import Workspace

    workspace = copy_cnn_workspace(tmp_path)
    graph = next((workspace / "npu" / "debug_1" / "graph").glob("ge_proto_*_Build.txt"))
    graph.write_text("garbage {{{")
    section = check_fusion(Workspace(str(workspace)))
    assert section.comparison is not None  # still compared, by op names
    [note] = [n for n in section.notes if n.startswith("npu/debug_1:")]
    assert "Build graph not read" in note and graph.name in note and note.endswith("matched by name only")
