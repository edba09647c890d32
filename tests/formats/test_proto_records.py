"""The protobuf-free wire reader (precision_tool.formats.proto_records) against protobuf's own parser: the same
values for every message protobuf writes (generated DumpData headers, real GE graphs serialized), the same
verdict -- or a stricter one, never a looser one -- on damaged bytes, and the encoding rules by hand."""
from __future__ import annotations

import glob
import os
import random

import pytest
from hypothesis import given, settings, strategies as st

from precision_tool.formats import dump_schema, ge_schema
from precision_tool.formats.proto_records import ProtoDecodeError, RecordSchema

DUMP = RecordSchema(dump_schema.MESSAGES, dump_schema.ENUMS)
GE = RecordSchema(ge_schema.MESSAGES, ge_schema.ENUMS, {"AttrDef": {"value": ge_schema.ATTR_VALUE_FIELDS}})
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_WORLD = os.path.join(REPO, os.pardir, "shared", "real-world")


def plain(message):
    """A protobuf message or a record as nested dicts of its present fields (ListFields), maps as dicts."""
    out = {}
    for field, value in message.ListFields():
        if getattr(field, "kind", None) == "map" or (hasattr(value, "items") and not hasattr(value, "ListFields")):
            out[field.name] = {key: plain(value[key]) for key in value}
        elif ge_schema.is_repeated(field):  # protobuf < 5 has no FieldDescriptor.is_repeated
            out[field.name] = [plain(item) if hasattr(item, "ListFields") else item for item in value]
        else:
            out[field.name] = plain(value) if hasattr(value, "ListFields") else value
    return out


def both_readings(message_class, records, name, data):
    """``(protobuf's reading, the records')`` of ``data`` as :func:`plain` dicts, ``None`` for a refusal."""
    try:
        expected = plain(message_class.FromString(data))
    except Exception:  # noqa: BLE001 -- protobuf's DecodeError
        expected = None
    try:
        got = plain(records.decode(name, data))
    except ProtoDecodeError:
        got = None
    return expected, got


UINT64 = st.integers(0, 2**64 - 1)
INT32 = st.integers(-2**31, 2**31 - 1)
DIMS = st.lists(UINT64, max_size=6)
TEXT = st.text(max_size=12)


@st.composite
def dump_headers(draw):
    message = dump_schema.DumpData(version=draw(TEXT), dump_time=draw(UINT64), op_name=draw(TEXT))
    for group in (message.input, message.output):
        for _ in range(draw(st.integers(0, 3))):
            item = group.add(data_type=draw(INT32), format=draw(INT32), size=draw(UINT64), address=draw(UINT64),
                             sub_format=draw(INT32), data=draw(st.binary(max_size=4)))
            item.shape.dim.extend(draw(DIMS))
            if draw(st.booleans()):
                item.original_shape.SetInParent()
                item.original_shape.dim.extend(draw(DIMS))
            if group is message.output and draw(st.booleans()):
                item.original_op.name, item.original_op.output_index = draw(TEXT), draw(st.integers(0, 2**32 - 1))
    for _ in range(draw(st.integers(0, 2))):
        message.buffer.add(buffer_type=draw(INT32), size=draw(UINT64))
        message.attr.add(name=draw(TEXT), value=draw(TEXT))
    return message


@settings(max_examples=200)
@given(dump_headers())
def test_every_header_protobuf_writes_reads_back_the_same(message):
    data = message.SerializeToString()
    assert plain(DUMP.decode("DumpData", data)) == plain(dump_schema.DumpData.FromString(data))


def _ge_graph_files():
    files = sorted(glob.glob(os.path.join(REPO, "sample_dumps", "**", "ge_proto_*_Build.txt"), recursive=True))
    files += sorted(glob.glob(os.path.join(REAL_WORLD, "**", "*ge_proto_*Build*.txt"), recursive=True))[:6]
    return files


@pytest.mark.parametrize("path", _ge_graph_files(), ids=os.path.basename)
def test_real_graphs_serialized_by_protobuf_read_back_the_same(path):
    """GE graphs of the samples and of real CANN runs (maps, oneofs, nested graphs, packed ints, floats): parsed by
    protobuf's text parser, written in the wire format, read by both."""
    from google.protobuf import text_format

    with open(path, encoding="utf-8") as handle:
        message = text_format.Parse(handle.read(), ge_schema.ge_messages()["ModelDef"](), allow_unknown_field=True)
    data = message.SerializeToString()
    assert plain(GE.decode("ModelDef", data)) == plain(ge_schema.ge_messages()["ModelDef"].FromString(data))


