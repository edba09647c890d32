"""Unreadable inputs in an alignment (issue 14): each one named with its cause, the rest still aligned.

Reference ``.npy`` files that cannot be read -- truncated, a FIFO, a folder or a dangling symlink named like a
reference -- are listed in ``coverage.unreadable_references``, and the NPU tensor that would use one says so;
a dump whose header declares more dimensions than numpy holds is one entry of ``coverage.unreadable``.
"""
import os
import struct

import pytest
from align_builders import pairing, reasons, node, write_workspace

from precision_tool.alignment import align
from precision_tool.formats.bounds import MAX_NDIM
from precision_tool.formats.dump_schema import DumpData

NODES = [node("x", "Data"), node("a", "Relu", ["x:0"]), node("b", "Neg", ["a:0"]), node("c", "Abs", ["b:0"])]


def reference_path(ref_dir, name):
    (file_name,) = [f for f in os.listdir(ref_dir) if f.startswith(f"{name}.0.")]
    return os.path.join(ref_dir, file_name)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_unreadable_references_are_listed_and_the_others_still_compared(tmp_path):
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    truncated = reference_path(ref_dir, "a")
    with open(truncated, "rb") as handle:
        content = handle.read()
    with open(truncated, "wb") as handle:
        handle.write(content[:-4])  # 6 float32 promised (24 bytes), 20 left
    fifo = reference_path(ref_dir, "b")
    os.unlink(fifo)
    os.mkfifo(fifo)
    dangling = reference_path(ref_dir, "c")
    os.unlink(dangling)
    os.symlink(os.path.join(ref_dir, "nowhere.npy"), dangling)

    result = align(dump_dir, ref_dir, graph=graph_path)

    truncated_cause = f"{truncated}: truncated: the header promises 24 bytes of data, the file holds 20"
    fifo_cause = f"{fifo}: is a FIFO (named pipe), not a regular file"
    dangling_cause = f"{dangling}: does not exist (or is a dangling symlink)"
    assert result.coverage.unreadable_references == ((truncated, truncated_cause), (fifo, fifo_cause),
                                                     (dangling, dangling_cause))
    assert pairing(result) == {"a:input:0": "x:output:0"}
    why = reasons(result)
    assert why["a:output:0"] == f"the reference file could not be read: {truncated_cause}"
    assert why["b:output:0"] == f"the reference file could not be read: {fifo_cause}"
    assert why["c:input:0"] == f"the reference file could not be read: {fifo_cause}"
    assert why["c:output:0"] == f"the reference file could not be read: {dangling_cause}"
    assert result.coverage.to_dict()["unreadable_references"] == [
        [truncated, truncated_cause], [fifo, fifo_cause], [dangling, dangling_cause]]


def test_a_dump_with_too_many_dims_is_one_unreadable_file_the_rest_aligned(tmp_path):
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    (deep,) = [os.path.join(dump_dir, f) for f in os.listdir(dump_dir) if f.startswith("Neg.")]
    message = DumpData(version="2.0", op_name="b")
    entry = message.output.add(data_type=1, format=2, size=4)
    entry.shape.dim.extend([1] * (MAX_NDIM + 1))
    header = message.SerializeToString()
    with open(deep, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)

    result = align(dump_dir, ref_dir, graph=graph_path)

    assert result.coverage.unreadable == ((deep, f"{deep}: output 0: shape has {MAX_NDIM + 1} dimensions; numpy "
                                                 f"holds at most {MAX_NDIM} (a corrupted header)"),)
    assert pairing(result) == {"a:input:0": "x:output:0", "a:output:0": "a:output:0", "c:input:0": "b:output:0",
                               "c:output:0": "c:output:0"}


def test_a_folder_named_like_a_dump_file_is_one_unreadable_file_not_entered(tmp_path):
    """A fuzz run found it left out without a word (the op was only "a graph op without a dump file"); a FIFO in its
    place was named. GE names its own folders by times, numbers and model names, never like a dump file."""
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    (folder,) = [os.path.join(dump_dir, f) for f in os.listdir(dump_dir) if f.startswith("Neg.")]
    os.unlink(folder)
    os.mkdir(folder)
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert result.coverage.unreadable == ((folder, f"{folder}: is a folder, not a regular file"),)
    assert "b" not in result.coverage.graph_ops_without_dump


def test_a_header_naming_another_op_than_its_file_is_read_as_the_file_names_op_and_said(tmp_path):
    """A fuzz run found b's dump, its header rewritten to name op a, labelled a yet compared against b's reference,
    and b reported without a dump file. The file name (GE derives it from the op it dumps) is taken, and said."""
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    (path,) = [os.path.join(dump_dir, f) for f in os.listdir(dump_dir) if f.startswith("Neg.")]
    with open(path, "rb") as handle:
        content = handle.read()
    length = struct.unpack("<Q", content[:8])[0]
    header = DumpData()
    header.ParseFromString(content[8:8 + length])
    assert header.op_name == "b"
    header.op_name = "a"
    data = header.SerializeToString()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(data)) + data + content[8 + length:])
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert pairing(result)["b:output:0"] == "b:output:0" and "b" not in result.coverage.graph_ops_without_dump
    assert result.coverage.ambiguous == (f"{path}: its header names op 'a', its file name 'b': read as the file "
                                         "name's op",)


def test_a_folder_named_like_a_newer_dump_does_not_hide_the_readable_file(tmp_path):
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    (name,) = [f for f in os.listdir(dump_dir) if f.startswith("Neg.")]
    parts = name.split(".")
    os.mkdir(os.path.join(dump_dir, ".".join(parts[:-1] + [str(int(parts[-1]) + 1000)])))  # newer, a folder
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert pairing(result)["b:output:0"] == "b:output:0" and result.coverage.unreadable == ()


def test_npy_files_not_named_like_references_are_listed_not_dropped_silently(tmp_path):
    """A fuzz run found them ignored without a trace but "N NPU tensors have no reference"."""
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, NODES, ["x", "a", "b", "c"])
    odd = [os.path.join(ref_dir, name) for name in ("X.x.y.npy", "b.99999999999999999999999.1.npy", "notes.txt")]
    for path in odd:
        with open(path, "wb") as handle:
            handle.write(b"")
    result = align(dump_dir, ref_dir, graph=graph_path)
    assert result.coverage.ignored_references == tuple(sorted(odd[:2]))  # .npy only: other files are side files
    assert result.coverage.to_dict()["ignored_references"] == sorted(odd[:2])
    for path in odd:
        os.unlink(path)
    assert "ignored_references" not in align(dump_dir, ref_dir, graph=graph_path).coverage.to_dict()
