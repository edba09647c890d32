"""GE graph dumps: the model, its lookups, the text and JSON readers and writers, finding Build files."""
import json
import os

import pytest
from google.protobuf import text_format

from precision_tool.errors import GraphFormatError, WorkspaceError
from precision_tool.formats.ge_graph import (Consumer, DataTypeValue, Graph, GraphModel, InputRef, NamedAttrs,
                                             OpNode, TensorDesc, TensorValue, tensor_desc)
from precision_tool.formats.ge_io import (build_graph_files, find_build_graph, ge_graph_from_json, ge_graph_to_json,
                                          ge_graph_to_text, parse_ge_graph, read_ge_graph, root_graph_name,
                                          write_ge_graph_json, write_ge_graph_text)
from precision_tool.formats.ge_schema import ge_messages
from precision_tool.formats import ge_text
from precision_tool.formats.ge_text import parse_ge_text

# A Build graph as GE prints it: one field per line, defaults left out, fields GE added later
# (attr_groups) that this schema leaves out on purpose.
BUILD_TXT = """\
name: "ge_default_20240101000000_1"
version: 3
graph {
  name: "ge_default_20240101000000_1"
  input: "x:0"
  output: "scope/relu:0"
  op {
    name: "x"
    type: "Data"
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          s: "x"
          val_type: VT_LIST_STRING
        }
      }
    }
    output_desc {
      dtype: DT_FLOAT16
      shape {
        dim: 1
        dim: 4
        dim: 4
        dim: 3
      }
      layout: "NHWC"
      attr {
        key: "origin_format"
        value {
          s: "NHWC"
        }
      }
      size: 192
    }
    attr_groups {
      op_attr_group {
        name: "whatever a newer GE writes"
      }
    }
  }
  op {
    name: "scope/conv_bn"
    type: "Conv2D"
    input: "x:0"
    input: ""
    input: "x:-1"
    attr {
      key: "T"
      value {
        dt: 1
      }
    }
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          s: "scope/conv"
          s: "scope/bn"
          val_type: VT_LIST_STRING
        }
      }
    }
    attr {
      key: "_ge_attr_op_kernel_lib_name"
      value {
        s: "AIcoreEngine"
      }
    }
    attr {
      key: "epsilon"
      value {
        f: 0.001
      }
    }
    attr {
      key: "pads_per_group"
      value {
        list_list_int {
          list_list_i {
            list_i: 1
            list_i: 2
          }
          list_list_i {
          }
        }
      }
    }
    attr {
      key: "pass_name"
      value {
        list {
          s: "ConvBatchnormFusionPass"
          val_type: VT_LIST_STRING
        }
      }
    }
    attr {
      key: "pass_name_ub"
      value {
        s: "TbeConvElemwiseFusionPass"
      }
    }
    attr {
      key: "scope/conv_bn_kernelname"
      value {
        s: "te_conv2d_abc123"
      }
    }
    id: 1
    stream_id: 2
    input_i: 0
    output_i: 256
    is_input_const: false
    output_desc {
      dtype: DT_FLOAT16
      shape {
        dim: 1
        dim: 1
        dim: 4
        dim: 4
        dim: 16
      }
      layout: "NC1HWC0"
      attr {
        key: "_datadump_origin_format"
        value {
          s: "NHWC"
        }
      }
      attr {
        key: "_datadump_origin_name"
        value {
          s: "scope/bn"
        }
      }
      attr {
        key: "_datadump_origin_output_index"
        value {
          i: 0
        }
      }
      attr {
        key: "origin_shape"
        value {
          list {
            i: 1
            i: 4
            i: 4
            i: 3
            val_type: VT_LIST_INT
          }
        }
      }
      real_dim_cnt: 5
    }
  }
  op {
    name: "scope/relu"
    type: "Relu"
    input: "scope/conv_bn:0"
    id: 2
  }
}
"""


def _read(text=BUILD_TXT):
    return parse_ge_graph(text, source="ge_proto_00000001_Build.txt")


