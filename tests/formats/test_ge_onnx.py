"""GE's ONNX-text graph dumps (``ge_onnx_*_Build.pbtxt``, tracker issue 15): read into the same model as ge_proto,
found beside ge_proto files (which win), never a silent empty graph.

Expected values come from regular expressions over the raw text of a real file CANN wrote, from the ge_proto file of
the same run read by the existing ge_proto reader, and from small ONNX texts written here by hand in GE's layout --
never from our reader's output read back.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

from precision_tool.errors import GraphFormatError
from precision_tool.formats import ge_io
from precision_tool.formats.ge_graph import InputRef
from precision_tool.formats.ge_graph_folders import choose_build_graph
from precision_tool.formats.ge_io import (BUILD_GRAPH_NAME, build_graph_files, find_build_graph,
                                          parse_build_graph_name, parse_ge_graph, read_ge_graph,
                                          read_ge_graph_with_notes, root_graph_name)

REPO = Path(__file__).resolve().parents[2]
REAL_GRAPHS = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "graph"
REAL_ONNX = REAL_GRAPHS / "oam_370_0_ge_onnx_00000001_graph_11_Build.pbtxt"
REAL_PROTO = REAL_GRAPHS / "oam_370_0_ge_proto_00000001_Build.txt"  # the same run, the same dump index
needs_real_graphs = pytest.mark.skipif(not REAL_ONNX.is_file(), reason=f"{REAL_ONNX} is absent (real artifacts live "
                                                                       "beside the project, in ../shared)")
ONNX_NAME = "ge_onnx_00000001_graph_1_Build.pbtxt"
LEVEL_NOTE = "no string attributes (GE writes them to the ONNX form only at DUMP_GE_GRAPH=1)"

# A node's head as GE prints it: inputs, outputs, name, op_type, each on its own line, indented under "node {".
_NODE_HEAD = re.compile(r'(?m)^( *)node \{\n((?:\1  (?:input|output): "[^"]*"\n)*)\1  name: "([^"]*)"\n'
                        r'\1  op_type: "([^"]*)"\n')


# ------------------------------------------------------------------------------------------ hand-written texts
_MEMBER_OF_TYPE = {"INT": "i", "FLOAT": "f", "STRING": "s", "INTS": "ints", "FLOATS": "floats", "STRINGS": "strings"}


def _attribute(name: str, kind: str, *values, indent: str = "    ") -> str:
    """One ``attribute { ... }`` block as GE prints it; ``values`` go in the member ``kind`` implies."""
    member = _MEMBER_OF_TYPE.get(kind)
    lines = [f"{indent}attribute {{", f'{indent}  name: "{name}"']
    for value in values:
        lines.append(f'{indent}  {member}: "{value}"' if isinstance(value, str) else f"{indent}  {member}: {value}")
    lines += [f"{indent}  type: {kind}", f"{indent}}}"]
    return "\n".join(lines) + "\n"


def _node(name: str, op_type: str, inputs: Sequence[str] = (), attributes: str = "", indent: str = "  ") -> str:
    head = "".join(f'{indent}  input: "{text}"\n' for text in inputs)
    return (f'{indent}node {{\n{head}{indent}  name: "{name}"\n{indent}  op_type: "{op_type}"\n'
            f'{_reindent(attributes, indent)}{indent}}}\n')


def _reindent(block: str, indent: str) -> str:
    """``block`` (written for a root node, attributes at 4 spaces) moved under ``indent``."""
    extra = indent[2:]
    return "".join(extra + line + "\n" for line in block.splitlines())


def _model(nodes: str, graph_name: str = "g", tail: str = "") -> str:
    return f'ir_version: 6\nproducer_name: "GE"\ngraph {{\n{nodes}  name: "{graph_name}"\n{tail}}}\n'


def _ids(node_id: int) -> str:
    return _attribute("id", "INT", node_id) + _attribute("stream_id", "INT", 0)


def _write(folder: Path, text, name: str = ONNX_NAME) -> Path:
    path = Path(folder) / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _read(path) -> Tuple[object, Tuple[str, ...]]:
    return read_ge_graph_with_notes(path)


def _error(path) -> str:
    with pytest.raises(GraphFormatError) as caught:
        read_ge_graph(path)
    return str(caught.value)


# ------------------------------------------------------------------------------------------ the real file
def _real_text() -> str:
    return REAL_ONNX.read_text(encoding="utf-8")


def _raw_nodes(text: str) -> List[Tuple[str, str, List[str], str]]:
    """``(name, op_type, inputs, own text)`` of every node in file order, by regular expression on the raw text;
    ``own text`` runs to the next node's head (for a subgraph node: its whole graph)."""
    heads = list(_NODE_HEAD.finditer(text))
    found = []
    for number, head in enumerate(heads):
        end = heads[number + 1].start() if number + 1 < len(heads) else len(text)
        inputs = re.findall(r'input: "([^"]*)"', head.group(2))
        found.append((head.group(3), head.group(4), inputs, text[head.end():end]))
    return found


