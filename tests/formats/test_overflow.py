"""Opdebug overflow records: both status layouts, English descriptions, files on disk, errors."""
from __future__ import annotations

import struct
from dataclasses import replace

import numpy as np
import pytest

from precision_tool.errors import OverflowRecordError
from precision_tool.formats.dump_names import parse_dump_name
from precision_tool.formats.dump_writer import write_dump
from precision_tool.formats.opdebug import (
    AI_CORE_STATUS_BITS, OverflowRecord, OverflowUnit, decode_status, describe_status, encode_status,
    new_layout_record, old_layout_record, read_overflow_record, write_overflow_record,
)

MAGIC = 0x5A5A5A5A


def old_layout_bytes() -> bytes:
    """An old-layout struct built by hand from the byte offsets in the facts, not by the encoder."""
    data = bytearray(2048)
    struct.pack_into("<6Q", data, 0, 1, 2, 3, 4, 0x10, 0x11)  # DHA info
    struct.pack_into("<6Q", data, 128, 5, 6, 7, 8, 0x20, 0x21)  # L2 info
    struct.pack_into("<6Q", data, 256, 9, 10, 11, 12, 0x30, 0x31)  # AI Core info
    struct.pack_into("<Q", data, 512, 0xA)  # DHA status
    struct.pack_into("<Q", data, 768, 0b011 << 16)  # L2 status
    struct.pack_into("<3Q", data, 1024, 0xC0DE, 13, 0x120)  # kernel_code, block_idx, AI Core status
    return bytes(data)


# --------------------------------------------------------------------------------------------- decoding

def test_old_layout_fields_at_their_offsets():
    record = decode_status(old_layout_bytes())
    assert record.layout == "old" and record.version is None
    dha, l2, core = record.units
    assert (dha.unit, dha.model_id, dha.stream_id, dha.task_id, dha.task_type, dha.pc_start, dha.para_base,
            dha.status) == ("DHA Atomic Add", 1, 2, 3, 4, 0x10, 0x11, (0xA,))
    assert (l2.unit, l2.task_id, l2.pc_start, l2.status) == ("L2 Atomic Add", 7, 0x20, (0b011 << 16,))
    assert (core.unit, core.model_id, core.stream_id, core.task_id, core.task_type, core.pc_start,
            core.para_base) == ("AI Core", 9, 10, 11, 12, 0x30, 0x31)
    assert (core.kernel_code, core.block_idx, core.status) == (0xC0DE, 13, (0x120,))
    assert dha.kernel_code is None and core.context_id is None


def test_new_layout_aic_version_0_by_hand():
    words = (1, 2, 3, 4, 65535, 65535, 0x1000, 0x2000, 7, 8, 0x20)
    data = struct.pack("<6I", MAGIC, 0, 1, 0, 0, 88) + struct.pack("<11Q", *words)
    record = decode_status(data)
    (unit,) = record.units
    assert (record.layout, record.version, record.valid, record.data_len) == ("new", 0, 1, 88)
    assert (unit.unit, unit.model_id, unit.stream_id, unit.task_id, unit.task_type) == ("AIC", 1, 2, 3, 4)
    assert unit.context_id is None and unit.thread_id is None  # 65535 = not set
    assert (unit.pc_start, unit.para_base, unit.core_id, unit.block_id, unit.status) == (0x1000, 0x2000, 7, 8, (0x20,))
    assert (record.task_id, record.stream_id) == (3, 2)


def test_new_layout_aiv_version_1_has_four_status_words():
    words = (1, 2, 3, 4, 5, 6, 0x1000, 0x2000, 7, 8, 0x20, 0, 0x8, 0x400)
    data = struct.pack("<6I", MAGIC, 1, 1, 1, 0, 112) + struct.pack("<14Q", *words)
    (unit,) = decode_status(data).units
    assert unit.unit == "AIV" and (unit.context_id, unit.thread_id) == (5, 6)
    assert unit.status == (0x20, 0, 0x8, 0x400)