def _diamond():
    """a -> b, a -> c, (b, c) -> d, in file order d, c, b, a (reverse of execution)."""
    ops = (OpNode("d", "Add", inputs=(InputRef("b"), InputRef("c", 0))), OpNode("c", "Relu", inputs=(InputRef("a"),)),
           OpNode("b", "Relu", inputs=(InputRef("a"),)), OpNode("a", "Data"))
    return Graph("g", ops)


# ------------------------------------------------------------------------------------------ model and properties
def test_text_reads_into_the_model_with_properties_from_attrs():
    model = _read()
    assert [g.name for g in model.graphs] == ["ge_default_20240101000000_1"]
    assert model.version == 3 and model.root.inputs == ("x:0",) and model.root.outputs == ("scope/relu:0",)
    op = model.root.op("scope/conv_bn")
    assert (op.type, op.id, op.stream_id) == ("Conv2D", 1, 2)
    assert op.inputs == (InputRef("x", 0), InputRef("", 0), InputRef("x", -1))
    assert [ref.is_control for ref in op.inputs] == [False, False, True]
    assert op.data_inputs == (InputRef("x", 0),)
    assert op.original_op_names == ("scope/conv", "scope/bn")
    assert op.pass_names == ("ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass")
    assert op.kernel_name == "te_conv2d_abc123" and op.kernel_lib == "AIcoreEngine"
    assert op.is_fused and not model.root.op("x").is_fused
    assert op.extra_fields == {"input_i": [0], "output_i": [256], "is_input_const": [False]}


def test_attr_values_are_plain_python():
    attrs = _read().root.op("scope/conv_bn").attrs
    assert attrs["epsilon"] == 0.001  # float32 read back in its shortest form, not 0.0010000000474974513
    assert attrs["T"] == DataTypeValue("DT_FLOAT")
    assert attrs["pads_per_group"] == [[1, 2], []]
    assert attrs["_datadump_original_op_names"] == ["scope/conv", "scope/bn"]


def test_tensor_desc_origin_properties():
    model = _read()
    out = model.root.op("scope/conv_bn").output_descs[0]
    assert (out.dtype, out.layout, out.shape) == ("DT_FLOAT16", "NC1HWC0", (1, 1, 4, 4, 16))
    assert (out.origin_format, out.origin_shape, out.origin_name, out.origin_output_index) == \
        ("NHWC", (1, 4, 4, 3), "scope/bn", 0)
    assert out.extra_fields == {"real_dim_cnt": 5}
    data_out = model.root.op("x").output_descs[0]
    assert data_out.origin_format == "NHWC"  # from origin_format when _datadump_origin_format is absent
    assert (data_out.origin_shape, data_out.origin_name, data_out.origin_output_index, data_out.size) == \
        (None, "", None, 192)


def test_datadump_origin_format_wins_over_origin_format():
    desc = TensorDesc(attrs={"origin_format": "NCHW", "_datadump_origin_format": "NHWC"})
    assert desc.origin_format == "NHWC"


def test_tensor_desc_helper_sets_both_format_attrs_and_an_empty_shape_is_kept():
    desc = tensor_desc("DT_FLOAT", "ND", [], origin_format="ND", origin_shape=[], origin_name="s",
                       origin_output_index=1)
    assert desc.attrs == {"origin_format": "ND", "_datadump_origin_format": "ND", "origin_shape": [],
                          "_datadump_origin_name": "s", "_datadump_origin_output_index": 1}
    assert desc.origin_shape == () and desc.shape == ()


def test_input_ref_parse_and_format():
    assert InputRef.parse("a/b:3") == InputRef("a/b", 3)
    assert InputRef.parse("a:-1").is_control
    assert InputRef.parse("plain") == InputRef("plain", 0)
    assert InputRef.parse("").is_empty and str(InputRef.parse("")) == ""
    assert str(InputRef("scope/x", 2)) == "scope/x:2"
    with pytest.raises(ValueError):
        InputRef.parse("a:b")


