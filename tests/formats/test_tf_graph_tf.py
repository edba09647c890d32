"""The graph reader and tf_dump's kept graph against TensorFlow's own view (TF in a subprocess; TF 1.15 and 2.x).

One subprocess imports TensorFlow once and writes, under a temporary folder:

* a tfdbg v1 capture (``DumpingDebugWrapperSession``, Grappler off, oneDNN off) of a small CNN, and TF's own
  parse of each executed-graph file it wrote (``Event`` -> ``GraphDef`` with TF's protos) plus
  ``sess.graph_def``'s view of the Python ops;
* a ``GraphDef`` built and serialized by TF with one attr of every kind the reader converts, and the values
  TF's messages hold;
* TF's field numbers for the messages of the reader's table.

The test process never imports TensorFlow: it runs ``tf_dump`` and reads the kept graph with our reader.
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.commands.tf_dump import COMMAND
from precision_tool.formats.tf_graph import MESSAGES, FunctionAttr, TensorAttr, read_tf_graph

pytestmark = [pytest.mark.compat,
              pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs TensorFlow")]
REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.framework import attr_value_pb2, graph_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorflow.core.util import event_pb2
    from tensorflow.python import debug as tf_debug

    out = sys.argv[1]
    v1 = tf.compat.v1
    v1.disable_eager_execution()

    def attr_json(value):
        kind = value.WhichOneof("value")
        if kind == "list":
            lst = value.list
            for name in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
                if len(getattr(lst, name)):
                    return ["list", name, [item_json(name, item) for item in getattr(lst, name)]]
            return ["list", None, []]
        return [kind, item_json(kind, getattr(value, kind)) if kind else None]

    def item_json(kind, item):
        if kind == "s":
            return list(bytearray(item))
        if kind == "type":
            return types_pb2.DataType.Name(item)
        if kind == "shape":
            return None if item.unknown_rank else [d.size for d in item.dim]
        if kind == "tensor":
            dims = None if item.tensor_shape.unknown_rank else [d.size for d in item.tensor_shape.dim]
            return [types_pb2.DataType.Name(item.dtype), dims]
        if kind == "func":
            return item.name
        return item

    def graph_json(graph_def):
        return [{"name": n.name, "op": n.op, "input": list(n.input), "device": n.device,
                 "attr": {k: attr_json(v) for k, v in n.attr.items()}} for n in graph_def.node]

    # 1. a tfdbg v1 capture
    x = v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    with v1.variable_scope("conv1"):
        w = v1.get_variable("w", [3, 3, 3, 4])
        b = v1.get_variable("b", [4])
        conv = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME", data_format="NHWC", name="conv")
        relu = tf.nn.relu(tf.nn.bias_add(conv, b, name="bias"), name="relu")
    pool = tf.nn.max_pool2d(relu, 2, 2, "VALID", name="pool")
    y = tf.matmul(tf.reshape(pool, [2, -1], name="flat"), tf.ones([16, 3]), name="fc")
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    root = os.path.join(out, "tf_debug")
    with v1.Session(config=config) as sess:
        sess.run(v1.global_variables_initializer())
        dumped = tf_debug.DumpingDebugWrapperSession(sess, root)
        dumped.run(y, feed_dict={x: np.ones((2, 8, 8, 3), np.float32)})
        python_graph = graph_json(sess.graph_def)
    executed = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.startswith("_tfdbg_graph_"):
                with open(os.path.join(folder, name), "rb") as handle:
                    event = event_pb2.Event.FromString(handle.read())
                executed[name] = graph_json(graph_pb2.GraphDef.FromString(event.graph_def))

    # 2. a GraphDef with every attr kind, serialized by TF
    A = attr_value_pb2.AttrValue
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in (2, -1)])
    tensor = tf.make_tensor_proto(np.zeros((2, 3), np.int64))
    attrs = {
        "s": A(s=b"SAME"), "i": A(i=-7), "i0": A(i=0), "f": A(f=0.1), "b": A(b=True), "b0": A(b=False),
        "type": A(type=tf.bfloat16.as_datatype_enum), "shape": A(shape=shape),
        "rank": A(shape=tensor_shape_pb2.TensorShapeProto(unknown_rank=True)), "tensor": A(tensor=tensor),
        "func": A(func=attr_value_pb2.NameAttrList(name="body_fn")), "empty": A(list=A.ListValue()),
        "ls": A(list=A.ListValue(s=[b"a", b"bc"])), "li": A(list=A.ListValue(i=[1, 2, 2, 1])),
        "lf": A(list=A.ListValue(f=[0.25, -1.5])), "lb": A(list=A.ListValue(b=[True, False])),
        "ltype": A(list=A.ListValue(type=[1, 19, 101])), "lshape": A(list=A.ListValue(shape=[shape, shape])),
        "ltensor": A(list=A.ListValue(tensor=[tensor])),
    }
    graph = graph_pb2.GraphDef()
    graph.node.add(name="every/kind", op="NoOp", input=["a:1", "^b"], device="/device:CPU:0")
    for key, value in attrs.items():
        graph.node[0].attr[key].CopyFrom(value)
    graph.versions.producer = 1
    with open(os.path.join(out, "kinds.pb"), "wb") as handle:
        handle.write(graph.SerializeToString())

    # 3. TF's field numbers
    messages = {"GraphDef": graph_pb2.GraphDef, "NodeDef": graph.node[0].__class__, "AttrValue": A,
                "ListValue": A.ListValue, "TensorShapeProto": tensor_shape_pb2.TensorShapeProto,
                "TensorShapeDim": tensor_shape_pb2.TensorShapeProto.Dim, "NameAttrList": attr_value_pb2.NameAttrList,
                "TensorProto": tensor_pb2.TensorProto}
    numbers = {name: {f.name: f.number for f in cls.DESCRIPTOR.fields} for name, cls in messages.items()}
    with open(os.path.join(out, "tf_view.json"), "w") as handle:
        json.dump({"executed": executed, "python": python_graph, "kinds": graph_json(graph), "numbers": numbers,
                   "version": tf.__version__}, handle)
''')


@pytest.fixture(scope="module")
def tf_view(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf_graph")
    (out / "script.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    result = subprocess.run([sys.executable, str(out / "script.py"), str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]
    return out, json.loads((out / "tf_view.json").read_text())


def expected_value(attr):
    """What our reader should return for an attr, from TF's view of it."""
    def item(kind, value):
        if kind == "s":
            return bytes(bytearray(value)).decode()
        if kind == "type":
            return value  # TF's own enum name
        if kind == "shape":
            return None if value is None else tuple(value)
        if kind == "tensor":
            return TensorAttr(value[0], None if value[1] is None else tuple(value[1]))
        if kind == "func":
            return FunctionAttr(value)
        return value
    if attr[0] == "list":
        return [item(attr[1], value) for value in attr[2]]
    return None if attr[0] is None else item(attr[0], attr[1])


