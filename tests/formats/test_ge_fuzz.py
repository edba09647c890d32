"""Damaged GE graph files: only PrecisionToolError comes out, and the fast text parser never disagrees
with protobuf's own parser."""
from __future__ import annotations

import copy
import json
import tracemalloc

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, example, given, settings, strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats import ge_text
from precision_tool.formats.ge_graph import DataTypeValue, Graph, GraphModel, InputRef, NamedAttrs, OpNode, tensor_desc
from precision_tool.formats.ge_io import ge_graph_from_json, ge_graph_to_json, ge_graph_to_text, parse_ge_graph
from precision_tool.formats.ge_schema import GE_RECORDS, ge_messages
from tests.formats.test_proto_records import plain

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sample_model() -> GraphModel:
    desc = tensor_desc("DT_FLOAT16", "NC1HWC0", [1, 1, 2, 2, 16], origin_format="NHWC", origin_shape=[1, 2, 2, 3],
                       origin_name="tf/conv", origin_output_index=0)
    conv = OpNode("scope/conv", "Conv2D", id=1, stream_id=1, inputs=(InputRef("x", 0), InputRef("x", -1)),
                  input_descs=(desc,), output_descs=(desc,),
                  attrs={"_datadump_original_op_names": ["tf/conv", "tf/bn"], "pass_name": ["APass"],
                         "scope/conv_kernelname": "te_conv", "eps": 0.001, "flag": True, "T": DataTypeValue("DT_FLOAT"),
                         "blob": b"\x00\xff\"", "lli": [[1, 2], [3]], "func": NamedAttrs("f", {"k": "v"})},
                  extra_fields={"input_i": [0, 16]})
    return GraphModel((Graph("ge_default_1", (OpNode("x", "Data", output_descs=(desc,)), conv), ("x:0",)),),
                      name="ge_default_1", version=2)


TEXT = ge_graph_to_text(_sample_model()).encode()
JSON_OBJ = ge_graph_to_json(_sample_model())
JSON_TEXT = json.dumps(JSON_OBJ).encode()
# Bytes that matter to the text grammar, so flips reach the parsers rather than only string contents.
SYNTAX_BYTES = st.sampled_from(list(b'{}:"\\ \n#[],<>-.0123456789eE_xXtf') + [0xFF, 0x80, 0xC3])


def _parses_or_fails_cleanly(data: bytes) -> None:
    """Parse ``data``: only a one-line PrecisionToolError may come out, and the parse may not allocate
    more than a small multiple of the input (64x + 1 MiB, as for dump files)."""
    tracemalloc.start()
    try:
        parse_ge_graph(data, source="fuzz.txt")
    except PrecisionToolError as error:
        assert str(error).startswith("fuzz.txt") and "\n" not in str(error)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= 64 * len(data) + (1 << 20), f"parsing {len(data)} bytes allocated {peak} bytes"


def _flip(data: bytes, flips) -> bytes:
    buffer = bytearray(data)
    for position, value in flips:
        buffer[position % len(buffer)] = value
    return bytes(buffer)


def test_the_samples_parse():
    assert parse_ge_graph(TEXT) == parse_ge_graph(JSON_TEXT) == _sample_model()


@FUZZ
@given(st.integers(0, len(TEXT)))
def test_truncated_text(cut):
    _parses_or_fails_cleanly(TEXT[:cut])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(TEXT) - 1), st.one_of(st.integers(0, 255), SYNTAX_BYTES)),
                min_size=1, max_size=8))
def test_byte_flips_in_text(flips):
    _parses_or_fails_cleanly(_flip(TEXT, flips))


@FUZZ
@given(st.integers(0, len(JSON_TEXT)))
def test_truncated_json(cut):
    _parses_or_fails_cleanly(JSON_TEXT[:cut])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(JSON_TEXT) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_byte_flips_in_json(flips):
    _parses_or_fails_cleanly(_flip(JSON_TEXT, flips))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, prefix + (index,))


JSON_PATHS = [p for p in _paths(JSON_OBJ) if p]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(JSON_PATHS), JSON_VALUES), min_size=1, max_size=3))
def test_wrong_values_anywhere_in_json(replacements):
    obj = copy.deepcopy(JSON_OBJ)
    for path, value in replacements:
        node = obj
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this path
    try:
        ge_graph_from_json(obj, source="fuzz.json")
    except PrecisionToolError as error:
        assert str(error).startswith("fuzz.json")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # protobuf's parser on escapes such as "\\q"
@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(TEXT) - 1), SYNTAX_BYTES), min_size=1, max_size=4),
       st.sampled_from(["message", "record"]))
@example(flips=[(1382, 48)], root="message")  # "f: 0.001" -> "f:00.001": protobuf refuses a leading zero
def test_line_parser_never_disagrees_with_protobuf(flips, root):
    """The line parser, into a protobuf message or into a record (the reader's own path, no protobuf runtime),
    against protobuf's own parser on damaged text: it gives up, or reads what protobuf reads."""
    text = _flip(TEXT, flips).decode("utf-8", "replace")
    try:
        expected = text_format.Parse(text, ge_messages()["ModelDef"](), allow_unknown_field=True)
    except Exception:  # noqa: BLE001 -- any failure of the full parser
        expected = None
    fast = ge_messages()["ModelDef"]() if root == "message" else GE_RECORDS.empty("ModelDef")
    try:
        ge_text._parse_canonical(text, fast)
    except ge_text._NotCanonical:
        return  # gave up: the full parser decides, as the reader does
    assert expected is not None, "the line parser accepted text protobuf rejects"
    assert plain(fast) == plain(expected) and (root == "record" or fast == expected)