def test_bad_input_entry_is_a_graph_format_error_naming_the_op():
    text = 'graph {\n  op {\n    name: "y"\n    input: "x:one"\n  }\n}\n'
    with pytest.raises(GraphFormatError, match=r"ge\.txt: op 'y' has input 'x:one', which is not 'producer:index'"):
        parse_ge_graph(text, source="ge.txt")


def test_sequences_given_as_lists_are_stored_as_tuples_and_input_strings_parsed():
    op = OpNode("n", inputs=["a:0"], output_descs=[TensorDesc(shape=[2, 3])])
    graph = Graph("g", [op], ["a:0"])
    assert graph == Graph("g", (OpNode("n", inputs=(InputRef("a"),), output_descs=(TensorDesc(shape=(2, 3)),)),),
                          ("a:0",))
    assert GraphModel([graph]).graphs == (graph,)


def test_single_string_passes_and_names_are_accepted():
    op = OpNode("n", attrs={"pass_name": "OnePass", "_datadump_original_op_names": "tf_op"})
    assert op.pass_names == ("OnePass",) and op.original_op_names == ("tf_op",)


# ------------------------------------------------------------------------------------------ lookups
def test_lookups_by_name_type_and_consumers():
    graph = _read().root
    assert graph.op("x").type == "Data" and "x" in graph and len(graph) == 3
    assert graph.find_op("nope") is None
    with pytest.raises(KeyError, match="has no op 'nope'"):
        graph.op("nope")
    assert [op.name for op in graph.ops_of_type("Relu")] == ["scope/relu"]
    conv = graph.op("scope/conv_bn")
    assert graph.consumers("x", 0) == (Consumer(conv, 0),)
    assert graph.consumers("x") == (Consumer(conv, 0), Consumer(conv, 2))  # control edge too
    assert graph.consumers("x", -1) == (Consumer(conv, 2),)
    assert [c.op.name for c in graph.consumers("scope/conv_bn", 0)] == ["scope/relu"]
    assert graph.consumers("", 0) == ()  # the empty input entry is nobody's consumer


def test_model_level_lookups_cover_subgraphs():
    sub = Graph("body", (OpNode("inner", "Add"),))
    model = GraphModel((Graph("root", (OpNode("outer", "While", subgraph_names=("body",)),)), sub))
    assert model.root.name == "root" and model.graph("body") is sub
    assert model.find_op("inner") is sub.ops[0] and model.find_op("missing") is None
    assert [(g.name, op.name) for g, op in model.all_ops()] == [("root", "outer"), ("body", "inner")]
    with pytest.raises(KeyError, match="graphs: root, body"):
        model.graph("other")


def test_topological_order_puts_producers_first_and_keeps_file_order_among_equals():
    result = _diamond().topological_order()
    assert [op.name for op in result.ops] == ["a", "c", "b", "d"]
    assert result.is_complete


def test_topological_order_of_an_ordered_graph_is_file_order():
    graph = _read().root
    assert graph.topological_order().ops == graph.ops


def test_topological_order_reports_missing_producers_and_cycles_without_raising():
    graph = Graph("g", (OpNode("p", "Add", inputs=(InputRef("q"),)), OpNode("q", "Add", inputs=(InputRef("p"),)),
                        OpNode("r", "Relu", inputs=(InputRef("outside", 0), InputRef("", 0))),
                        OpNode("s", "Relu", inputs=(InputRef("s"),))))
    result = graph.topological_order()
    assert [op.name for op in result.ops] == ["r", "p", "q", "s"]
    assert result.missing_producers == (("r", "outside"),)
    assert result.cycle == ("p", "q", "s") and not result.is_complete


