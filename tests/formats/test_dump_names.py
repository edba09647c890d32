"""Dump file names: parsing, building (with hashed long names), and scanning a dump tree."""
from __future__ import annotations

import os

import pytest

from precision_tool.errors import DumpFormatError, WorkspaceError
from precision_tool.formats.dump_names import (
    DumpName, append_mapping_row, build_dump_name, dump_name_of_file, parse_dump_name, read_mapping,
    sanitize_op_name, scan_dump_folder,
)

TS = 1700000000000000


def touch(path) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(b"x")
    return str(path)


# ---------------------------------------------------------------------------------------------- parsing

def test_parse_plain_name():
    assert parse_dump_name("Conv2D.scope_conv1.3.2.1700000000000001") == DumpName(
        "Conv2D", "scope_conv1", 3, 2, 1700000000000001)


def test_parse_keeps_dots_inside_the_op_name():
    name = parse_dump_name("MatMul.a.b.c.10.0.1700000000000002")
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == ("MatMul", "a.b.c", 10, 0)


def test_parse_extended_ffts_name_keeps_extra_fields():
    name = parse_dump_name("Add.partition0_sgt_graph_0_Add.0.3.1673383728093446.4.1.0.0")
    assert (name.op_name, name.task_id, name.stream_id, name.timestamp) == (
        "partition0_sgt_graph_0_Add", 0, 3, 1673383728093446)
    assert name.extra == (4, 1, 0, 0) and (name.context_id, name.thread_id) == (1, 0)
    assert name.file_name == "Add.partition0_sgt_graph_0_Add.0.3.1673383728093446.4.1.0.0"


def test_plain_names_have_no_context_or_thread():
    name = parse_dump_name("Add.x.1.2.1700000000000000")
    assert name.extra == () and name.context_id is None and name.thread_id is None


def test_parse_opdebug_record_name():
    name = parse_dump_name("Opdebug.Node_OpDebug.9.2.1700000000000020")
    assert name.is_opdebug and (name.task_id, name.stream_id) == (9, 2)
    assert not parse_dump_name("Add.Node_OpDebug.9.2.1700000000000020").is_opdebug


def test_parse_falls_back_to_the_last_three_numbers_without_a_16_digit_timestamp():
    name = parse_dump_name("Add.add.1.2.345")
    assert (name.op_name, name.task_id, name.stream_id, name.timestamp, name.extra) == ("add", 1, 2, 345, ())


@pytest.mark.parametrize("file_name", [
    "Conv2D.scope_conv1.3.2.1700000000000001.output.0.npy",  # converted tensor
    "mapping.csv",
    "Add.1.2.1700000000000000",  # no op name
    ".Add.x.1.2.1700000000000000",  # no op type
    "Add.x.y.2.1700000000000000",  # task id not a number
    "Add.x.1.2.17000000000000ab",
    "Add.x.1.٣.1700000000000000",  # a non-ASCII digit
    "",
    "Add.x.1.2.1700000000000000.1.2.3.4.5",  # more than four extra fields
])
def test_non_dump_names_give_none(file_name):
    assert parse_dump_name(file_name) is None


def test_explicit_file_with_a_bad_name_is_an_error(tmp_path):
    path = touch(tmp_path / "notes.bin")
    with pytest.raises(DumpFormatError) as caught:
        dump_name_of_file(path)
    assert str(caught.value) == (f"{path}: file name 'notes.bin' is not {{op_type}}.{{op_name}}.{{task_id}}."
                                 "{stream_id}.{timestamp} nor an exception dump's exception_info.{stream_id}."
                                 "{task_id}.{timestamp} (rename it, or list hashed names in mapping.csv)")


# --------------------------------------------------------------------------------------------- building

def test_build_sanitises_and_pads_and_parses_back():
    built = build_dump_name("Conv2D", "tower 0/conv.1\\x", 3, 2, 12345)
    assert built.file_name == built.full_name == "Conv2D.tower_0_conv_1_x.3.2.0000000000012345"
    assert built.mapping_row is None
    assert parse_dump_name(built.file_name) == DumpName("Conv2D", "tower_0_conv_1_x", 3, 2, 12345)


def test_sanitize_replaces_exactly_the_four_characters():
    assert sanitize_op_name("a/b.c\\d e-f:g") == "a_b_c_d_e-f:g"


def test_negative_ids_are_refused():
    with pytest.raises(ValueError, match="task_id must be >= 0, not -1"):
        build_dump_name("Add", "x", -1, 0, TS)