def _raw_int_attribute(own_text: str, name: str) -> int:
    """An INT attribute in a node's own text; GE leaves ``i`` out when it is 0."""
    match = re.search(r'attribute \{\n *name: "%s"\n(?: *i: (-?[0-9]+)\n)? *type: INT\n' % re.escape(name), own_text)
    assert match is not None, f"no INT attribute {name}"
    return int(match.group(1) or 0)


@needs_real_graphs
def test_the_real_onnx_file_has_one_op_per_node_block_and_one_graph_per_subgraph_node():
    text = _real_text()
    raw = _raw_nodes(text)
    assert len(raw) == len(re.findall(r"(?m)^ *node \{$", text)) == len(re.findall(r'op_type: "', text)) == 22
    subgraph_names = [name for name, op_type, _, _ in raw if op_type == "subgraph"]
    model = read_ge_graph_with_notes(REAL_ONNX)[0]
    root_name = re.search(r'(?m)^  name: "([^"]*)"\n\}\n*\Z', text).group(1)
    assert [graph.name for graph in model.graphs] == [root_name] + subgraph_names
    assert [(op.name, op.type) for _, op in model.all_ops()] == \
        [(name, op_type[len("ge:"):]) for name, op_type, _, _ in raw if op_type != "subgraph"]
    # a subgraph node is a graph, not an op: 22 nodes, 4 of them subgraphs (18 ops in 5 graphs)
    assert sum(len(graph.ops) for graph in model.graphs) == len(raw) - len(subgraph_names)
    assert len(model.graphs) == 1 + len(subgraph_names) and len(subgraph_names) == 4


@needs_real_graphs
def test_the_real_onnx_file_keeps_inputs_ids_and_stream_ids_as_written():
    raw = {name: (inputs, own) for name, op_type, inputs, own in _raw_nodes(_real_text()) if op_type != "subgraph"}
    model = read_ge_graph_with_notes(REAL_ONNX)[0]
    for _, op in model.all_ops():
        inputs, own = raw[op.name]
        assert [str(ref) for ref in op.inputs] == inputs
        assert op.id == _raw_int_attribute(own, "id")
        assert op.stream_id == _raw_int_attribute(own, "stream_id")
    data = model.find_op("ge_default_20230713074125_sub_2_unknow_Data_0")
    assert data.inputs == (InputRef("", 0),) and data.inputs[0].is_empty and data.data_inputs == ()
    netoutput = model.root.op("Node_Output")
    assert netoutput.inputs[1].is_control and [str(ref) for ref in netoutput.data_inputs] == \
        ["ge_default_20230713074125_sub_2_unknow_PartitionedCall_2:0"]


