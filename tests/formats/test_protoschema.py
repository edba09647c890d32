import pytest
from google.protobuf import text_format

from precision_tool.formats.protoschema import build_messages


def test_scalars_repeated_maps_and_enums_round_trip():
    classes = build_messages("t.schema", {
        "Outer": [(1, "name", "string"), (2, "dims", "repeated int64"), (3, "attr", "map<string,Inner>"),
                  (4, "kind", "Kind")],
        "Inner": [(1, "s", "bytes"), (2, "f", "float")],
    }, {"Kind": {0: "K_NONE", 7: "K_SEVEN"}})
    outer = classes["Outer"](name="x", dims=[1, -2, 3], kind=7)
    outer.attr["a"].s = b"\x00\xff"
    wire = outer.SerializeToString()
    back = classes["Outer"].FromString(wire)
    assert back == outer and list(back.dims) == [1, -2, 3] and back.attr["a"].s == b"\x00\xff"
    text = text_format.MessageToString(outer)
    assert "kind: K_SEVEN" in text
    assert text_format.Parse(text, classes["Outer"]()) == outer


def test_repeated_scalars_are_packed_on_the_wire():
    classes = build_messages("t.packed", {"S": [(1, "dim", "repeated uint64")]})
    # field 1, wire type 2 (length-delimited) = tag byte 0x0a, then length 3, then three varints
    assert classes["S"](dim=[1, 2, 3]).SerializeToString() == b"\x0a\x03\x01\x02\x03"


def test_unknown_type_in_a_table_is_a_bug_report():
    with pytest.raises(ValueError, match="unknown field type 'Nope'"):
        build_messages("t.bad", {"M": [(1, "x", "Nope")]})


def test_oneof_members_keep_presence_at_default_values():
    classes = build_messages("t.oneof", {"V": [(1, "s", "string"), (3, "i", "int64")]},
                             oneofs={"V": {"value": ["s", "i"]}})
    zero = classes["V"](i=0)
    back = classes["V"].FromString(zero.SerializeToString())
    assert back.WhichOneof("value") == "i"
    assert text_format.MessageToString(back).strip() == "i: 0"
    with pytest.raises(ValueError, match="names unknown field 'x'"):
        build_messages("t.oneof2", {"V": [(1, "s", "string")]}, oneofs={"V": {"value": ["x"]}})
