"""The reference graph as replay reads it: GraphDefs written by TensorFlow itself, read without it."""
import json

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.replay.reference_graph import graph_files, load_reference_graph

tf = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf


def _graph_def(relu_input: str) -> bytes:
    graph = tf.compat.v1.GraphDef()
    arg = graph.node.add(op="_Arg", name="_arg_image_0_0")
    arg.attr["T"].type = tf.float32.as_datatype_enum
    arg.attr["index"].i = 0
    copy = graph.node.add(op="Copy", name="__copy__arg_image_0_0_0", input=["_arg_image_0_0"])
    copy.attr["T"].type = tf.float32.as_datatype_enum
    debug = graph.node.add(op="DebugIdentity", name="__dbg__arg_image_0_0_0_0", input=["__copy__arg_image_0_0_0"])
    debug.attr["T"].type = tf.float32.as_datatype_enum
    relu = graph.node.add(op="Relu", name="relu", input=[relu_input, "^__dbg__arg_image_0_0_0_0"])
    relu.attr["T"].type = tf.float32.as_datatype_enum
    return graph.SerializeToString()


def test_fed_inputs_get_their_names_back_and_debug_nodes_go(tmp_path):
    (tmp_path / "graph_run_1_cpu.pb").write_bytes(_graph_def("__copy__arg_image_0_0_0"))
    graph = load_reference_graph(str(tmp_path))
    # tfdbg's copy is read through, the _Arg node is the placeholder "image", the debug control input is gone
    assert graph["relu"].inputs == ("image",) and graph["image"].op == "_Arg"
    assert not [name for name in graph.nodes if name.startswith("__")]


def test_the_newest_graph_wins_in_natural_order_and_index_json_lists_them(tmp_path):
    for number, source in ((2, "_arg_image_0_0"), (10, "other")):
        (tmp_path / f"graph_run_1_cpu_{number}.pb").write_bytes(_graph_def(source))
    (tmp_path / "graph_run_1_cpu_2.pb.notes").write_text("not a graph")
    names = [path.rsplit("/", 1)[1] for path in graph_files(str(tmp_path))[0]]
    assert names == ["graph_run_1_cpu_2.pb", "graph_run_1_cpu_10.pb"]
    assert load_reference_graph(str(tmp_path))["relu"].inputs == ("other",)  # _10 is newer than _2
    (tmp_path / "index.json").write_text(json.dumps({"graphs": [{"file": "graph_run_1_cpu_2.pb"}]}))
    assert load_reference_graph(str(tmp_path))["relu"].inputs == ("image",)  # only what the index lists


def test_no_readable_graph_is_one_line_naming_the_folder(tmp_path):
    with pytest.raises(PrecisionToolError, match="no reference graph"):
        load_reference_graph(str(tmp_path))
    (tmp_path / "graph_x.pb").write_bytes(b"\x0a\x05truncated")
    with pytest.raises(PrecisionToolError, match=r"no reference graph could be read \(.*graph_x.pb"):
        load_reference_graph(str(tmp_path))