@needs_real_graphs
def test_the_real_onnx_file_reads_as_the_ge_proto_of_the_same_run_where_both_hold_a_field():
    onnx = read_ge_graph_with_notes(REAL_ONNX)[0]
    proto = read_ge_graph(REAL_PROTO)
    assert proto.notes == ()  # the ge_proto form has nothing to note
    assert [graph.name for graph in onnx.graphs] == [graph.name for graph in proto.graphs]
    for onnx_graph, proto_graph in zip(onnx.graphs, proto.graphs):
        assert onnx_graph.inputs == proto_graph.inputs
        assert [op.name for op in onnx_graph.ops] == [op.name for op in proto_graph.ops]
        for mine, theirs in zip(onnx_graph.ops, proto_graph.ops):
            assert (mine.type, mine.id, mine.stream_id, mine.inputs) == \
                (theirs.type, theirs.id, theirs.stream_id, theirs.inputs)
            assert len(mine.input_descs) == len(theirs.input_descs)
            assert len(mine.output_descs) == len(theirs.output_descs)
            for my_desc, their_desc in zip(mine.input_descs + mine.output_descs,
                                           theirs.input_descs + theirs.output_descs):
                assert (my_desc.dtype, my_desc.layout, my_desc.shape) == \
                    (their_desc.dtype, their_desc.layout, their_desc.shape)
                for key in ("origin_format", "origin_shape", "origin_data_type"):
                    assert my_desc.attrs.get(key) == their_desc.attrs.get(key), key
                assert my_desc.origin_format and my_desc.origin_shape == their_desc.origin_shape
                # GE writes no row of an empty list-of-int-lists attribute to the ONNX form.
                assert my_desc.attrs.get("shape_range", []) == their_desc.attrs.get("shape_range", [])
                assert my_desc.extra_fields == their_desc.extra_fields
            shared = {key: value for key, value in theirs.extra_fields.items() if key != "has_out_attr"}
            assert mine.extra_fields == shared
    sub_2 = onnx.graph("ge_default_20230713074125_sub_2_unknow")
    assert sub_2.op("GatherV2").output_descs[0].attrs["shape_range"] == [[2, 2]]


@needs_real_graphs
def test_the_real_onnx_file_says_what_its_level_and_form_lose():
    text = _real_text()
    model, notes = read_ge_graph_with_notes(REAL_ONNX)
    # Level 2: no kernel-library or original-name strings in the ONNX text, while the ge_proto of the run has them.
    assert "_ge_attr_op_kernel_lib_name" not in text and "_datadump_original_op_names" not in text
    proto = read_ge_graph(REAL_PROTO)
    assert all(op.kernel_lib for _, op in proto.all_ops())
    assert not any(op.kernel_lib for _, op in model.all_ops())
    subgraphs = len(re.findall(r'op_type: "subgraph"', text))
    assert notes[0].startswith(LEVEL_NOTE)
    assert notes[1].startswith(f"{subgraphs} subgraph(s): the ONNX form does not say which op calls each")
    assert len(notes) == 2
    assert read_ge_graph(REAL_ONNX).notes == tuple(f"{REAL_ONNX}: {note}" for note in notes)


@needs_real_graphs
def test_the_real_onnx_root_graph_name_comes_from_the_files_tail(monkeypatch):
    expected = re.search(r'(?m)^  name: "([^"]*)"\n\}\n*\Z', _real_text()).group(1)
    monkeypatch.setattr(ge_io, "read_ge_graph", lambda path: pytest.fail("read the whole file"))
    assert root_graph_name(REAL_ONNX) == expected == "ge_default_20230713074125_11"


@needs_real_graphs
def test_a_truncated_real_onnx_file_is_one_line_naming_the_file_and_line(tmp_path):
    data = REAL_ONNX.read_bytes()
    cut = data.index(b'op_type: "ge:Unique"') + len(b'op_type: "ge:Un')
    path = _write(tmp_path, data[:cut])
    line = data[:cut].count(b"\n") + 1
    message = _error(path)
    assert message.startswith(f"{path}: line {line}, column ") and "\n" not in message
    assert message.endswith("(not protobuf text of an ONNX ModelProto as GE writes it)")
    cut_at_block = data.index(b"  node {\n", data.index(b'op_type: "ge:Unique"'))
    message = _error(_write(tmp_path, data[:cut_at_block]))
    assert re.fullmatch(re.escape(str(path)) + r": line [0-9]+, column [0-9]+: .*", message)


