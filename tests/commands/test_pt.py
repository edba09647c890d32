"""``pt``: every tensor form, safe slices, statistics, values sized to the terminal, -s beside the decoded copy."""
import os

import numpy as np
import pytest
from inspect_builders import dump_path, reference_values, write_inspect_workspace

from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context, Session
from precision_tool.commands.tensor_spec import parse_slice, parse_tensor_spec, split_slice
from precision_tool.errors import UsageError, WorkspaceError


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return write_inspect_workspace(tmp_path_factory.mktemp("ws"))


def run(workspace, *argv, size=(100, 40)):
    return build_registry().dispatch(["pt", *argv], Context(data_dir=workspace, session=Session(terminal_size=size)))


def shown(report, k=0):
    return np.asarray(report.data["tensors"][k]["values"])


@pytest.mark.parametrize("text, expected", [
    ("[0, :4]", (0, slice(None, 4))),
    ("[..., ::2]", (Ellipsis, slice(None, None, 2))),
    ("[-1, 1:-1:3, None]", (-1, slice(1, -1, 3), None)),
    ("[ 2 ]", (2,)),
])
def test_parse_slice(text, expected):
    assert parse_slice(text) == expected


@pytest.mark.parametrize("text", ["[__import__('os')]", "[0 + 1]", "[1:2:0]", "[a]"])
def test_slices_are_parsed_never_evaluated(text):
    with pytest.raises(UsageError, match="slice"):
        parse_slice(text)


def test_an_integer_index_beyond_int64_is_said_to_fit_no_dimension_and_a_huge_bound_clips():
    """A fuzz run found numpy's "only integers, slices ... are valid indices" for [99999999999999999999999999]."""
    with pytest.raises(UsageError, match=r"^slice \[99999999999999999999999999\]: 99999999999999999999999999 is "
                                         r"beyond any dimension$"):
        parse_slice("[99999999999999999999999999]")
    assert parse_slice("[0:99999999999999999999999]") == (slice(0, 99999999999999999999999, None),)


def test_a_negative_tensor_index_says_tensors_are_numbered_from_0():
    with pytest.raises(UsageError, match=r"^op/x:input:-1: input index -1: tensors are numbered from 0 "):
        parse_tensor_spec("op/x:input:-1")


def test_spec_parts():
    spec = parse_tensor_spec("conv1/Conv2D:output:0[0, :4]")
    assert (spec.base, spec.target, spec.kind, spec.index, spec.slice_text) == (
        "conv1/Conv2D:output:0", "conv1/Conv2D", "output", 0, "[0, :4]")
    assert parse_tensor_spec("relu1/Relu:0").kind == "reference"
    assert split_slice("a[b[1]]") == ("a", "[b[1]]")
    with pytest.raises(UsageError, match="unbalanced"):
        split_slice("x]")


def test_op_output_in_origin_layout_with_slice(workspace):
    report = run(workspace, "conv1/Conv2D:output:0[0, :2, 1]")
    expected = reference_values()["conv1/BiasAdd"].astype(np.float16)[0, :2, 1]
    assert np.array_equal(shown(report), expected)
    assert report.data["tensors"][0]["shown_shape"] == [2, 3]
    row = report.blocks[0].rows[0]
    assert row[:3] == ["conv1/Conv2D:output:0[0, :2, 1]", "float16 NC1HWC0 [1, 1, 4, 4, 16]",
                       "NHWC [1, 4, 4, 3], slice [2, 3]"]  # the statistics are the slice's: its shape is said
    assert report.data["tensors"][0]["max"] == float(expected.max())  # the statistics are the slice's


def test_separate_slice_argument_and_flag_form(workspace):
    a = run(workspace, "relu1/Relu:output:0", "[0, 0]")
    b = run(workspace, "-n", "relu1/Relu:output:0", "[0, 0]")
    assert np.array_equal(shown(a), shown(b)) and shown(a).shape == (4, 3)


def test_keep_layout_shows_the_stored_array(workspace):
    report = run(workspace, "relu1/Relu:input:0", "--keep-layout")
    assert report.data["tensors"][0]["shape"] == [1, 1, 4, 4, 16]