def test_new_layout_sdma_and_aicpu_by_hand():
    sdma = struct.pack("<6I", MAGIC, 0, 1, 3, 0, 80) + struct.pack("<10Q", 1, 2, 3, 4, 5, 6, 0xA0, 0xB0, 9, 0x1)
    (unit,) = decode_status(sdma).units
    assert (unit.unit, unit.src_addr, unit.dst_addr, unit.channel_id, unit.status) == ("SDMA", 0xA0, 0xB0, 9, (1,))
    aicpu = struct.pack("<6I", MAGIC, 1, 1, 2, 0, 64) + struct.pack("<8Q", 1, 2, 3, 4, 65535, 11, 12, 0x2)
    (unit,) = decode_status(aicpu).units
    assert (unit.unit, unit.context_id, unit.cpu_id, unit.thread_id, unit.status) == ("AICPU", None, 11, 12, (2,))


def test_new_layout_may_carry_trailing_bytes_and_a_larger_data_len():
    data = struct.pack("<6I", MAGIC, 0, 1, 2, 0, 128) + struct.pack("<8Q", *range(1, 9)) + b"\0" * 64
    record = decode_status(data)
    assert record.data_len == 128 and record.units[0].status == (8,)


# -------------------------------------------------------------------------------------------- round trip

@pytest.mark.parametrize("record", [
    old_layout_record(
        ai_core=OverflowUnit("AI Core", 1, 2, 3, 0, (0x20,), pc_start=0x10, para_base=0x20, kernel_code=5, block_idx=6),
        dha=OverflowUnit("x", 7, 8, 9, 1, (0xD,), pc_start=1, para_base=2),
        l2=OverflowUnit("y", 10, 11, 12, 2, (0b101 << 16,), pc_start=3, para_base=4)),
    new_layout_record(OverflowUnit("AIC", 1, 2, 3, 0, (0x10,), pc_start=1, para_base=2, context_id=None,
                                   thread_id=None, core_id=3, block_id=4)),
    new_layout_record(OverflowUnit("AIV", 1, 2, 3, 0, (0x10, 0, 0, 0x400), pc_start=1, para_base=2, context_id=7,
                                   thread_id=8, core_id=3, block_id=4), version=1),
    new_layout_record(OverflowUnit("AIC", 1, 2, 3, 0, (0x10,), pc_start=1, para_base=2, context_id=5,
                                   thread_id=6, core_id=3, block_id=4), version=1),
    new_layout_record(OverflowUnit("AICPU", 1, 2, 3, 0, (0x1,), context_id=4, cpu_id=5, thread_id=None), version=1),
    new_layout_record(OverflowUnit("SDMA", 1, 2, 3, 0, (0x1,), context_id=None, thread_id=9, src_addr=10,
                                   dst_addr=11, channel_id=12)),
], ids=["old", "aic-v0", "aiv-v1", "aic-v1-padded", "aicpu", "sdma"])
def test_encode_then_decode_gives_the_same_record(record):
    data = encode_status(record)
    back = decode_status(data)
    assert back.units == tuple(_with_padded_status(unit, back) for unit in record.units)
    assert back.layout == record.layout
    if record.layout == "old":
        assert len(data) == 2048
    else:
        assert struct.unpack_from("<I", data)[0] == MAGIC and back.data_len == len(data) - 24


def _with_padded_status(unit: OverflowUnit, back: OverflowRecord) -> OverflowUnit:
    """``unit`` as the decoder returns it: a short new-layout status is zero-padded on encoding."""
    if back.layout == "old":
        return unit
    return replace(unit, status=unit.status + (0,) * (len(back.units[0].status) - len(unit.status)))


def test_old_layout_encoder_matches_the_hand_built_bytes():
    assert encode_status(decode_status(old_layout_bytes())) == old_layout_bytes()


def test_encoder_refuses_records_it_cannot_write():
    with pytest.raises(ValueError, match=r"new layout unit must be one of \['AIC', 'AICPU', 'AIV', 'SDMA'\]"):
        encode_status(new_layout_record(OverflowUnit("AI Core")))
    with pytest.raises(ValueError, match="a version 0 AIC record has 1 status words, not 4"):
        encode_status(new_layout_record(OverflowUnit("AIC", status=(1, 2, 3, 4))))
    with pytest.raises(ValueError, match="old layout has no unit 'AIC'"):
        encode_status(OverflowRecord("old", (OverflowUnit("AIC"),)))