# ------------------------------------------------------------------------------------------ hand-written files
def test_a_subgraph_node_becomes_a_graph_of_its_own(tmp_path):
    sub = (_node("d", "ge:Data", [""], _ids(0), indent="        ")
           + _node("r", "ge:Relu", ["d:0"], _ids(1), indent="        "))
    graph_attribute = ('    attribute {\n      name: "graph"\n      g {\n' + sub + '        name: "sub"\n'
                       '        input {\n          name: "d"\n        }\n      }\n      type: GRAPH\n    }\n')
    text = _model(_node("call", "ge:PartitionedCall", [], _ids(0)) + _node("sub", "subgraph", [], graph_attribute),
                  "root")
    model, notes = _read(_write(tmp_path, text))
    assert [graph.name for graph in model.graphs] == ["root", "sub"]
    assert [op.name for op in model.root.ops] == ["call"]
    sub_graph = model.graph("sub")
    assert [(op.name, op.type, op.id) for op in sub_graph.ops] == [("d", "Data", 0), ("r", "Relu", 1)]
    assert sub_graph.inputs == ("d:0",)  # as ge_proto writes a graph input
    assert model.root.op("call").subgraph_names == ()
    assert "1 subgraph(s): the ONNX form does not say which op calls each, so ops have no subgraph_names; " \
           "the ge_proto_*.txt of the same dump does" in notes


def test_a_control_edge_and_an_unconnected_input_keep_their_positions(tmp_path):
    text = _model(_node("a", "ge:Data", [], _ids(0)) + _node("c", "ge:NoOp", [], _ids(1))
                  + _node("b", "ge:Add", ["", "a:0", "c:-1"], _ids(2)))
    op = read_ge_graph_with_notes(_write(tmp_path, text))[0].root.op("b")
    assert op.inputs == (InputRef("", 0), InputRef("a", 0), InputRef("c", -1))
    assert op.inputs[0].is_empty and op.inputs[2].is_control
    assert op.data_inputs == (InputRef("a", 0),)


def test_descriptor_fields_and_attributes_map_as_in_ge_proto(tmp_path):
    attributes = (
        _attribute("_datadump_original_op_names", "STRINGS", "conv1/Conv2D", "conv1/BiasAdd")
        + _ids(7)
        + _attribute("output_desc_attr__datadump_origin_name:0", "STRING", "conv1/BiasAdd")
        + _attribute("output_desc_attr__datadump_origin_output_index:0", "INT", 0)
        + _attribute("output_desc_attr_shape_range:0_0", "INTS", 1, 1)
        + _attribute("output_desc_attr_shape_range:0_1", "INTS", 4, 8)
        + _attribute("output_desc_device_type:0", "STRING", "NPU")
        + _attribute("output_desc_dtype:0", "STRING", "DT_FLOAT16")
        + _attribute("output_desc_layout:0", "STRING", "NC1HWC0")
        + _attribute("output_desc_nums", "INT", 1)
        + _attribute("output_desc_origin_dtype:0", "STRING", "DT_FLOAT")
        + _attribute("output_desc_origin_layout:0", "STRING", "NHWC")
        + _attribute("output_desc_origin_shape:0", "INTS", 1, 4, 4, 3)
        + _attribute("output_desc_real_dim_cnt:0", "INT", 5)
        + _attribute("output_desc_reuse_input:0", "INT")  # 0: left out, as ge_proto leaves an unset field out
        + _attribute("output_desc_shape:0", "INTS", 1, 1, 4, 4, 16)
        + _attribute("output_desc_size:0", "INT", 512)
        + _attribute("pass_name", "STRINGS", "ConvBiasAddFusionPass")
        + _attribute("is_input_const", "INTS", 0, 1)
        + _attribute("scale", "FLOAT", 0.1)
    )
    model, notes = _read(_write(tmp_path, _model(_node("conv", "ge:Conv2D", [], attributes))))
    op = model.root.op("conv")
    assert (op.type, op.id, op.original_op_names) == ("Conv2D", 7, ("conv1/Conv2D", "conv1/BiasAdd"))
    assert op.pass_names == ("ConvBiasAddFusionPass",) and op.is_fused
    assert op.extra_fields == {"is_input_const": [False, True]}
    assert op.attrs["scale"] == 0.1
    (desc,) = op.output_descs
    assert (desc.dtype, desc.layout, desc.shape) == ("DT_FLOAT16", "NC1HWC0", (1, 1, 4, 4, 16))
    assert (desc.origin_format, desc.origin_shape, desc.attrs["origin_data_type"]) == ("NHWC", (1, 4, 4, 3), "DT_FLOAT")
    assert (desc.origin_name, desc.origin_output_index) == ("conv1/BiasAdd", 0)
    assert desc.attrs["shape_range"] == [[1, 1], [4, 8]]
    assert desc.extra_fields == {"device_type": "NPU", "real_dim_cnt": 5, "size": 512}
    assert op.input_descs == ()
    assert notes == ()  # strings are there: a level-1 file, nothing to say