def same_floats(ours, theirs):
    """TF's Python float of a float32 attr and ours are the same float32 value."""
    import numpy as np
    return np.array_equal(np.float32(ours), np.float32(theirs))


def check_node(node, expected):
    assert (node.name, node.op, list(node.inputs), node.device) == (
        expected["name"], expected["op"], expected["input"], expected["device"])
    assert sorted(node.attrs) == sorted(expected["attr"])
    for key, attr in expected["attr"].items():
        want = expected_value(attr)
        if attr[0] == "f" or attr[:2] == ["list", "f"]:
            assert same_floats(node.attrs[key], want), key
        else:
            assert node.attrs[key] == want, key


def test_our_field_numbers_are_tensorflows(tf_view):
    numbers = tf_view[1]["numbers"]
    for message, rows in MESSAGES.items():
        for number, name, _ in rows:
            if f"{message}.{name}" == "GraphDef.debug_info" and name not in numbers[message]:
                continue  # added after TF 1.15
            assert numbers[message][name] == number, f"{message}.{name}"


def test_every_attr_kind_of_a_graphdef_serialized_by_tf(tf_view):
    out, view = tf_view
    graph = read_tf_graph(out / "kinds.pb")
    (expected,) = view["kinds"]
    (node,) = graph.nodes
    check_node(node, expected)
    assert node.attrs["tensor"] == TensorAttr("DT_INT64", (2, 3)) and node.attrs["rank"] is None
    assert node.attrs["li"] == [1, 2, 2, 1] and node.attrs["i0"] == 0 and node.attrs["b0"] is False


def test_tf_dump_keeps_the_executed_graph_as_tf_sees_it(tf_view, tmp_path):
    out, view = tf_view
    report = CommandRegistry([COMMAND]).dispatch(["tf_dump", "-i", str(out / "tf_debug")],
                                                 Context(data_dir=str(tmp_path / "ws")))
    assert report.exit_code == 0, report.status
    graphs = report.data["graphs"]
    assert len(graphs) == len(view["executed"]) >= 1
    kept = {os.path.basename(g["source"]): read_tf_graph(tmp_path / "ws" / "tf" / "graph" / g["file"])
            for g in graphs}
    assert sorted(kept) == sorted(view["executed"])
    for source, nodes in view["executed"].items():
        assert len(kept[source].nodes) == len(nodes) == [g["nodes"] for g in graphs
                                                         if g["source"].endswith(source)][0]
        for node, expected in zip(kept[source].nodes, nodes):
            check_node(node, expected)
    # and against the Python graph (Grappler off: the Python ops run under their own names)
    (graph,) = kept.values()
    assert any(node.name.startswith("__dbg_") for node in graph.nodes)
    graph = graph.without_debug_ops()
    assert not any(node.name.startswith(("__dbg_", "__copy_")) for node in graph.nodes)
    python = {node["name"]: node for node in view["python"]}
    conv = graph.node("conv1/conv")
    assert conv.op == "Conv2D" and conv.attrs["strides"] == [1, 2, 2, 1]
    assert (conv.attrs["padding"], conv.attrs["data_format"]) == ("SAME", "NHWC")
    compared = []
    for name in ("conv1/conv", "conv1/bias", "conv1/relu", "pool", "flat", "fc"):
        node, expected = graph.node(name), python[name]
        assert node.op == expected["op"]
        for key in ("strides", "padding", "data_format", "ksize", "T"):
            if key in expected["attr"]:
                assert node.attrs[key] == expected_value(expected["attr"][key]), (name, key)
        if all(inp.split(":")[0].lstrip("^") in graph.op_types for inp in expected["input"]):
            assert list(node.inputs) == expected["input"], name
            compared.append(name)
    assert {"conv1/bias", "conv1/relu", "pool", "fc"} <= set(compared)