# ------------------------------------------------------------------------------------------ round trips
def _every_attr_kind_model():
    desc = tensor_desc("DT_FLOAT16", "NC1HWC0", [1, 1, 2, 2, 16], origin_format="NHWC", origin_shape=[1, 2, 2, 3],
                       origin_name="tf/op", origin_output_index=0)
    inner = Graph("inner", (OpNode("c", "Const"),))
    attrs = {
        "s": "text with \"quotes\", \\ and é", "raw": "\udcff\udcfe not utf-8", "i": -(2 ** 40), "zero": 0,
        "f": 0.25, "b": False, "bt": b"\x00\x01\xff", "dt": DataTypeValue("DT_BF16"), "nothing": None,
        "ls": ["a", "b"], "li": [1, -2], "lf": [0.5, 1.5], "lb": [True, False], "lbt": [b"\x00", b"z"],
        "empty": [], "ldt": [DataTypeValue("DT_INT8")], "ltd": [desc], "lg": [inner],
        "lna": [NamedAttrs("n", {"k": 1})], "lt": [TensorValue(desc, b"\x01\x02")],
        "lli": [[1, 2], [3]], "llf": [[0.5], [1.0, 2.0]], "td": desc, "g": inner, "func": NamedAttrs("f", {"x": "y"}),
        "t": TensorValue(desc, b"\x00" * 4), "inf": float("inf"),
    }
    op = OpNode("op/with:colon?", "Custom", id=7, stream_id=1, inputs=(InputRef("c", 0), InputRef("", 0)),
                input_descs=(desc,), output_descs=(desc, TensorDesc()), attrs=attrs, subgraph_names=("inner",),
                extra_fields={"workspace": [16], "has_out_attr": True})
    return GraphModel((Graph("root", (OpNode("c", "Const"), op), ("c:0",), ("op:0",), {"ga": 1}), inner),
                      name="m", version=2, custom_version="v1", attrs={"ma": ["x"]})


def test_model_text_model_round_trip_keeps_every_attr_kind():
    model = _every_attr_kind_model()
    assert parse_ge_graph(ge_graph_to_text(model)) == model


def test_model_json_model_round_trip_keeps_every_attr_kind():
    model = _every_attr_kind_model()
    text = json.dumps(ge_graph_to_json(model))
    assert parse_ge_graph(text) == model


def test_text_to_json_to_model_equals_the_text_model():
    from_text = _read()
    assert parse_ge_graph(json.dumps(ge_graph_to_json(from_text))) == from_text


def test_text_written_by_us_is_what_ge_prints_for_its_own_layout():
    # The sample minus the unknown attr_groups block prints back line for line (same field order).
    without_unknown = BUILD_TXT.replace(
        '    attr_groups {\n      op_attr_group {\n        name: "whatever a newer GE writes"\n      }\n    }\n', "")
    assert ge_graph_to_text(_read()) == without_unknown


def test_numpy_numbers_are_stored_as_plain_ones():
    import numpy as np

    op = OpNode("n", attrs={"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True),
                            "li": [np.int32(1), 2], "lli": [[np.int64(4)]], "lf": [np.float16(0.25), 1]})
    back = parse_ge_graph(ge_graph_to_text(GraphModel((Graph("g", (op,)),)))).root.op("n").attrs
    assert back == {"i": 3, "f": 0.5, "b": True, "li": [1, 2], "lli": [[4]], "lf": [0.25, 1.0]}
    assert [type(back[k]) for k in ("i", "f", "b")] == [int, float, bool]


def test_values_the_table_cannot_store_are_bugs_not_user_errors():
    with pytest.raises(TypeError, match="cannot store a object as a GE attribute value"):
        ge_graph_to_text(GraphModel((Graph("g", (OpNode("n", attrs={"x": object()}),)),)))
    with pytest.raises(TypeError, match=r"cannot store a list of \['int', 'str'\] as one GE attribute"):
        ge_graph_to_text(GraphModel((Graph("g", (OpNode("n", attrs={"x": [1, "a"]}),)),)))


def test_files_round_trip_through_the_writers(tmp_path):
    model = _every_attr_kind_model()
    text_path = write_ge_graph_text(model, tmp_path / "ge_proto_00000123_Build.txt")
    json_path = write_ge_graph_json(model, tmp_path / "graph.json")
    assert read_ge_graph(text_path) == model == read_ge_graph(json_path)
    assert sorted(os.listdir(tmp_path)) == ["ge_proto_00000123_Build.txt", "graph.json"]  # no temp files left