def test_a_descriptor_written_as_json_reads_like_the_flat_form(tmp_path):
    # Current GE writes each descriptor of an op with 20 or more outputs as one JSON string, attributes as
    # ge.proto AttrDef text.
    desc = {"dtype": "DT_FLOAT", "origin_dtype": "DT_FLOAT", "shape": [2, 3], "origin_shape": [2, 3], "layout": "ND",
            "origin_layout": "ND", "size": 64, "weight_size": 0, "device_type": "NPU",
            "_datadump_origin_name": 's: "split"\n', "_datadump_origin_output_index": "i: 4\n",
            "shape_range": "list_list_int {\n  list_list_i {\n    list_i: 2\n    list_i: 2\n  }\n}\n"}
    attributes = _attribute("output_desc_0", "STRING", json.dumps(desc).replace("\\", "\\\\").replace('"', '\\"'))
    attributes += _attribute("output_desc_nums", "INT", 1)
    model, _ = _read(_write(tmp_path, _model(_node("split", "ge:SplitV", [], _ids(0) + attributes))))
    (read,) = model.root.op("split").output_descs
    assert (read.dtype, read.layout, read.shape, read.origin_format, read.origin_shape) == \
        ("DT_FLOAT", "ND", (2, 3), "ND", (2, 3))
    assert (read.origin_name, read.origin_output_index, read.attrs["shape_range"]) == ("split", 4, [[2, 2]])
    assert read.extra_fields == {"size": 64, "device_type": "NPU"}


def test_a_level_3_file_without_attributes_says_what_is_unknown(tmp_path):
    model, notes = _read(_write(tmp_path, _model(_node("a", "ge:Data") + _node("b", "ge:Relu", ["a:0"]))))
    assert [(op.name, op.type, op.id) for op in model.root.ops] == [("a", "Data", 0), ("b", "Relu", 0)]
    assert notes == ("no node has attributes (DUMP_GE_GRAPH=3 writes names, types and links only): op ids, stream "
                     "ids, tensor descriptors and attributes such as _datadump_original_op_names are unknown; the "
                     "ge_proto_*.txt of the same dump has them",)


def test_what_cannot_be_mapped_is_named_in_a_note(tmp_path):
    odd = ('    attribute {\n      name: "weights"\n      type: TENSORS\n    }\n'
           + _attribute("attr_groups", "STRING", "groups")
           + '    doc_string: "not written by GE"\n')
    text = _model(_node("a", "Relu", [], _ids(0) + odd), tail='  output {\n    name: "a"\n  }\n')
    model, notes = _read(_write(tmp_path, text))
    assert model.root.op("a").type == "Relu" and model.root.op("a").attrs == {}
    assert notes == ("fields outside what GE writes were skipped: ge.onnx.NodeProto.doc_string",
                     LEVEL_NOTE + ": _datadump_original_op_names, _datadump_origin_name, pass names and kernel names "
                     "are missing; the ge_proto_*.txt of the same dump keeps them",
                     "1 graph output(s) not read: the ONNX form names their ops without the output index",
                     "not read: attr_groups, attributes of type TENSORS",
                     "op_type without GE's 'ge:' prefix, kept as written: Relu")