def test_long_names_are_hashed_with_a_mapping_row(tmp_path):
    op_name = "scope/" * 50 + "add"
    built = build_dump_name("Add", op_name, 1, 2, TS)
    assert len(built.full_name) >= 255 and built.file_name.isdigit() and len(built.file_name) <= 20
    assert built.mapping_row == (built.file_name, built.full_name)
    assert build_dump_name("Add", op_name, 1, 2, TS).file_name == built.file_name  # stable
    assert build_dump_name("Add", op_name, 1, 2, TS + 1).file_name != built.file_name
    path = touch(tmp_path / built.file_name)
    append_mapping_row(tmp_path, built.mapping_row)
    assert (tmp_path / "mapping.csv").read_text() == f"{built.file_name},{built.full_name}\n"
    name = dump_name_of_file(path)
    assert name.op_name == sanitize_op_name(op_name) and name.task_id == 1


def test_name_just_under_the_limit_is_not_hashed():
    op_name = "n" * (254 - len("Add..1.2.1700000000000000"))
    built = build_dump_name("Add", op_name, 1, 2, TS)
    assert len(built.full_name) == 254 and built.file_name == built.full_name
    assert build_dump_name("Add", op_name + "n", 1, 2, TS).mapping_row is not None


def test_mapping_rows_with_commas_are_quoted_and_read_back(tmp_path):
    append_mapping_row(tmp_path, ("123", "Add.a,b.1.2.1700000000000000"))
    with open(tmp_path / "mapping.csv", "a") as handle:
        handle.write("broken row with no comma\n")
    assert read_mapping(tmp_path) == {"123": "Add.a,b.1.2.1700000000000000"}
    assert read_mapping(tmp_path / "missing") == {}


# --------------------------------------------------------------------------------------------- scanning

def test_scan_groups_by_op_keeps_latest_and_lists_opdebug_apart(tmp_path):
    step = tmp_path / "20240101000000" / "0" / "model" / "1" / "0"
    old = touch(step / "Add.add_1.5.2.1700000000000010")
    new = touch(step / "Add.add_1.5.2.1700000000000030")
    mid = touch(tmp_path / "other" / "Add.add_1.7.2.1700000000000020")
    conv = touch(step / "Conv2D.conv.1.2.1700000000000005")
    debug_late = touch(step / "Opdebug.Node_OpDebug.9.2.1700000000000040")
    debug_early = touch(step / "Opdebug.Node_OpDebug.9.2.1700000000000015")
    touch(step / "Add.add_1.5.2.1700000000000030.output.0.npy")
    touch(step / "notes.txt")
    touch(step / ".tmp-abc.dump")
    stray = touch(step / "README")
    scan = scan_dump_folder(tmp_path)
    assert [(op.op_type, op.op_name) for op in scan.ops] == [("Conv2D", "conv"), ("Add", "add_1")]
    add = scan.find("add_1")
    assert add.latest.path == new and [ref.path for ref in add.superseded] == [mid, old]
    assert scan.find("conv").latest.path == conv and scan.find("conv").superseded == ()
    assert [ref.path for ref in scan.overflow_records] == [debug_early, debug_late]
    assert scan.unrecognised == (stray,) and scan.unreadable == ()


def test_find_accepts_the_raw_ge_op_name(tmp_path):
    touch(tmp_path / "MatMul.tower_0_dense_MatMul.1.0.1700000000000000")
    assert scan_dump_folder(tmp_path).find("tower_0/dense/MatMul").op_type == "MatMul"
    assert scan_dump_folder(tmp_path).find("absent") is None


def test_scan_resolves_hashes_through_each_folders_own_mapping(tmp_path):
    for folder, op in (("a", "first_op"), ("b", "second_op")):
        touch(tmp_path / folder / "12345")
        append_mapping_row(tmp_path / folder, ("12345", f"Add.{op}.1.2.1700000000000000"))
    touch(tmp_path / "c" / "67890")  # hashed name without a mapping
    scan = scan_dump_folder(tmp_path)
    assert sorted(op.op_name for op in scan.ops) == ["first_op", "second_op"]
    assert {op.latest.stored_name for op in scan.ops} == {"12345"}
    assert scan.unrecognised == (str(tmp_path / "c" / "67890"),)


def test_scan_survives_symlink_loops_and_follows_links_once(tmp_path):
    real = tmp_path / "real"
    touch(real / "Add.x.1.2.1700000000000000")
    os.symlink(tmp_path, real / "loop")
    os.symlink(real, tmp_path / "alias")
    scan = scan_dump_folder(tmp_path)
    assert len(scan.ops) == 1 and scan.ops[0].superseded == ()


def test_scan_of_a_missing_folder(tmp_path):
    with pytest.raises(WorkspaceError) as caught:
        scan_dump_folder(tmp_path / "nope")
    assert str(caught.value) == f"{tmp_path / 'nope'}: not a folder (give the folder that holds the dump files)"


def test_equal_timestamps_pick_a_deterministic_latest(tmp_path):
    first = touch(tmp_path / "a" / "Add.x.1.2.1700000000000000")
    second = touch(tmp_path / "b" / "Add.x.1.2.1700000000000000")
    add = scan_dump_folder(tmp_path).ops[0]
    assert add.latest.path == second and add.superseded[0].path == first