def _damaged(seed: int, data: bytes) -> bytes:
    rng = random.Random(seed)
    out = bytearray(data)
    how = rng.randrange(3)
    if how == 0:
        return bytes(out[:rng.randrange(len(out))])
    for _ in range(rng.randint(1, 4)):
        position = rng.randrange(len(out))
        if how == 1:
            out[position] ^= 1 << rng.randrange(8)
        else:
            out[position] = rng.randrange(256)
    return bytes(out)


def test_damaged_headers_never_read_looser_than_protobuf():
    """2,000 truncations and byte flips of a real-looking header: where protobuf reads the bytes, the records hold
    the same values or the reader refuses them; where protobuf refuses them, so does the reader."""
    message = dump_schema.DumpData(version="2.0", dump_time=1732000000000000, op_name="block0/conv/Conv2D")
    for group in (message.input, message.output):
        item = group.add(data_type=1, format=3, size=524288, address=2**40 + 12)
        item.shape.dim.extend([1, 4, 64, 64, 16])
        item.original_shape.dim.extend([1, 64, 64, 64])
    message.output[0].original_op.name = "conv"
    message.attr.add(name="k", value="v")
    data = message.SerializeToString()
    agree = stricter = 0
    for seed in range(2000):
        damaged = _damaged(seed, data)
        expected, got = both_readings(dump_schema.DumpData, DUMP, "DumpData", damaged)
        if expected is None:
            assert got is None, (seed, damaged)
        elif got is None:
            stricter += 1
        else:
            assert got == expected, (seed, damaged)
        agree += got == expected
    # Stricter only where protobuf itself is lenient: protobuf 3.x (the TF 1.15 environment) reads a string field
    # that is not UTF-8, logging an error; the reader refuses it, as protobuf 4+ does.
    assert agree >= 1950 and agree + stricter == 2000, (agree, stricter)


# --------------------------------------------------------------------------------------------- the rules by hand
def _key(number, wire):
    return bytes([number << 3 | wire])


def test_packed_and_one_per_key_repeated_ints_both_read():
    packed = _key(1, 2) + bytes([3, 1, 2, 3])
    unpacked = _key(1, 0) + b"\x01" + _key(1, 0) + b"\x02"
    assert DUMP.decode("Shape", packed).dim == [1, 2, 3]
    assert DUMP.decode("Shape", unpacked + packed).dim == [1, 2, 1, 2, 3]


def test_a_singular_message_read_twice_is_merged_and_a_scalar_keeps_its_last_value():
    first = _key(3, 2) + bytes([2]) + _key(1, 0) + b"\x05"  # shape {dim: 5}
    second = _key(3, 2) + bytes([2]) + _key(1, 0) + b"\x06"
    data = first + _key(1, 0) + b"\x01" + second + _key(1, 0) + b"\x02"  # data_type 1, then 2
    record = DUMP.decode("OpOutput", data)
    assert record.shape.dim == [5, 6] and record.data_type == 2


def test_negative_int32_and_enum_values_are_ten_byte_varints():
    minus_one = b"\xff" * 9 + b"\x01"
    record = DUMP.decode("OpOutput", _key(1, 0) + minus_one + _key(8, 0) + minus_one)
    assert (record.data_type, record.sub_format) == (-1, -1)
    assert dump_schema.OpOutput.FromString(_key(1, 0) + minus_one).data_type == -1


def test_unknown_fields_and_groups_and_wrong_wire_types_are_skipped():
    unknown = _key(15, 0) + b"\x7f" + _key(14, 2) + b"\x02ab" + _key(13, 3) + _key(1, 0) + b"\x01" + _key(13, 4)
    wrong = _key(6, 2) + b"\x01x"  # size (a varint) given as bytes: an unknown field to protobuf
    record = DUMP.decode("OpOutput", unknown + wrong + _key(6, 0) + b"\x07")
    assert record.size == 7 and record.ListFields()[0][0].name == "size"


@pytest.mark.parametrize("data, words", [
    (b"\xff" * 11, "longer than 10 bytes"),
    (_key(1, 2) + b"\x05ab", "runs past"),
    (_key(3, 2) + b"\x01", "runs past"),
    (_key(13, 4), "without its start"),
    (_key(13, 3) + _key(1, 0) + b"\x01", "has no end"),
    (_key(1, 0) + b"\x80", "end inside"),
    (bytes([0x0E]), "wire type 6"),
])
def test_bytes_that_are_not_the_wire_format_say_where(data, words):
    with pytest.raises(ProtoDecodeError, match=words):
        DUMP.decode("DumpData", data)


def test_strings_must_be_utf8():
    with pytest.raises(ProtoDecodeError, match="not UTF-8"):
        DUMP.decode("DumpData", _key(6, 2) + b"\x02\xc3\x28")