def test_another_layout_reads_the_same_and_notes_an_unknown_field(tmp_path):
    canonical = _model(_node("a", "ge:Data", [], _ids(3)))
    one_line = ('ir_version: 6 graph { node { name: "a" op_type: "ge:Data" doc_string: "x" '
                'attribute { name: "id" i: 3 type: INT } attribute { name: "stream_id" type: INT } } name: "g" }')
    model, notes = _read(_write(tmp_path, one_line))
    assert model == _read(_write(tmp_path, canonical, "other.pbtxt"))[0]
    assert notes[0].startswith("fields outside what GE writes were skipped, the first ge.onnx.NodeProto.doc_string "
                               "at line 1, column ")


@pytest.mark.parametrize("text", [
    'ir_version: 6\nproducer_name: "GE"\ngraph {\n  name: "g"\n}\n',
    _model(_node("s", "subgraph", [], '    attribute {\n      name: "graph"\n      g {\n        name: "s"\n'
                                      '      }\n      type: GRAPH\n    }\n')),
])
def test_an_onnx_file_without_ops_is_an_error_naming_it(tmp_path, text):
    path = _write(tmp_path, text)
    message = _error(path)
    assert message.startswith(f"{path}: no ops: ") and "\n" not in message
    with pytest.raises(GraphFormatError, match=re.escape(f"{path}: no ops: ")):
        read_ge_graph_with_notes(path)


def test_a_ge_proto_file_without_ops_is_an_error_naming_it(tmp_path):
    path = _write(tmp_path, 'graph {\n  name: "g"\n}\n', "ge_proto_00000001_Build.txt")
    assert _error(path) == (f"{path}: no ops: 1 graph(s) ('g') and not one op in them (a GE graph dump lists its ops "
                            "as 'op { ... }' (ge_proto) or 'node { ... }' (ONNX) blocks)")
    json_path = _write(tmp_path, '{"graph": [{"name": "g"}, {"name": "h"}]}', "g.json")
    assert _error(json_path).startswith(f"{json_path}: no ops: 2 graph(s) ('g', 'h')")
    assert _error(_write(tmp_path, "ir_version: 6\n")) == \
        f"{tmp_path / ONNX_NAME}: holds no graph (an ONNX graph dump has one 'graph {{ ... }}' block)"


def test_a_file_that_is_not_utf8_is_one_line_naming_the_byte(tmp_path):
    text = _model(_node("a", "ge:Data", [], _ids(0))).encode("utf-8")
    bad = text.replace(b'name: "a"', b'name: "\xffa"')
    path = _write(tmp_path, bad)
    offset = bad.index(b"\xff")
    assert _error(path) == f"{path}: line 5: byte {offset} is not UTF-8 (a GE graph dump is UTF-8 text)"


def test_an_input_that_is_not_producer_index_is_an_error_naming_the_node(tmp_path):
    path = _write(tmp_path, _model(_node("b", "ge:Relu", ["a:x"], _ids(0))))
    assert _error(path) == f"{path}: node 'b' has input 'a:x', which is not 'producer:index'"


def test_descriptor_indexes_far_past_those_written_are_an_error_not_millions_of_descriptors(tmp_path):
    far = _attribute("output_desc_dtype:999999999", "STRING", "DT_FLOAT") + _attribute("output_desc_nums", "INT", 1)
    path = _write(tmp_path, _model(_node("a", "ge:Data", [], _ids(0) + far)))
    assert _error(path) == f"{path}: node 'a': output descriptor 999999999 given, but only 1 of them"
    gap = (_attribute("output_desc_dtype:0", "STRING", "DT_FLOAT") + _attribute("output_desc_dtype:2", "STRING",
                                                                                 "DT_INT32")
           + _attribute("output_desc_nums", "INT", 3))  # GE leaves a null descriptor out
    model, notes = _read(_write(tmp_path, _model(_node("a", "ge:Data", [], _ids(0) + gap))))
    assert [desc.dtype for desc in model.root.op("a").output_descs] == ["DT_FLOAT", "DT_UNDEFINED", "DT_INT32"]
    assert not any("descriptor counts" in note for note in notes)


