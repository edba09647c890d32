"""Alignment without a graph: header OriginalOp, own names, normalised names; and the align() entry."""
import os

import pytest

from align_builders import node, pairing, reasons, write_dumps, write_refs, write_workspace
from precision_tool.alignment import align
from precision_tool.errors import UsageError, WorkspaceError


def test_header_original_op_then_own_name(tmp_path):
    nodes = [node("fused_conv", "Conv2D", ["x:0"], outputs=2), node("scope/neg", "Neg", ["fused_conv:0"])]
    write_dumps(tmp_path / "npu", nodes, header_original={"fused_conv": [("conv/Relu", 0), ("conv/Relu", 1)]})
    write_refs(tmp_path / "ref", [("conv/Relu", 0), ("conv/Relu", 1), "scope/neg", "unused"])
    result = align(tmp_path / "npu", tmp_path / "ref")
    assert result.mode == "npu_vs_tf" and result.order_source == "dump_time"
    assert pairing(result) == {"fused_conv:output:0": "conv/Relu:output:0",
                               "fused_conv:output:1": "conv/Relu:output:1",
                               "scope/neg:output:0": "scope/neg:output:0"}
    assert {pair.rule for pair in result.pairs} == {"header_original_op", "own_name"}
    assert reasons(result)["scope/neg:input:0"] == ("no graph: which tensor feeds an input is only known from "
                                                    "the GE graph's edges")
    cov = result.coverage
    assert (cov.aligned_count, cov.npu_tensors) == (3, 5)
    assert cov.reference_only == ("unused:output:0",)
    assert cov.dumped_not_in_graph == () and cov.graph_ops_without_dump == ()
    assert result.order == ("fused_conv", "scope/neg") and result.data_inputs == {}


def test_names_normalised_when_the_header_has_no_op_name(tmp_path):
    # TF op "scope/my op" -> reference file "scope_my op.0.*.npy"; the dump file says "scope_my_op"
    write_dumps(tmp_path / "npu", [node("scope/my op", "Neg")], raw_names=False)
    write_refs(tmp_path / "ref", ["scope/my op"])
    result = align(tmp_path / "npu", tmp_path / "ref")
    [pair] = result.pairs
    assert (pair.npu.op_name, pair.rule) == ("scope_my_op", "normalised_name")
    assert pair.ref.file_op_name == "scope_my op"
    assert pair.note.startswith("matched reference file scope_my op.0.")


def test_normalisation_refuses_two_files_that_normalise_alike(tmp_path):
    write_dumps(tmp_path / "npu", [node("a b", "Neg")], raw_names=False)
    write_refs(tmp_path / "ref", ["a b", "a\\b"])
    result = align(tmp_path / "npu", tmp_path / "ref")
    assert result.pairs == ()
    assert "matches several reference files after normalising" in reasons(result)["a_b:output:0"]
    assert len(result.coverage.ambiguous) == 1


def test_own_name_from_the_file_name_is_noted(tmp_path):
    write_dumps(tmp_path / "npu", [node("plain", "Neg")], raw_names=False)
    write_refs(tmp_path / "ref", ["plain"])
    [pair] = align(tmp_path / "npu", tmp_path / "ref").pairs
    assert (pair.rule, pair.note) == ("own_name", "op name taken from the file name (the header has none)")


def test_mode_is_detected_from_the_reference_folder(tmp_path):
    nodes = [node("x", "Data"), node("a", "Relu", ["x:0"])]
    dump_dir, ref_dir, _ = write_workspace(tmp_path / "w", nodes, ["x", "a"])
    write_dumps(tmp_path / "other", nodes)
    assert align(dump_dir, ref_dir).mode == "npu_vs_tf"
    assert align(dump_dir, tmp_path / "other").mode == "npu_vs_npu"


def test_bad_arguments(tmp_path):
    nodes = [node("a", "Relu")]
    dump_dir, ref_dir, graph_path = write_workspace(tmp_path, nodes, ["a"])
    with pytest.raises(UsageError, match="unknown alignment mode 'tf'"):
        align(dump_dir, ref_dir, mode="tf")
    with pytest.raises(UsageError, match="a reference graph is only used when comparing two NPU runs"):
        align(dump_dir, ref_dir, mode="npu_vs_tf", reference_graph=graph_path)
    with pytest.raises(WorkspaceError, match="no such folder"):
        align(tmp_path / "nope", ref_dir)
    with pytest.raises(WorkspaceError, match="no such folder"):
        align(dump_dir, tmp_path / "nope")
    with pytest.raises(WorkspaceError, match="no GE Build graph"):
        align(dump_dir, ref_dir, graph=tmp_path / "ref")
    assert os.path.isdir(ref_dir)


@pytest.mark.compat
def test_a_hard_linked_alias_of_a_used_reference_is_not_listed_as_unused(tmp_path):
    # tf_dump writes a Keras name (a variable, the model Input) as a second hard link to the same .npy
    write_dumps(tmp_path / "npu", [node("scope/neg", "Neg", ["x:0"])])
    write_refs(tmp_path / "ref", ["scope/neg", "unused"])
    (original,) = [name for name in os.listdir(tmp_path / "ref") if name.startswith("scope_neg.")]
    os.link(tmp_path / "ref" / original, tmp_path / "ref" / original.replace("scope_neg", "keras_name"))
    result = align(tmp_path / "npu", tmp_path / "ref")
    assert pairing(result) == {"scope/neg:output:0": "scope/neg:output:0"}
    assert result.coverage.reference_only == ("unused:output:0",)  # not keras_name: it is scope/neg's file
