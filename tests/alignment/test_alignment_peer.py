"""Our pairs against the ones CANN's comparator (msaccucmp ``compare``) makes, on the same workspace.

msaccucmp logs every pair it compares as ``Left(op:kind:k) <======> Right(tf_op:output:j)``; that is read
back here. On a workspace with a fused op, GE-inserted Cast/TransData, a two-output op and names holding ``/``
and ``.``, the pairs must be the same. A second workspace pins the places where msaccucmp pairs wrongly and
we do not.
"""
import re

import pytest

from align_builders import desc, node, pairing, write_workspace
from precision_tool.alignment import align
from precision_tool.formats.ge_graph import tensor_desc

pytestmark = pytest.mark.peer
PAIR_LINE = re.compile(r"Left\((?P<npu>.+?:(?:input|output):\d+)\) <======> Right\((?P<ref>.+?:output:\d+)\)")


def peer_pairing(peer, dump_dir, ref_dir, graph_json, out_dir):
    result = peer.run("compare", "-m", dump_dir, "-g", ref_dir, "-f", graph_json, "-out", out_dir, check=False)
    assert result.returncode in (0, 2), result.stdout[-3000:] + result.stderr[-3000:]  # 2: some op has no dump
    found = {}
    for line in (result.stdout + result.stderr).splitlines():
        match = PAIR_LINE.search(line)
        if match:
            found[match.group("npu")] = match.group("ref")
    assert found, "the peer logged no pairs:\n" + result.stdout[-3000:]
    return found


def test_same_pairs_on_a_fused_workspace_with_layout_ops(peer, tmp_path):
    fused = ["block.1/conv/Conv2D", "block.1/conv/BiasAdd", "block.1/conv/Relu"]
    nodes = [node("input/x", "Data", original=["input/x"], origins=[("input/x", 0)]),
             node("block.1/conv/Conv2D", "Conv2D", ["input/x:0"], original=fused,
                  origins=[("block.1/conv/Relu", 0)]),
             node("cast_fp16_1", "Cast", ["block.1/conv/Conv2D:0"]),
             node("trans_TransData_2", "TransData", ["cast_fp16_1:0"]),
             node("moments", "BNTrainingReduce", ["trans_TransData_2:0"], original=["bn/moments"],
                  origins=[("bn/moments", 0), ("bn/moments", 1)]),
             node("scope/add", "Add", ["moments:1", "input/x:0", "cast_fp16_1:-1"], original=["scope/add"]),
             node("head.out", "Neg", ["scope/add:0"])]
    refs = ["input/x", *fused, ("bn/moments", 0), ("bn/moments", 1), "scope/add", "head.out"]
    dump_dir, ref_dir, json_path = write_workspace(tmp_path / "w", nodes, refs, json_graph=True)
    ours = pairing(align(dump_dir, ref_dir, graph=json_path))
    theirs = peer_pairing(peer, dump_dir, ref_dir, json_path, tmp_path / "peer_out")
    assert ours == theirs
    assert ours["scope/add:input:0"] == "bn/moments:output:1"
    assert ours["moments:input:0"] == "block.1/conv/Relu:output:0"


def test_where_the_peer_pairs_wrongly(peer, tmp_path):
    bare = tensor_desc("DT_FLOAT", "ND", (2, 3))  # an output desc without any attribute
    nodes = [node("x", "Data", original=["x"], origins=[("x", 0)]),
             # (1) msaccucmp drops output descs without attributes, shifting the rest: it compares split's
             #     output 0 (and whatever reads it) with tf_split:1
             node("split", "SplitD", ["x:0"], outputs=[bare, desc("tf_split", 1)], original=["tf_split"]),
             node("use0", "Neg", ["split:0"], original=["use0"]),
             # (2) it walks through every Cast, even one that is a TF op: tfcast's output and neg's input are
             #     compared with the tensor *before* the TF Cast
             node("tf_add", "Add", ["x:0"], original=["tf_add"]),
             node("tfcast", "Cast", ["tf_add:0"], original=["tf_cast"], origins=[("tf_cast", 0)]),
             node("neg", "Neg", ["tfcast:0"], original=["neg"]),
             # (3) one TF op split over two NPU ops without origin names: it compares neither the split's
             #     output nor the input reading it
             node("p1", "MatMul", ["x:0"], original=["mm"]), node("p2", "Add", ["p1:0", "x:0"], original=["mm"]),
             node("after", "Relu", ["p2:0"], original=["after"])]
    refs = ["x", ("tf_split", 0), ("tf_split", 1), "use0", "tf_add", "tf_cast", "neg", "mm", "after"]
    dump_dir, ref_dir, json_path = write_workspace(tmp_path / "w", nodes, refs, json_graph=True)
    ours = pairing(align(dump_dir, ref_dir, graph=json_path))
    theirs = peer_pairing(peer, dump_dir, ref_dir, json_path, tmp_path / "peer_out")
    wrong = {"split:output:0": "tf_split:output:1", "use0:input:0": "tf_split:output:1",
             "tfcast:output:0": "tf_add:output:0", "neg:input:0": "tf_add:output:0"}
    right = {"split:output:0": "tf_split:output:0", "use0:input:0": "tf_split:output:0",
             "tfcast:output:0": "tf_cast:output:0", "neg:input:0": "tf_cast:output:0",
             "p2:output:0": "mm:output:0", "after:input:0": "mm:output:0"}
    assert {key: theirs.get(key) for key in right} == {**wrong, "p2:output:0": None, "after:input:0": None}
    assert {key: ours[key] for key in right} == right
    # everywhere else the two agree
    assert {k: v for k, v in theirs.items() if k not in right} == {k: v for k, v in ours.items() if k not in right}