def test_read_ge_graph_keeps_each_note_naming_the_file(tmp_path):
    path = _write(tmp_path, _model(_node("a", "ge:Data")))
    model = read_ge_graph(path)
    assert model.root.op("a").type == "Data"
    assert list(model.notes) == \
        [f"{path}: no node has attributes (DUMP_GE_GRAPH=3 writes names, types and links only): op ids, stream ids, "
         "tensor descriptors and attributes such as _datadump_original_op_names are unknown; the ge_proto_*.txt of "
         "the same dump has them"]


def test_parse_ge_graph_tells_onnx_by_content_or_by_a_pbtxt_name():
    text = _model(_node("a", "ge:Data", [], _ids(0)))
    assert parse_ge_graph(text).root.op("a").type == "Data"
    bare = 'graph {\n  name: "g"\n  node {\n    name: "a"\n    op_type: "ge:Data"\n  }\n}\n'
    assert parse_ge_graph(bare).root.op("a").type == "Data"  # a graph of "node" blocks is ONNX whatever its name
    no_head = 'graph {\n  name: "g"\n}\n'
    with pytest.raises(GraphFormatError, match=r"x\.pbtxt: no ops"):
        parse_ge_graph(no_head, source="x.pbtxt")


# ------------------------------------------------------------------------------------------ finding Build graphs
@pytest.mark.parametrize("name, expected", [
    ("ge_onnx_00000001_graph_11_Build.pbtxt", ("ge_onnx", 1, 11)),
    ("ge_onnx_00000012_aclop_graph_3_Build.pbtxt", ("ge_onnx", 12, 3)),
    ("ge_onnx_00012_graph_3_Build.pbtxt", ("ge_onnx", 12, 3)),
    ("ge_proto_00000001_graph_11_Build.txt", ("ge_proto", 1, 11)),
    ("ge_proto_00000002_aclop_graph_4_Build.txt", ("ge_proto", 2, 4)),
    ("ge_proto_00292_Build.txt", ("ge_proto", 292, None)),
    ("ge_onnx_00000001_graph_11_Build.txt", None),
    ("ge_proto_00000001_Build.pbtxt", None),
    ("ge_onnx_00000001_graph_11_PreRunAfterBuild.pbtxt", None),
    ("ge_onnx_0000001_graph_11_Build.pbtxt", None),
])
def test_build_graph_names_of_both_forms(name, expected):
    parsed = parse_build_graph_name(name)
    assert (None if parsed is None else (parsed.form, parsed.index, parsed.graph_id)) == expected
    assert (BUILD_GRAPH_NAME.match(name) is not None) == (expected is not None)


def _graph_file(folder: Path, name: str, op_name: str, graph_name: str = "g", mtime: int = 1000) -> Path:
    if name.endswith(".pbtxt"):
        text = _model(_node(op_name, "ge:Data", [], _ids(0)), graph_name)
    else:
        text = f'graph {{\n  name: "{graph_name}"\n  op {{\n    name: "{op_name}"\n    type: "Data"\n  }}\n}}\n'
    path = _write(folder, text, name)
    os.utime(str(path), (mtime, mtime))
    return path


def test_an_onnx_build_file_alone_is_found_and_named(tmp_path):
    path = _graph_file(tmp_path, "ge_onnx_00000003_graph_1_Build.pbtxt", "x", "train")
    assert build_graph_files(tmp_path) == [path]
    assert find_build_graph(tmp_path) == find_build_graph(tmp_path, "train") == path
    assert root_graph_name(path) == "train"
    assert choose_build_graph(tmp_path, "train").path == path


