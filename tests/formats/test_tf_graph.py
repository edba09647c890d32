"""GraphDef reading without TensorFlow, and the tfdbg v1 and v2 graphs tf_dump keeps (pure Python: runs on 3.7 too).

The GraphDefs here are encoded byte by byte from the protobuf wire format with TensorFlow's field numbers,
independently of the reader's schema table; tests/formats/test_tf_graph_tf.py checks against TensorFlow.
"""
import json
import os
import struct
import sys

import numpy as np
import pytest
from hand_proto import field, varint

from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.commands.tf_dump import COMMAND
from precision_tool.errors import ReferenceFormatError
from precision_tool.formats import tf_schema
from precision_tool.formats.tf_graph import (FunctionAttr, TensorAttr, keep_tfdbg_v1_graphs, parse_graph_def,
                                             read_tf_graph)
from precision_tool.formats.tfdbg import DEFAULT_DEVICE, device_folder_name
from precision_tool.formats.tfdbg_v1 import write_tfdbg_v1_tensor
from precision_tool.formats.tfdbg_v2 import write_tfdbg_v2_dump

pytestmark = pytest.mark.compat
US = 1_700_000_000_000_000
DEVICE_SLUG = "job_localhost_replica_0_task_0_device_CPU_0"


def shape(*dims, unknown_rank=False):
    return b"".join(field(2, field(1, d)) for d in dims) + (field(3, True) if unknown_rank else b"")


def node(name, op, inputs=(), device="", attrs=()):
    body = field(1, name) + field(2, op) + b"".join(field(3, i) for i in inputs)
    body += field(4, device) if device else b""
    body += b"".join(field(5, field(1, key) + field(2, value)) for key, value in attrs)
    return field(1, body)


CONV_ATTRS = (
    ("T", field(6, 1)),
    ("strides", field(1, b"".join(field(3, s) for s in (1, 2, 2, 1)))),  # unpacked: still valid
    ("padding", field(2, b"SAME")),
    ("data_format", field(2, b"NHWC")),
    ("use_cudnn_on_gpu", field(5, True)),
    ("dilations", field(1, field(3, b"".join(varint(d) for d in (1, 1, 1, 1))))),  # packed
)
ALL_KINDS = (
    ("i", field(3, -5)), ("f", field(4, 0.5)), ("b", field(5, False)), ("s", field(2, b"\xff\x00")),
    ("type", field(6, 19)), ("shape", field(7, shape(2, -1))), ("rank", field(7, shape(unknown_rank=True))),
    ("value", field(8, field(1, 3) + field(2, shape(2, 3)) + field(4, b"\x00" * 24))),
    ("fn", field(10, field(1, "my_fn"))), ("empty", field(1, b"")), ("unset", b""),
    ("fs", field(1, field(4, struct.pack("<2f", 1.5, -2.0)))), ("ss", field(1, field(2, "a") + field(2, "bc"))),
    ("types", field(1, field(6, varint(1) + varint(101)))), ("shapes", field(1, field(7, shape(1)) + field(7, b""))),
    ("bs", field(1, field(5, b"\x01\x00"))),
)


def graph_bytes():
    return (node("x", "Placeholder", attrs=(("dtype", field(6, 1)), ("shape", field(7, shape(1, 4, 4, 3)))))
            + node("w", "Const", device="/job:localhost/replica:0/task:0/device:CPU:0",
                   attrs=(("value", field(8, field(1, 1) + field(2, shape(3, 3, 3, 8)))),))
            + node("conv", "Conv2D", ["x", "w:0", "^init"], attrs=CONV_ATTRS)
            + node("kinds", "NoOp", attrs=ALL_KINDS)
            + field(4, field(1, 27)))  # versions { producer: 27 }