# ------------------------------------------------------------------------------------------ the JSON form
def test_json_form_is_what_msaccucmp_reads():
    obj = ge_graph_to_json(_read())
    op = obj["graph"][0]["op"][1]
    assert list(op)[:2] == ["name", "type"] and op["id"] == 1 and isinstance(op["id"], int)
    assert op["input"] == ["x:0", "", "x:-1"]
    attrs = {a["key"]: a["value"] for a in op["attr"]}
    assert attrs["_datadump_original_op_names"] == {"list": {"s": ["scope/conv", "scope/bn"],
                                                             "val_type": "VT_LIST_STRING"}}
    assert attrs["T"] == {"dt": 1} and attrs["epsilon"] == {"f": 0.001}
    out = op["output_desc"][0]
    assert out["dtype"] == "DT_FLOAT16" and out["shape"] == {"dim": [1, 1, 4, 4, 16]}
    out_attrs = {a["key"]: a["value"] for a in out["attr"]}
    assert out_attrs["_datadump_origin_output_index"] == {"i": 0}  # a zero int is kept, not dropped
    assert out_attrs["_datadump_origin_name"] == {"s": "scope/bn"}  # plain text, not base64
    assert out_attrs["origin_shape"] == {"list": {"i": [1, 4, 4, 3], "val_type": "VT_LIST_INT"}}


def test_json_keeps_keys_msaccucmp_requires_even_when_empty():
    obj = ge_graph_to_json(GraphModel((Graph("", (OpNode(""),)), Graph("empty"))))
    assert obj["graph"] == [{"name": "", "op": [{"name": "", "type": ""}]}, {"name": "empty", "op": []}]


def test_json_reader_accepts_ge_and_protobuf_spellings():
    obj = {"graph": [{"name": "g", "op": [
        {"name": "a", "type": "T", "id": "5", "stream_id": 1, "attr": [
            {"key": "f", "value": {"f": "0.5"}}, {"key": "nul", "value": None},
            {"key": "bt", "value": {"bt": "\\001\\377"}},
            {"key": "l", "value": {"list": {"i": ["1", 2], "val_type": 2}}}],
         "output_desc": [None, {"dtype": 2, "attr": {"_datadump_origin_name": {"s": "tf"}}}]}]}]}
    op = ge_graph_from_json(obj).root.op("a")
    assert op.id == 5 and op.attrs == {"f": 0.5, "nul": None, "bt": b"\x01\xff", "l": [1, 2]}
    assert op.output_descs[0] == TensorDesc() and op.output_descs[1].dtype == "DT_FLOAT16"
    assert op.output_descs[1].origin_name == "tf"


@pytest.mark.parametrize("obj, message", [
    ([], "top level: expected an object, got list"),
    ({"graph": {}}, "graph: expected a list"),
    ({"graph": [{"op": [{"name": 3}]}]}, r"graph\[0\]\.op\[0\]\.name: expected a string, got 3"),
    ({"graph": [{"op": [{"id": True}]}]}, r"graph\[0\]\.op\[0\]\.id: expected an integer, got True"),
    ({"graph": [{"op": [{"id": 2 ** 64}]}]}, r"graph\[0\]\.op\[0\]\.id: cannot be stored"),
    ({"graph": [{"op": [{"output_desc": [{"dtype": "DT_NOPE"}]}]}]}, "is not a DataType name"),
    ({"graph": [{"op": [{"attr": [{"value": {}}]}]}]}, r'attr\[0\]: expected \{"key"'),
    ({"graph": [{"op": [{"attr": [{"key": "k", "value": {"b": 1}}]}]}]}, "expected true or false"),
    ({"graph": [{"op": [{"attr": [{"key": "k", "value": {"bt": "\\q"}}]}]}]}, "expected a C-escaped byte string"),
    ({"graph": [{"name": "\udc80"}]}, r"graph\[0\]\.name: cannot be stored"),
    ({"name": "no graphs"}, "holds no graph"),
])
def test_json_reader_errors_name_the_path(obj, message):
    with pytest.raises(GraphFormatError, match=message) as caught:
        ge_graph_from_json(obj, source="g.json")
    assert str(caught.value).startswith("g.json: ")