@pytest.mark.parametrize("proto_name", ["ge_proto_00000001_graph_1_Build.txt", "ge_proto_00000001_Build.txt"])
def test_ge_proto_wins_over_the_onnx_file_of_the_same_index_and_graph(tmp_path, proto_name):
    onnx = _graph_file(tmp_path, "ge_onnx_00000001_graph_1_Build.pbtxt", "from_onnx", mtime=2000)  # even if newer
    proto = _graph_file(tmp_path, proto_name, "from_proto")
    assert build_graph_files(tmp_path) == [proto]
    assert read_ge_graph(find_build_graph(tmp_path)).root.ops[0].name == "from_proto"
    assert onnx.exists()


def test_an_onnx_file_of_another_graph_or_index_stays_a_candidate(tmp_path):
    proto = _graph_file(tmp_path, "ge_proto_00000001_graph_1_Build.txt", "p1", mtime=1000)
    other_graph = _graph_file(tmp_path, "ge_onnx_00000001_graph_2_Build.pbtxt", "o1", mtime=1000)
    newer = _graph_file(tmp_path, "ge_onnx_00000002_graph_1_Build.pbtxt", "o2", mtime=3000)
    assert build_graph_files(tmp_path) == [newer, proto, other_graph]  # equal times and indexes: by name


# ------------------------------------------------------------------------------------------ the command line
def _cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "precision_tool", *map(str, argv)], capture_output=True, text=True,
                          timeout=120, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)))


def _ls_counts(stdout: str) -> Dict[str, int]:
    """``type -> ops`` from the table ``ls`` prints without filters."""
    return {match.group(1): int(match.group(2))
            for match in re.finditer(r"(?m)^(\S+) +([0-9]+) +[0-9]+ +[0-9]+$", stdout)}


@needs_real_graphs
def test_ls_lists_the_ops_of_a_graph_folder_holding_only_the_onnx_file(tmp_path):
    graph_dir = tmp_path / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    onnx = graph_dir / "ge_onnx_00000001_graph_11_Build.pbtxt"
    shutil.copyfile(str(REAL_ONNX), str(onnx))
    done = _cli("-d", tmp_path, "ls")
    assert done.returncode == 0, done.stderr
    raw_types = Counter(op_type[len("ge:"):] for _, op_type, _, _ in _raw_nodes(_real_text()) if op_type != "subgraph")
    assert _ls_counts(done.stdout) == dict(raw_types)
    assert done.stdout.startswith(f"{sum(raw_types.values())} ops of graph ge_default_20230713074125_11 ({onnx})")
    assert f"{onnx}: {LEVEL_NOTE}" in done.stdout and "Traceback" not in done.stderr
    assert done.stderr == ""  # the notes are part of the report, not Python warnings

    shutil.copyfile(str(REAL_PROTO), str(graph_dir / "ge_proto_00000001_Build.txt"))  # the same run's ge_proto
    done = _cli("-d", tmp_path, "ls")
    assert done.returncode == 0, done.stderr
    assert f"ops of graph ge_default_20230713074125_11 ({graph_dir / 'ge_proto_00000001_Build.txt'})" in done.stdout
    assert LEVEL_NOTE not in done.stdout


def test_ls_prefers_ge_proto_when_both_forms_hold_the_graph(tmp_path):
    graph_dir = tmp_path / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    _graph_file(graph_dir, "ge_onnx_00000001_graph_1_Build.pbtxt", "from_onnx", mtime=2000)
    done = _cli("-d", tmp_path, "ls", "-n", "from_")
    assert (done.returncode, re.findall(r"(?m)^0 +(from_\w+) ", done.stdout)) == (0, ["from_onnx"]), done.stderr
    _graph_file(graph_dir, "ge_proto_00000001_graph_1_Build.txt", "from_proto")
    done = _cli("-d", tmp_path, "ls", "-n", "from_")
    assert (done.returncode, re.findall(r"(?m)^0 +(from_\w+) ", done.stdout)) == (0, ["from_proto"]), done.stderr