# ---------------------------------------------------------------------------------------- which op

def test_reporting_unit_precedence_in_the_old_layout():
    dha = OverflowUnit("", task_id=1, stream_id=1, status=(0x9,))
    l2 = OverflowUnit("", task_id=2, stream_id=2, status=(1 << 16,))
    core = OverflowUnit("", task_id=3, stream_id=3, status=(0x20,))
    assert old_layout_record(ai_core=core, dha=dha, l2=l2).task_id == 3
    assert old_layout_record(dha=dha, l2=l2, ai_core=OverflowUnit("", task_id=3)).task_id == 2
    assert old_layout_record(dha=dha, ai_core=OverflowUnit("", task_id=3)).stream_id == 1
    nothing = old_layout_record(ai_core=OverflowUnit("", task_id=3))
    assert nothing.task_id == 3 and not nothing.overflowed


# ---------------------------------------------------------------------------------------- describing

@pytest.mark.parametrize("bit,text", [
    (0x8, "sign-bit negation overflow of the minimum signed integer"),
    (0x10, "integer add/sub/mul/mac overflow"),
    (0x20, "floating-point overflow"),
    (0x80, "negative input to float→unsigned conversion"),
    (0x100, "overflow converting fp32→fp16 or int32→fp16"),
    (0x400, "Cube accumulation overflow"),
])
def test_each_ai_core_bit_has_its_text(bit, text):
    assert describe_status(OverflowUnit("AI Core", status=(bit,))) == [f"AI Core: {text} (0x{bit:x})"]
    assert AI_CORE_STATUS_BITS[bit] == text


def test_several_ai_core_bits_and_unknown_bits():
    assert describe_status(OverflowUnit("AIC", status=(0x20 | 0x100 | 0x1001,))) == [
        "AIC: floating-point overflow (0x20)",
        "AIC: overflow converting fp32→fp16 or int32→fp16 (0x100)",
        "AIC: unknown status bits 0x1001",
    ]


@pytest.mark.parametrize("code,text", [(0x9, "overflow"), (0xA, "underflow"), (0xB, "src NaN"), (0xC, "dst NaN"),
                                       (0xD, "both NaN")])
def test_dha_atomic_codes(code, text):
    assert describe_status(OverflowUnit("DHA Atomic Add", status=(code,))) == [
        f"DHA Atomic Add: {text} (code 0x{code:x})"]


def test_unknown_dha_code():
    assert describe_status(OverflowUnit("DHA Atomic Add", status=(0x3,))) == ["DHA Atomic Add: unknown code 0x3"]


@pytest.mark.parametrize("code,text", [(0b001, "overflow"), (0b010, "underflow"), (0b011, "src NaN"),
                                       (0b100, "dst NaN"), (0b101, "both NaN")])
def test_l2_atomic_codes_in_bits_16_to_18(code, text):
    assert describe_status(OverflowUnit("L2 Atomic Add", status=(code << 16,))) == [
        f"L2 Atomic Add: {text} (bits 16-18 = {code:03b})"]


def test_l2_unknown_code_and_bits_outside_the_field():
    assert describe_status(OverflowUnit("L2 Atomic Add", status=(0b111 << 16,))) == [
        "L2 Atomic Add: unknown code 111 in bits 16-18 (status 0x70000)"]
    assert describe_status(OverflowUnit("L2 Atomic Add", status=((1 << 16) | 0x4,))) == [
        "L2 Atomic Add: overflow (bits 16-18 = 001)", "L2 Atomic Add: status bits outside 16-18 set (0x4)"]


def test_record_description_lists_units_in_order_and_words_by_index():
    assert describe_status(decode_status(old_layout_bytes())) == [
        "DHA Atomic Add: underflow (code 0xa)",
        "L2 Atomic Add: src NaN (bits 16-18 = 011)",
        "AI Core: floating-point overflow (0x20)",
        "AI Core: overflow converting fp32→fp16 or int32→fp16 (0x100)",
    ]
    aiv = new_layout_record(OverflowUnit("AIV", status=(0x20, 0, 0x8, 0)), version=1)
    assert describe_status(aiv) == [
        "AIV status word 0: floating-point overflow (0x20)",
        "AIV status word 2: sign-bit negation overflow of the minimum signed integer (0x8)"]


