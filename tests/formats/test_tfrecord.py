"""TFRecord framing and CRC-32C (the TensorFlow-written file is checked in test_tfdbg.py)."""
from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats import tfrecord
from precision_tool.formats.tfrecord import TFRecordFile, crc32c, encode_record, masked_crc32c, read_records


@pytest.mark.parametrize("data, expected", [
    # RFC 3720 (iSCSI) appendix B.4 test vectors, and the classic check value
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"123456789", 0xE3069283),
    (b"", 0),
])
def test_crc32c_known_vectors(data, expected):
    assert crc32c(data) == expected


def serial_crc32c(data: bytes) -> int:
    """Bit-by-bit reference implementation (slow, obviously right)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize("size", [2047, 2048, 2049, 2048 + 63, 4096 + 7, 65536 + 13, 512 * 1024 + 1,
                                  4 * 1024 * 1024 + 9])
def test_vectorised_crc_equals_table_crc_around_every_threshold(size):
    data = np.random.RandomState(size).bytes(size)
    table_crc = tfrecord._update_serial(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    assert crc32c(data) == table_crc
    assert crc32c(data[1:]) == tfrecord._update_serial(0xFFFFFFFF, data[1:]) ^ 0xFFFFFFFF  # unaligned start


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=6000), st.integers(min_value=0, max_value=6000))
def test_crc32c_matches_bitwise_reference_and_continues_across_splits(data, split):
    split = min(split, len(data))
    assert crc32c(data) == serial_crc32c(data)
    assert crc32c(data[split:], crc32c(data[:split])) == crc32c(data)


def test_masked_crc_of_empty_data_is_the_mask_delta():
    assert masked_crc32c(b"") == 0xA282EAD8


def write(path, payloads):
    path.write_bytes(b"".join(encode_record(payload) for payload in payloads))
    return path


def test_records_round_trip_with_their_offsets(tmp_path):
    payloads = [b"", b"abc", bytes(range(256)) * 40]
    path = write(tmp_path / "r.tfrecord", payloads)
    with TFRecordFile(path) as records:
        spans = list(records.spans())
        assert [s.length for s in spans] == [0, 3, 10240]
        assert [s.offset for s in spans] == [12, 12 + 16, 12 + 16 + 3 + 16]
        assert [bytes(records.read(s)) for s in spans] == payloads
    assert [bytes(p) for p in read_records(path)] == payloads


def test_empty_file_has_no_records(tmp_path):
    assert list(read_records(write(tmp_path / "empty", []))) == []


def test_missing_file_is_a_reference_error(tmp_path):
    with pytest.raises(ReferenceFormatError, match=r"missing.tfrecord: does not exist \(or is a dangling symlink\)$"):
        list(read_records(tmp_path / "missing.tfrecord"))


def test_bad_length_crc_names_file_and_offset(tmp_path):
    data = bytearray(encode_record(b"one") + encode_record(b"two"))
    data[19 + 8] ^= 1  # second record's length CRC
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(data))
    expected = r"bad.tfrecord: TFRecord record 1 at offset 19: length CRC mismatch"
    with pytest.raises(ReferenceFormatError, match=expected):
        list(read_records(path))


def test_bad_data_crc_is_caught_on_read_and_can_be_skipped(tmp_path):
    data = bytearray(encode_record(b"payload"))
    data[12] ^= 0x80
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(data))
    with pytest.raises(ReferenceFormatError, match="record 0 at offset 0: data CRC mismatch"):
        list(read_records(path))
    assert [bytes(p) for p in read_records(path, verify=False)] == [b"\xf0ayload"]


def test_lying_length_with_a_valid_crc_is_refused_without_allocating(tmp_path):
    length = struct.pack("<Q", 1 << 40)  # 1 TiB
    path = tmp_path / "liar.tfrecord"
    path.write_bytes(length + struct.pack("<I", masked_crc32c(length)) + b"tiny")
    tracemalloc.start()
    with pytest.raises(ReferenceFormatError, match=r"claims 1099511627776 bytes but the file holds 0 more"):
        list(read_records(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("cut, message", [(5, "5 stray bytes at offset 0"), (20, "claims 30 bytes"),
                                          (12 + 30 + 2, "claims 30 bytes")])
def test_truncated_files_are_refused(tmp_path, cut, message):
    path = tmp_path / "cut.tfrecord"
    path.write_bytes(encode_record(b"x" * 30)[:cut])
    with pytest.raises(ReferenceFormatError, match=message):
        list(read_records(path))