def test_a_field_may_have_the_name_of_a_helper():
    """Found in review: oneof clearing as a record method was hidden by a field of its name (a field's default is a
    class attribute), and decoding such a message raised TypeError."""
    schema = RecordSchema({"M": [(1, "clear_oneof", "int32"), (2, "a", "int32"), (3, "b", "int32")]},
                          oneofs={"M": {"v": ["a", "b"]}})
    record = schema.decode("M", _key(2, 0) + b"\x01" + _key(3, 0) + b"\x02")  # a, then b: the last member wins
    assert record.WhichOneof("v") == "b" and record.b == 2 and not record.HasField("a") and record.clear_oneof == 0


def test_records_answer_like_messages():
    record = GE.decode("AttrDef", _key(3, 0) + b"\x00")  # value { i: 0 }: a oneof member keeps its presence
    assert record.WhichOneof("value") == "i" and record.HasField("i") and record.ListFields()[0][1] == 0
    both = GE.decode("AttrDef", _key(3, 0) + b"\x07" + _key(2, 2) + b"\x01s")  # i, then s: the last member wins
    assert both.WhichOneof("value") == "s" and both.i == 0 and both.s == b"s"
    from precision_tool.formats.ge_json_codec import json_to_record

    for order in (("i", "s"), ("s", "i")):  # the JSON reader keeps the wire rule: the member given last wins
        record = json_to_record({name: {"i": "7", "s": "cw=="}[name] for name in order}, "AttrDef")
        assert record.WhichOneof("value") == order[1] and not record.HasField(order[0])
    empty = GE.empty("TensorDescriptor")
    assert empty.shape.dim == () and not empty.HasField("shape") and empty.attr == {} and empty.ListFields() == []
    assert GE.decode("ShapeDef", b"").ListFields() == [] and DUMP.decode("OpOutput", _key(6, 0) + b"\x00").size == 0


def test_field_type_numbers_are_protobufs():
    from google.protobuf.descriptor import FieldDescriptor

    from precision_tool.formats.proto_records import FieldType

    names = [name for name in vars(FieldType) if name.startswith("TYPE_")]
    assert sorted(names) == sorted(name for name in dir(FieldDescriptor) if name.startswith("TYPE_"))  # all 18
    assert all(getattr(FieldType, name) == getattr(FieldDescriptor, name) for name in names)


def test_comparing_dumps_with_a_json_graph_never_loads_protobuf(tmp_path):
    """Dump headers and GE's JSON form are read into records: a compare in the msaccucmp style (npy references,
    ``-f graph.json``) runs without importing the protobuf runtime (12 ms of its start-up)."""
    import subprocess
    import sys

    from tests.comparison.cmp_builders import chain_case

    case = chain_case(tmp_path / "case", names=[f"op{i}" for i in range(6)], json_graph=True, graph_layout="files")
    assert case.graph.endswith(".json")
    code = ("import sys\nfrom precision_tool.cli import main\n"
            f"code = main(['compare', '-m', {case.npu!r}, '-g', {case.ref!r}, '-f', {case.graph!r}, '-out', "
            f"{str(tmp_path / 'out')!r}])\n"
            "print(code, sorted(m for m in sys.modules if m.startswith('google.protobuf')))")
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_unknown_groups_nested_3000_deep_are_refused_not_a_crash():
    with pytest.raises(ProtoDecodeError, match="nested more than 100 deep"):
        DUMP.decode("DumpData", b"\x4b" * 3000 + b"\x4c" * 3000)


def test_messages_read_as_deep_as_protobuf_reads_them_and_no_deeper():
    """AttrDef.g -> GraphDef.op -> OpDef.attr (a map entry) -> AttrDef ...: four messages a level. Around protobuf's
    limit of 100, the reader accepts exactly what protobuf accepts, with the same values."""
    messages = ge_schema.ge_messages()
    verdicts = []
    for levels in range(22, 28):
        model = current = messages["AttrDef"]()
        for _ in range(levels):
            current = current.g.op.add().attr["k"]
        current.i = 1
        expected, got = both_readings(messages["AttrDef"], GE, "AttrDef", model.SerializeToString())
        assert got == expected, levels
        verdicts.append(expected is not None)
    assert True in verdicts and False in verdicts  # the limit lies inside the range tried


def test_every_field_spec_types_and_counts_fields_as_protobuf_does():
    """The records' field tables against the descriptors protobuf builds from the same tables."""
    classes = ge_schema.ge_messages()
    for name in ge_schema.MESSAGES:
        descriptors = classes[name].DESCRIPTOR.fields_by_name
        for field_name, spec in GE.fields(name).items():
            descriptor = descriptors[field_name]
            assert (spec.number, spec.type, spec.is_repeated) == (descriptor.number, descriptor.type,
                                                                   ge_schema.is_repeated(descriptor)), field_name
            assert (spec.oneof is not None) == (descriptor.containing_oneof is not None), field_name
