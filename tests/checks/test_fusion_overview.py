"""What fusion did: passes from fusion_result.json and the Build graph, fused ops with their TF ops."""
from checks_builders import CNN
from precision_tool.checks.fusion_summary import summarize_fusion
from precision_tool.formats.fusion_result import FusionResult, GraphFusion, PassRecord
from precision_tool.formats.ge_graph import Graph, GraphModel, OpNode
from precision_tool.formats.ge_io import find_build_graph, read_ge_graph
from precision_tool.formats.fusion_result import read_fusion_result
from sample_counts import graph_ops, model_layers


def cnn_overview():
    model = read_ge_graph(find_build_graph(CNN / "npu" / "debug_0" / "graph"))
    return summarize_fusion(model, read_fusion_result(CNN / "fusion" / "fusion_result.json"))


def test_passes_carry_counts_and_the_ops_they_mark():
    overview = cnn_overview()
    assert [(p.name, p.family, p.match_times, p.effect_times, len(p.ops)) for p in overview.passes] == [
        ("ConvBiasaddFusionPass", "graph_fusion", 4, 4, 4), ("MatMulBiasAddFusionPass", "graph_fusion", 2, 2, 2),
        ("TbeConvElemwiseFusionPass", "ub_fusion", 3, 3, 3), ("TbeMatmulElemwiseFusionPass", "ub_fusion", 1, 1, 1)]
    # every op of the Build graph's text; one fused op per Conv2D and Dense layer of models/cnn.py (each with its
    # BiasAdd: ConvBiasaddFusionPass, MatMulBiasAddFusionPass)
    assert overview.graph_ops == graph_ops() and len(overview.fused_ops) == model_layers("Conv2D", "Dense")


def test_fused_op_lists_the_tf_ops_it_replaced_and_its_passes():
    conv3 = cnn_overview().fused_op("small_cnn_1/conv3_1/convolution")
    assert conv3.tf_ops == ("small_cnn_1/conv3_1/convolution", "small_cnn_1/conv3_1/BiasAdd",
                            "small_cnn_1/conv3_1/Relu6")
    assert conv3.graph_passes == ("ConvBiasaddFusionPass",) and conv3.ub_pass == "TbeConvElemwiseFusionPass"
    assert conv3.passes_text == "ConvBiasaddFusionPass (graph), TbeConvElemwiseFusionPass (UB)"


def test_ops_made_by_a_pass_pattern():
    overview = cnn_overview()
    assert [op.name for op in overview.ops_made_by("matmul.*elemwise")] == ["small_cnn_1/fc1_1/MatMul"]
    assert len(overview.ops_made_by("convbiasadd")) == model_layers("Conv2D")  # each conv with its bias
    assert overview.ops_made_by("Tbe[") == ()  # not a regex: taken literally, matches nothing


def test_passes_that_did_nothing_sort_last_and_unlisted_passes_still_show():
    result = FusionResult((GraphFusion("session_and_graph_id_0_1", (
        PassRecord("IdlePass", "graph_fusion", 3, 0), PassRecord("BusyPass", "ub_fusion", 1, 1))),))
    op = OpNode("fused", "Conv2D", attrs={"_datadump_original_op_names": ["a", "b"], "pass_name": ["SecretPass"]})
    overview = summarize_fusion(GraphModel((Graph("g", (op, OpNode("plain", "Relu"))),)), result)
    assert [(p.name, p.took_effect, p.ops) for p in overview.passes] == [
        ("BusyPass", True, ()), ("IdlePass", False, ()), ("SecretPass", False, ("fused",))]
    assert [p.name for p in overview.effective_passes] == ["BusyPass"]


def test_without_graph_or_result_there_is_nothing_to_list():
    overview = summarize_fusion(None, None, notes=["no graph"])
    assert overview.passes == () and overview.fused_ops == () and overview.notes == ("no graph",)


# ------------------------------------------------------------------------------------------ real CANN files
import json  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from precision_tool.checks.fusion_summary import looks_like_ub_pass  # noqa: E402

REAL = Path(__file__).resolve().parents[3] / "shared" / "real-world"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent (real artifacts live beside the "
                                                          "checkout)")


def _real_pass_names():
    """``{family: {pass names}}`` over every real fusion_result.json, read with json where it parses."""
    names = {"graph_fusion": set(), "ub_fusion": set()}
    decoder = json.JSONDecoder()
    for path in sorted((REAL / "fusion").glob("*/fusion_result.json")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r'"(graph_fusion|ub_fusion)"\s*:\s*', text):
            try:
                passes, _ = decoder.raw_decode(text, match.end())
            except ValueError:
                continue
            names[match.group(1)].update(passes)
    return names


@needs_real
def test_the_ub_pass_rule_matches_every_family_the_real_files_state():
    names = _real_pass_names()
    assert len(names["ub_fusion"]) >= 10 and len(names["graph_fusion"]) >= 50  # enough to mean something
    assert sorted(n for n in names["ub_fusion"] if not looks_like_ub_pass(n)) == []
    assert sorted(n for n in names["graph_fusion"] if looks_like_ub_pass(n)) == []


@needs_real
def test_ub_passes_stored_in_pass_name_by_older_cann_are_labelled_ub():
    """The real ResNet-50 Build graph stores its UB passes in ``pass_name`` (counted here in the raw text)."""
    path = REAL / "graph" / "oam_resnet50_ge_proto_00000062_Build.txt"
    text = path.read_text(encoding="utf-8")
    stated = re.findall(r'key: "pass_name"\n\s*value \{\n\s*s: "([^"]+)"', text)
    overview = summarize_fusion(read_ge_graph(path), None)
    by_name = {p.name: p for p in overview.passes}
    assert set(by_name) == set(stated)
    for name in set(stated):
        assert by_name[name].family == "ub_fusion" and len(by_name[name].ops) == stated.count(name)
    assert all(op.graph_passes == () and op.ub_pass in stated for op in overview.fused_ops if op.ub_pass)