def test_json_syntax_error_names_line_and_column():
    with pytest.raises(GraphFormatError, match=r"g\.json: line 2, column 1: Expecting value \(not valid JSON\)"):
        parse_ge_graph('{"graph":\n]', source="g.json")


# ------------------------------------------------------------------------------------------ the text form
def test_garbled_text_names_file_line_and_column(tmp_path):
    path = tmp_path / "ge_proto_00000001_Build.txt"
    garbled = BUILD_TXT.replace('    type: "Relu"\n', '    type: "Relu\n')
    path.write_text(garbled)
    line = garbled.splitlines().index('    type: "Relu') + 1
    with pytest.raises(GraphFormatError) as caught:
        read_ge_graph(path)
    assert str(caught.value).startswith(f"{path}: line {line}, column 11: ")
    assert "String missing ending quote" in str(caught.value)


def test_unknown_enum_name_is_an_error_with_its_line():
    text = BUILD_TXT.replace("dtype: DT_FLOAT16\n      shape {\n        dim: 1\n        dim: 1", "dtype: DT_NOPE\n"
                             "      shape {\n        dim: 1\n        dim: 1")
    line = text.splitlines().index("      dtype: DT_NOPE") + 1
    with pytest.raises(GraphFormatError, match=rf"line {line}, column \d+: .*no value named DT_NOPE"):
        _read(text)


def test_not_utf8_is_an_error_with_its_line():
    with pytest.raises(GraphFormatError, match=r"g\.txt: line 2: byte 16 is not UTF-8"):
        parse_ge_graph(b'graph {\n name: "\xff"\n}\n', source="g.txt")


def test_empty_file_holds_no_graph():
    with pytest.raises(GraphFormatError, match="holds no graph"):
        parse_ge_graph(b"", source="g.txt")


@pytest.mark.parametrize("one_line", [False, True])
def test_absurd_nesting_is_a_format_error_not_a_crash(one_line):
    depth = 400  # graphs in attrs of ops in graphs ...
    text = 'graph {\nop {\n' + 'attr {\nkey: "k"\nvalue {\ng {\nop {\n' * depth + '}\n}\n}\n}\n' * depth + '}\n}\n'
    with pytest.raises(GraphFormatError, match="g.txt: .*nested too deeply to read"):
        parse_ge_graph(text.replace("\n", " ") if one_line else text, source="g.txt")
    obj = inner = {"op": [{"attr": []}]}
    for _ in range(depth):
        deeper = {"op": [{"attr": []}]}
        inner["op"][0]["attr"].append({"key": "k", "value": {"g": deeper}})
        inner = deeper
    with pytest.raises(GraphFormatError, match="g.json: nested too deeply to read"):
        ge_graph_from_json({"graph": [obj]}, source="g.json")


def test_line_parser_and_protobuf_parser_agree_on_the_sample():
    reference = text_format.Parse(BUILD_TXT, ge_messages()["ModelDef"](), allow_unknown_field=True)
    assert parse_ge_text(BUILD_TXT) == reference


@pytest.mark.parametrize("variant", [
    'graph { name: "g" op { name: "a" type: "T" } }',  # several fields on one line
    'graph {\n  # a comment\n  name: "g"\n  op {\n    name: "a"\n  }\n}\n',
    'graph {\n  name: "g"\n  op {\n    name: "a"\n    input_i: [1, 2]\n  }\n}\n',
    'graph: {\n  name: "g"\n}\n',
    'graph {\n  name: \'g\'\n  op <\n    name: "a"\n  >\n}\n',
    'graph {\n  name: "g" "h"\n}\n',
    'graph {\n  op {\n    has_out_attr: True\n    id: 0x10\n  }\n}\n',
    'graph {\n  op {\n    attr {\n      value {\n        i: 1\n      }\n      key: "late key"\n    }\n  }\n}\n',
])
def test_layouts_other_than_ges_still_parse(variant):
    with pytest.raises(ge_text._NotCanonical):  # the line parser gives up on these ...
        ge_text._parse_canonical(variant, ge_messages()["ModelDef"]())
    reference = text_format.Parse(variant, ge_messages()["ModelDef"](), allow_unknown_field=True)
    assert parse_ge_text(variant) == reference  # ... and the full parser reads them
    if any(graph.op for graph in reference.graph):
        assert parse_ge_graph(variant).root is not None
    else:  # a graph file without a single op is an error, never an empty model (tracker issue 15)
        with pytest.raises(GraphFormatError, match=r"<memory>: no ops: 1 graph\(s\) \('gh?'\)"):
            parse_ge_graph(variant)