def test_reads_names_ops_inputs_devices_and_every_attr_kind(tmp_path):
    path = tmp_path / "g.pb"
    path.write_bytes(graph_bytes())
    graph = read_tf_graph(path)
    assert graph.path == str(path)
    assert [(n.name, n.op, n.inputs) for n in graph.nodes] == [
        ("x", "Placeholder", ()), ("w", "Const", ()), ("conv", "Conv2D", ("x", "w:0", "^init")), ("kinds", "NoOp", ())]
    assert graph.node("w").device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert graph.node("conv").data_inputs == ("x", "w:0")
    assert graph.node("x").attrs == {"dtype": "DT_FLOAT", "shape": (1, 4, 4, 3)}
    assert graph.node("w").attrs == {"value": TensorAttr("DT_FLOAT", (3, 3, 3, 8))}
    assert graph.node("conv").attrs == {"T": "DT_FLOAT", "strides": [1, 2, 2, 1], "padding": "SAME",
                                        "data_format": "NHWC", "use_cudnn_on_gpu": True, "dilations": [1, 1, 1, 1]}
    assert graph.node("kinds").attrs == {
        "i": -5, "f": 0.5, "b": False, "s": b"\xff\x00", "type": "DT_HALF", "shape": (2, -1), "rank": None,
        "value": TensorAttr("DT_INT32", (2, 3)), "fn": FunctionAttr("my_fn"), "empty": [], "unset": None,
        "fs": [1.5, -2.0], "ss": ["a", "bc"], "types": ["DT_FLOAT", "DT_FLOAT_REF"], "shapes": [(1,), ()],
        "bs": [True, False]}
    assert graph.op_types["conv"] == "Conv2D"
    with pytest.raises(KeyError):
        graph.node("nope")