def test_aicpu_and_sdma_status_is_shown_undecoded_and_zero_says_nothing():
    assert describe_status(OverflowUnit("SDMA", status=(0x5,))) == ["SDMA: status 0x5 (not decoded)"]
    assert describe_status(old_layout_record()) == []


# --------------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("size", [0, 3, 2047, 2049])
def test_sizes_of_neither_layout(size):
    with pytest.raises(OverflowRecordError) as caught:
        decode_status(b"\1" * size, "/d/Opdebug.Node_OpDebug.1.2.3")
    assert str(caught.value) == (f"/d/Opdebug.Node_OpDebug.1.2.3: status is {size} bytes: the old layout is exactly "
                                 "2048 bytes and the new one starts with magic 0x5A5A5A5A")


def test_new_layout_shorter_than_its_header():
    with pytest.raises(OverflowRecordError, match=r"^f: status is 12 bytes: the new layout needs at least 24$"):
        decode_status(struct.pack("<3I", MAGIC, 0, 1), "f")


def test_new_layout_shorter_than_its_fields():
    data = struct.pack("<6I", MAGIC, 1, 1, 0, 0, 112) + b"\0" * 100
    with pytest.raises(OverflowRecordError, match=r"^f: status is 124 bytes but a version 1 AIC record needs 136$"):
        decode_status(data, "f")


def test_new_layout_data_len_too_small():
    data = struct.pack("<6I", MAGIC, 0, 1, 3, 0, 8) + b"\0" * 80
    with pytest.raises(OverflowRecordError, match=r"^f: data_len 8 is less than the 80 bytes of a version 0 SDMA "
                                                  r"record$"):
        decode_status(data, "f")


def test_unknown_accelerator_and_version():
    with pytest.raises(OverflowRecordError, match=r"^f: unknown accelerator type 4 \(known: 0 AIC, 1 AIV, 2 AICPU, "
                                                  r"3 SDMA\)$"):
        decode_status(struct.pack("<6I", MAGIC, 0, 1, 4, 0, 88) + b"\0" * 88, "f")
    with pytest.raises(OverflowRecordError, match=r"^f: unsupported status version 2 \(known: 0, 1\)$"):
        decode_status(struct.pack("<6I", MAGIC, 2, 1, 0, 0, 88) + b"\0" * 88, "f")


def test_error_without_a_path_says_memory():
    with pytest.raises(OverflowRecordError, match=r"^<memory>: status is 1 bytes"):
        decode_status(b"\0")


# ------------------------------------------------------------------------------------------ on disk

def test_write_and_read_an_opdebug_file(tmp_path):
    record = new_layout_record(OverflowUnit("AIC", 0, 4, 17, 0, (0x20,), pc_start=1, para_base=2, core_id=0,
                                            block_id=0))
    path = write_overflow_record(tmp_path, record, timestamp=1700000000000123)
    assert path == str(tmp_path / "Opdebug.Node_OpDebug.17.4.1700000000000123")
    assert parse_dump_name("Opdebug.Node_OpDebug.17.4.1700000000000123").is_opdebug
    back = read_overflow_record(path)
    assert back == decode_status(encode_status(record)) and (back.task_id, back.stream_id) == (17, 4)


def test_raw_status_bytes_of_a_bad_size_name_the_file(tmp_path):
    path = write_overflow_record(tmp_path, b"\0" * 100, timestamp=1700000000000000, task_id=1, stream_id=2)
    with pytest.raises(OverflowRecordError) as caught:
        read_overflow_record(path)
    assert str(caught.value).startswith(f"{path}: status is 100 bytes")
    with pytest.raises(ValueError, match="task_id and stream_id are required"):
        write_overflow_record(tmp_path, b"\0", timestamp=1)


def test_opdebug_file_with_two_outputs(tmp_path):
    path = write_dump(tmp_path / "Opdebug.Node_OpDebug.1.2.1700000000000000", "Node_OpDebug",
                      outputs=[np.zeros(2048, np.uint8), np.zeros(1, np.uint8)])
    with pytest.raises(OverflowRecordError, match=r"an Opdebug record has one output, this file has 2$"):
        read_overflow_record(path)