def test_a_field_given_twice_is_the_full_parsers_error():
    with pytest.raises(GraphFormatError, match='should not have multiple "name" fields'):
        parse_ge_graph('graph {\n  name: "a"\n  name: "b"\n}\n')


# ------------------------------------------------------------------------------------------ finding Build graphs
def _touch(folder, name, graph_name="g", mtime=None):
    path = folder / name
    path.write_text(ge_graph_to_text(GraphModel((Graph(graph_name, (OpNode("x", "Data"),)),), name=graph_name)))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_build_graph_files_match_only_the_build_stage(tmp_path):
    for name in ["ge_proto_00000001_Build.txt", "ge_proto_00002_Build.txt", "ge_proto_00000003_graph_7_Build.txt",
                 "ge_proto_00000004_PreRunAfterBuild.txt", "ge_proto_0001_Build.txt", "ge_proto_00000005_Build.txt.bak",
                 "ge_proto_00000006_PreRunBegin.txt"]:
        _touch(tmp_path, name, mtime=1000)
    assert [p.name for p in build_graph_files(tmp_path)] == [
        "ge_proto_00000003_graph_7_Build.txt", "ge_proto_00002_Build.txt", "ge_proto_00000001_Build.txt"]


def test_find_build_graph_takes_the_newest_then_the_largest_index(tmp_path):
    _touch(tmp_path, "ge_proto_00000009_Build.txt", mtime=1000)
    _touch(tmp_path, "ge_proto_00000002_Build.txt", mtime=2000)  # a later run restarted the index
    assert find_build_graph(tmp_path).name == "ge_proto_00000002_Build.txt"
    _touch(tmp_path, "ge_proto_00000003_Build.txt", mtime=2000)
    assert find_build_graph(tmp_path).name == "ge_proto_00000003_Build.txt"


def test_find_build_graph_by_root_graph_name(tmp_path):
    _touch(tmp_path, "ge_proto_00000001_Build.txt", "ge_default_1", mtime=1000)
    _touch(tmp_path, "ge_proto_00000002_Build.txt", "ge_default_2", mtime=2000)
    assert find_build_graph(tmp_path, "ge_default_1").name == "ge_proto_00000001_Build.txt"
    with pytest.raises(WorkspaceError, match="no Build graph in .* has a root graph called 'other'.*"
                                             "ge_proto_00000002_Build.txt: ge_default_2"):
        find_build_graph(tmp_path, "other")


def test_root_graph_name_falls_back_to_a_full_read_for_other_layouts(tmp_path):
    path = tmp_path / "ge_proto_00000001_Build.txt"
    path.write_text('graph { op { name: "x" } name: "late_name" }')
    assert root_graph_name(path) == "late_name"


def test_no_build_graph_says_how_to_get_one(tmp_path):
    (tmp_path / "ge_proto_00000001_PreRunBegin.txt").write_text("")
    with pytest.raises(WorkspaceError, match=r"no GE Build graph \(ge_proto_\*_Build\.txt or ge_onnx_\*_Build\.pbtxt\) "
                                             r"in .*DUMP_GE_GRAPH=2"):
        find_build_graph(tmp_path)
    with pytest.raises(WorkspaceError, match="no such folder"):
        find_build_graph(tmp_path / "missing")


def test_reading_a_folder_or_missing_file_is_a_workspace_error(tmp_path):
    with pytest.raises(WorkspaceError, match="is a folder, not a GE graph file"):
        read_ge_graph(tmp_path)
    with pytest.raises(WorkspaceError, match="no such file"):
        read_ge_graph(tmp_path / "nope.txt")