@pytest.mark.parametrize("data, cause", [
    (graph_bytes()[:-9], "GraphDef: field 1 claims 301 bytes but only 296 remain"),
    (b"", "not a GraphDef with nodes (no node found)"),
    (b"\x00\x01\x02", "field number 0"),
    (field(1, 2.5) + node("a", "B"), "not a GraphDef (field 1 has wire type 5)"),
    (node("a", ""), "not a GraphDef: node 0 has no name or no op type"),
    (field(1, b"\x0a\x05ab"), "not a GraphDef"),
])
def test_bad_graph_bytes_are_one_line_errors_naming_the_file(tmp_path, data, cause):
    path = tmp_path / "bad.pb"
    path.write_bytes(data)
    with pytest.raises(ReferenceFormatError) as error:
        read_tf_graph(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and cause in message and "\n" not in message


def test_an_event_is_not_taken_for_a_graph(tmp_path):
    path = tmp_path / "event"
    path.write_bytes(tf_schema.Event(wall_time=1.0, graph_def=graph_bytes()).SerializeToString())
    with pytest.raises(ReferenceFormatError, match="not a GraphDef"):
        read_tf_graph(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_folder_and_missing_files_do_not_block(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    with pytest.raises(ReferenceFormatError, match=r"fifo: is a FIFO \(named pipe\), not a regular file$"):
        read_tf_graph(fifo)
    with pytest.raises(ReferenceFormatError, match="not a regular file"):
        read_tf_graph(tmp_path)
    with pytest.raises(ReferenceFormatError, match=r"missing\.pb: does not exist \(or is a dangling symlink\)$"):
        read_tf_graph(tmp_path / "missing.pb")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked.pb"
    path.write_bytes(graph_bytes())
    path.chmod(0)
    with pytest.raises(ReferenceFormatError, match="cannot read"):
        read_tf_graph(path)


def test_parse_in_memory_has_no_path():
    assert parse_graph_def(graph_bytes()).path is None


# -- keeping a tfdbg v1 run's graphs ---------------------------------------------------------------
def write_graph_file(run, name, payload):
    folder = run / device_folder_name(DEFAULT_DEVICE)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(payload)


def v1_run(root, stamp=US, counter=0):
    run = root / f"run_{stamp}_{counter}"
    write_tfdbg_v1_tensor(run, "conv", 0, np.ones((1, 2), np.float32), stamp + 1)
    write_graph_file(run, f"_tfdbg_graph_hash1_{stamp}",
                     tf_schema.Event(wall_time=1.0, graph_def=graph_bytes()).SerializeToString())
    return run


def test_keeps_the_graphdef_bytes_and_an_index(tmp_path):
    run = v1_run(tmp_path / "capture")
    out = tmp_path / "graph"
    kept, notes = keep_tfdbg_v1_graphs(run, out)
    name = f"graph_run_{US}_0_{DEVICE_SLUG}.pb"
    assert notes == [] and [g.file for g in kept] == [name]
    assert (out / name).read_bytes() == graph_bytes()
    assert read_tf_graph(out / name).node("conv").attrs["strides"] == [1, 2, 2, 1]
    later = v1_run(tmp_path / "capture", US + 5, 1)
    write_graph_file(later, f"_tfdbg_graph_hash2_{US + 5}",
                     tf_schema.Event(graph_def=node("only", "NoOp")).SerializeToString())
    kept, notes = keep_tfdbg_v1_graphs(later, out)
    assert [(g.file, g.nodes) for g in kept] == [(f"graph_run_{US + 5}_1_{DEVICE_SLUG}.pb", 4),
                                                 (f"graph_run_{US + 5}_1_{DEVICE_SLUG}_1.pb", 1)]
    index = json.loads((out / "index.json").read_text())
    assert [(e["file"], e["run"], e["device"], os.path.basename(e["source"])) for e in index["graphs"]] == [
        (name, str(run), DEFAULT_DEVICE, f"_tfdbg_graph_hash1_{US}"),
        (f"graph_run_{US + 5}_1_{DEVICE_SLUG}.pb", str(later), DEFAULT_DEVICE, f"_tfdbg_graph_hash1_{US + 5}"),
        (f"graph_run_{US + 5}_1_{DEVICE_SLUG}_1.pb", str(later), DEFAULT_DEVICE, f"_tfdbg_graph_hash2_{US + 5}")]


def dispatch(argv, data_dir):
    return CommandRegistry([COMMAND]).dispatch(["tf_dump", *argv], Context(data_dir=str(data_dir)))


def test_tf_dump_lists_the_kept_graph(tmp_path):
    ws = tmp_path / "ws"
    v1_run(ws / "tf" / "tf_debug" / "cap")
    report = dispatch([], ws)
    name = f"graph_run_{US}_0_{DEVICE_SLUG}.pb"
    assert report.exit_code == 0 and report.status.endswith("; kept 1 graph")
    assert report.data["graph_dir"] == os.path.realpath(str(ws / "tf" / "graph"))
    assert report.data["graphs"] == [{"file": name, "run": str(ws / "tf" / "tf_debug" / "cap" / f"run_{US}_0"),
                                      "device": DEFAULT_DEVICE, "source": str(
                                          ws / "tf" / "tf_debug" / "cap" / f"run_{US}_0"
                                          / device_folder_name(DEFAULT_DEVICE) / f"_tfdbg_graph_hash1_{US}"),
                                      "nodes": 4}]
    assert report.blocks[1].lines == [
        f"Executed graph kept in {report.data['graph_dir']} (GraphDef; tf/graph/index.json says whose):",
        f"{name}: 4 nodes, device {DEFAULT_DEVICE}"]
    assert report.blocks[0].rows[0][:3] == ["conv", 0, "Conv2D"]


@pytest.mark.parametrize("payload", [
    tf_schema.Event(graph_def=graph_bytes()).SerializeToString()[:-7],
    tf_schema.Event(wall_time=2.0).SerializeToString(),
    tf_schema.Event(graph_def=b"\x0a\x05ab").SerializeToString(),
])
def test_tf_dump_goes_on_when_the_graph_is_bad(tmp_path, payload):
    ws = tmp_path / "ws"
    run = ws / "tf" / "tf_debug" / "cap" / f"run_{US}_0"
    write_tfdbg_v1_tensor(run, "conv", 0, np.ones((1, 2), np.float32), US + 1)
    write_graph_file(run, f"_tfdbg_graph_hash1_{US}", payload)
    report = dispatch([], ws)
    source = run / device_folder_name(DEFAULT_DEVICE) / f"_tfdbg_graph_hash1_{US}"
    assert report.exit_code == 0 and report.data["written"] == 1 and report.data["graphs"] == []
    (note,) = [n for n in report.data["notes"] if "graph" in n]
    assert note.startswith(f"{source}: ") and note.endswith("; the graph was not kept.")
    assert not os.listdir(ws / "tf" / "graph")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_tf_dump_passes_over_a_fifo_graph_file(tmp_path):
    ws = tmp_path / "ws"
    run = ws / "tf" / "tf_debug" / "cap" / f"run_{US}_0"
    write_tfdbg_v1_tensor(run, "conv", 0, np.ones((1, 2), np.float32), US + 1)
    os.mkfifo(str(run / device_folder_name(DEFAULT_DEVICE) / f"_tfdbg_graph_hash1_{US}"))
    report = dispatch([], ws)
    assert report.data["written"] == 1
    assert any(n.endswith("not a regular file; the graph was not kept.") for n in report.data["notes"])


def test_a_run_without_graph_says_so(tmp_path):
    ws = tmp_path / "ws"
    write_tfdbg_v1_tensor(ws / "tf" / "tf_debug" / f"run_{US}_0", "a", 0, np.ones(2, np.float32), US)
    report = dispatch([], ws)
    assert any("no executed graph (_tfdbg_graph_* file) in the run; the graph was not kept." in n
               for n in report.data["notes"])


def test_tfdbg_v2_graphs_are_the_function_graphs_the_capture_left(tmp_path):
    ws = tmp_path / "ws"
    run = ws / "tf" / "tf_debug" / "v2"
    write_tfdbg_v2_dump(run, [("y", "Relu", 0, np.ones(2, np.float32), 1_800_000_000.0)])
    folder = run / "precision_tool_graphs"
    folder.mkdir()
    (folder / "10_later.pb").write_bytes(node("only", "NoOp"))
    (folder / "2_train_step.pb").write_bytes(graph_bytes())
    (folder / "3_broken.pb").write_bytes(graph_bytes()[:-7])
    os.mkfifo(str(folder / "4_fifo.pb"))
    report = dispatch([], ws)
    assert [(g["file"], g["nodes"], g["device"]) for g in report.data["graphs"]] == [
        ("graph_v2_2_train_step.pb", 4, ""), ("graph_v2_10_later.pb", 1, "")]  # numbers in order, not text
    assert (ws / "tf" / "graph" / "graph_v2_2_train_step.pb").read_bytes() == graph_bytes()
    notes = " | ".join(report.data["notes"])
    assert "3_broken.pb" in notes
    assert "4_fifo.pb: is a FIFO (named pipe), not a regular file; the graph was not kept." in notes


def test_a_tfdbg_v2_capture_without_graphs_says_why(tmp_path):
    ws = tmp_path / "ws"
    write_tfdbg_v2_dump(ws / "tf" / "tf_debug" / "v2", [("y", "Relu", 0, np.ones(2, np.float32), 1_800_000_000.0)])
    report = dispatch([], ws)
    assert report.data["graphs"] == [] and not (ws / "tf" / "graph").exists()
    assert any(n.endswith("no function graph (precision_tool_graphs/ is written by "
                          "npu_tf_config.enable_reference_dump); the graph was not kept.")
               for n in report.data["notes"])


def test_tfdbg_v2_debug_ops_are_removed_and_consumers_keep_their_inputs():
    data = (node("x", "Placeholder") + node("DebugIdentityV2_1", "DebugIdentityV2", ["x"])
            + node("relu", "Relu", ["x", "^DebugIdentityV2_1"])
            + node("relu/DebugIdentityV2_2", "DebugIdentityV2", ["relu", "^DebugIdentityV2_1"]))
    graph = parse_graph_def(data).without_debug_ops()
    assert [(n.name, n.inputs) for n in graph.nodes] == [("x", ()), ("relu", ("x",))]