def test_reference_dump_file_and_npy_forms(workspace):
    ref = reference_values()["relu1/Relu"]
    by_tf_name = run(workspace, "relu1/Relu:0")
    assert np.array_equal(shown(by_tf_name), ref)
    npy = os.path.join(workspace, "tf", "dump", "relu1_Relu.0.1700000000000000.npy")
    assert np.array_equal(shown(run(workspace, npy)), ref)
    assert np.array_equal(shown(run(workspace, "relu1_Relu.0.1700000000000000.npy")), ref)  # name in tf/dump
    whole_dump = run(workspace, dump_path(workspace, "relu1/Relu"))
    assert [t["tensor"] for t in whole_dump.data["tensors"]] == ["relu1/Relu:input:0", "relu1/Relu:output:0"]
    base = os.path.basename(dump_path(workspace, "relu1/Relu"))
    assert run(workspace, base + ":output:0").data["tensors"][0]["tensor"] == "relu1/Relu:output:0"


def test_statistics_count_inf_and_nan(tmp_path, workspace):
    path = tmp_path / "odd.npy"
    np.save(path, np.array([1.0, np.inf, -np.inf, np.nan, 3.0], dtype=np.float32))
    row = run(workspace, str(path)).blocks[0].rows[0]
    assert row[3:] == ["1", "3", "2", "2", "1"]


def test_values_are_summarised_to_fit_the_terminal(tmp_path, workspace):
    path = tmp_path / "big.npy"
    np.save(path, np.arange(100000, dtype=np.float32).reshape(100, 1000))
    text = "\n".join(run(workspace, str(path), size=(80, 24)).blocks[1].lines)
    assert "..." in text and len(text.splitlines()) < 30
    assert max(len(line) for line in text.splitlines()) <= 80


def test_errors_are_one_line(workspace):
    with pytest.raises(WorkspaceError, match="'no/such/op' is not a file, a dump file name or an op"):
        run(workspace, "no/such/op")
    with pytest.raises(WorkspaceError, match="graph op 'input' \\(Data\\) has no dump file"):
        run(workspace, "input:output:0")
    with pytest.raises(UsageError, match="does not fit relu1/Relu:output:0 of shape \\[1, 4, 4, 3\\]"):
        run(workspace, "relu1/Relu:output:0[0, 9]")
    with pytest.raises(WorkspaceError, match="no reference tensor relu1/Relu:3"):
        run(workspace, "relu1/Relu:3")


def test_save_writes_npy_and_txt_into_workspace_temp(workspace):
    report = run(workspace, "out/Add:output:0[0, 0]", "-s")
    npy_path, txt_path = report.data["tensors"][0]["saved"]
    assert os.path.dirname(npy_path) == os.path.join(os.path.realpath(workspace), "temp", "print_tensor")
    assert os.path.basename(txt_path) == "out_Add.output.0.slice.txt"
    saved = np.load(npy_path)
    assert saved.shape == (4, 3) and np.array_equal(saved, shown(report))
    lines = open(txt_path).read().splitlines()
    assert lines[0] == "# out/Add:output:0[0, 0] dtype float16 shape [4, 3]"
    assert np.allclose(np.loadtxt(txt_path), saved.astype(np.float64))


def test_a_header_whose_shapes_contradict_is_one_error_naming_the_file_and_tensor(tmp_path):
    """Origin shape [2, 32] for 48 stored elements: a user walk found the error naming neither file nor tensor."""
    import struct

    from precision_tool.errors import LayoutError
    from precision_tool.formats.dump_schema import DumpData

    root = write_inspect_workspace(tmp_path)
    path = dump_path(root, "relu1/Relu")
    with open(path, "rb") as handle:
        content = handle.read()
    length = struct.unpack("<Q", content[:8])[0]
    header = DumpData()
    header.ParseFromString(content[8:8 + length])
    del header.output[0].original_shape.dim[:]
    header.output[0].original_shape.dim.extend([2, 32])
    with open(path, "wb") as handle:
        data = header.SerializeToString()
        handle.write(struct.pack("<Q", len(data)) + data + content[8 + length:])
    with pytest.raises(LayoutError) as raised:
        run(root, "relu1/Relu:output:0")
    assert str(raised.value).startswith(f"{path}: output 0: cannot convert ")
    assert run(root, "relu1/Relu:output:0", "--keep-layout").data["tensors"][0]["shape"] == [1, 1, 4, 4, 16]
