"""Emulated workspaces, read back with precision_tool's own readers: layout of files, fusion mapping,
device layouts, Opdebug records, perturbation, determinism (emulations run once, in conftest)."""
import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_names import parse_dump_name, sanitize_op_name, scan_dump_folder
from precision_tool.formats.fusion_result import read_fusion_result
from precision_tool.formats.ge_io import find_build_graph, read_ge_graph
from precision_tool.formats.npy_dir import reference_op_name
from precision_tool.formats.origin_tensor import read_origin_tensor
from precision_tool.formats.opdebug import describe_status, read_overflow_record
from sample_counts import model_layers

pytestmark = pytest.mark.tf
REPO = Path(__file__).resolve().parents[2]
PLANTED_TF_OP = "small_cnn_1/res_conv_1/convolution"
FUSED_PLANTED_OUTPUT = "small_cnn_1/res_conv_1/BiasAdd"
OVERFLOW_OP = "small_cnn_1/conv3_1/convolution"


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def tree_bytes(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def manifest(ws: Path) -> dict:
    return json.loads((ws / "manifest.json").read_text())


def run_folder(ws: Path, index: int = 0) -> Path:
    return ws / manifest(ws)["runs"][index]["dump_dir"]


def dump_of(folder: Path, op_name: str):
    return read_dump_header(scan_dump_folder(folder).find(op_name).latest.path)


def output_of(folder: Path, op_name: str, index: int = 0) -> np.ndarray:
    dump = dump_of(folder, op_name)
    return read_origin_tensor(dump, dump.outputs[index]).array


def reference(ws: Path, tf_op: str, index: int = 0) -> np.ndarray:
    (path,) = glob.glob(str(ws / "tf" / "dump" / f"{reference_op_name(tf_op)}.{index}.*.npy"))
    return np.load(path, allow_pickle=False)


# ------------------------------------------------------------------------------------------- determinism
def test_same_seed_gives_identical_bytes_cli_api_and_committed_sample(emulated):
    cli, api = tree_bytes(emulated["cnn_cli"]), tree_bytes(emulated["cnn_api"])
    assert emulated.summary["cli_exit"] == 0
    listed = len(json.loads((emulated["cnn_cli"] / "manifest.json").read_text())["files"])
    assert len(cli) == listed + 1 and cli == api  # every file the manifest lists (tf/graph's two included), and it
    committed = tree_bytes(REPO / "sample_dumps" / "cnn_workspace")
    assert committed == cli, "sample_dumps/cnn_workspace is stale: run make sample-dumps"


def test_the_executed_reference_graph_is_kept_readable_without_tensorflow(emulated):
    from precision_tool.formats.tf_graph import read_tf_graph

    ws = emulated["cnn_cli"]
    index = json.loads((ws / "tf" / "graph" / "index.json").read_text())
    (entry,) = index["graphs"]
    assert entry["file"] == "graph_reference_cpu_0.pb" and entry["device"].endswith("CPU:0")
    graph = read_tf_graph(ws / "tf" / "graph" / entry["file"])
    types = graph.without_debug_ops().op_types
    assert entry["nodes"] == len(graph.nodes) > len(types)  # tfdbg's copy and debug nodes are in the file
    assert types["small_cnn_1/res_conv_1/convolution"] == "Conv2D" and types["small_cnn_1/prob_1/Softmax"] == "Softmax"
    assert b"tf_debug/2" not in (ws / "tf" / "graph" / entry["file"]).read_bytes()  # no wall-clock folder name


# ------------------------------------------------------------------------------------------ files, names
def test_dump_tree_and_graph_are_named_as_on_a_device(emulated):
    ws = emulated["cnn_cli"]
    info = manifest(ws)
    model_name = info["model_name"]
    folder = run_folder(ws)
    assert folder.relative_to(ws).parts == ("npu", "debug_0", "dump", "20241119070640", "0", model_name, "1", "0")
    graph_file = find_build_graph(ws / "npu" / "debug_0" / "graph", model_name)
    assert graph_file.name == "ge_proto_00000001_Build.txt"
    graph = read_ge_graph(graph_file).root
    tasks = [op for op in graph.ops if op.type not in ("Data", "Const", "NetOutput")]
    scan = scan_dump_folder(folder)
    assert len(scan.ops) == len(tasks) == info["runs"][0]["executed_ops"] > 0
    previous = (0, 0)
    for op in tasks:  # execution order = graph order: task ids and time stamps increase
        found = scan.find(op.name)
        assert found is not None and found.op_type == op.type, op.name
        name = parse_dump_name(os.path.basename(found.latest.path))
        assert name.op_name == sanitize_op_name(op.name) and name.stream_id == op.stream_id == 2
        assert (name.task_id, name.timestamp) > previous
        previous = (name.task_id, name.timestamp)
        assert read_dump_header(found.latest.path).op_name == op.name


def test_fusion_mapping_in_dump_headers_and_graph(emulated):
    ws = emulated["cnn_cli"]
    graph = read_ge_graph(ws / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt").root
    conv = graph.op(PLANTED_TF_OP)
    assert conv.original_op_names == (PLANTED_TF_OP, FUSED_PLANTED_OUTPUT)
    assert conv.pass_names == ("ConvBiasaddFusionPass",)
    assert conv.output_descs[0].origin_name == FUSED_PLANTED_OUTPUT
    conv3 = graph.op(OVERFLOW_OP)
    assert conv3.pass_names == ("ConvBiasaddFusionPass", "TbeConvElemwiseFusionPass")
    header = dump_of(run_folder(ws), OVERFLOW_OP)
    assert (header.outputs[0].original_op_name, header.outputs[0].original_output_index) == \
        ("small_cnn_1/conv3_1/Relu6", 0)
    assert header.outputs[0].format_name == "NC1HWC0" and header.outputs[0].dtype_name == "DT_FLOAT16"
    assert [e.format_name for e in header.inputs] == ["NC1HWC0", "FRACTAL_Z", "ND"]
    unfused = read_ge_graph(ws / "npu" / "debug_1" / "graph" / "ge_proto_00000001_Build.txt").root
    assert unfused.op(FUSED_PLANTED_OUTPUT).original_op_names == (FUSED_PLANTED_OUTPUT,)
    assert not any(op.pass_names for op in unfused.ops)
    fusion = read_fusion_result(ws / "fusion" / "fusion_result.json")
    assert fusion.effective_passes() == ("ConvBiasaddFusionPass", "MatMulBiasAddFusionPass",
                                         "TbeConvElemwiseFusionPass", "TbeMatmulElemwiseFusionPass")


# -------------------------------------------------------------------------------------------- layouts
def test_dc_gives_tensors_in_tf_layout_equal_to_reference_in_fp16(emulated, tmp_path):
    ws = emulated["cnn_cli"]
    folder = run_folder(ws)
    path = scan_dump_folder(folder).find("small_cnn_1/conv1_1/convolution").latest.path
    assert main(["dc", path, "-o", str(tmp_path)]) == 0
    base = os.path.basename(path)
    output = np.load(tmp_path / f"{base}.output.0.npy")
    assert output.shape == (2, 16, 16, 16) and output.dtype == np.float16
    assert cosine(output, reference(ws, "small_cnn_1/conv1_1/Relu")) > 0.9999
    kernel = np.load(tmp_path / f"{base}.input.1.npy")
    ref_kernel = reference(ws, "small_cnn_1/conv1_1/convolution/ReadVariableOp/resource")
    assert kernel.shape == (3, 3, 3, 16) and np.array_equal(kernel, ref_kernel.astype(np.float16))
    stored = read_dump_header(path)
    assert stored.outputs[0].shape == (2, 1, 16, 16, 16) and stored.inputs[1].shape == (9, 1, 16, 16)
    matmul = dump_of(folder, "small_cnn_1/fc1_1/MatMul")
    assert matmul.outputs[0].format_name == "FRACTAL_NZ" and matmul.outputs[0].shape == (2, 1, 16, 16)
    assert read_origin_tensor(matmul, matmul.outputs[0]).array.shape == (2, 32)


def test_cast_and_transdata_carry_values_between_layouts(emulated):
    folder = run_folder(emulated["cnn_cli"])
    cast = dump_of(folder, "trans_Cast_0")
    assert (cast.inputs[0].dtype_name, cast.outputs[0].dtype_name) == ("DT_FLOAT", "DT_FLOAT16")
    trans = dump_of(folder, "trans_TransData_1")
    assert (trans.inputs[0].format_name, trans.outputs[0].format_name) == ("NHWC", "NC1HWC0")
    assert np.array_equal(read_origin_tensor(trans, trans.inputs[0]).array,
                          read_origin_tensor(trans, trans.outputs[0]).array)
    assert np.array_equal(read_tensor(cast, cast.outputs[0]), read_tensor(trans, trans.inputs[0]))


# --------------------------------------------------------------------------------------- overflow
def test_opdebug_record_names_the_overflowing_op(emulated):
    ws = emulated["cnn_cli"]
    info = manifest(ws)["overflow"]
    assert info["first_op"] == OVERFLOW_OP and info["origin_ops"] == [OVERFLOW_OP]
    folder = ws / info["dir"]
    (record_path,) = [ws / p for p in info["records"]]
    record = read_overflow_record(record_path)
    unit = record.reporting_unit
    assert record.layout == "old" and unit.unit == "AI Core" and unit.status == (0x100,)
    assert describe_status(record) == ["AI Core: overflow converting fp32→fp16 or int32→fp16 (0x100)"]
    dump = scan_dump_folder(folder).find(OVERFLOW_OP).latest
    assert (dump.name.task_id, dump.name.stream_id) == (unit.task_id, unit.stream_id)
    assert parse_dump_name(record_path.name).timestamp == dump.name.timestamp + 1
    # real overflow: the float32 pre-activation exceeds float16, yet ReLU6 clamps the dumped output
    assert np.abs(reference(ws, "small_cnn_1/conv3_1/BiasAdd")).max() > 65504
    assert np.isfinite(output_of(folder, OVERFLOW_OP)).all()
    assert cosine(output_of(run_folder(ws), OVERFLOW_OP), reference(ws, "small_cnn_1/conv3_1/Relu6")) > 0.99


def test_scaled_input_overflows_at_the_input_cast_and_later_ops_inherit(emulated):
    ws = emulated["dense_scaled"]
    info = manifest(ws)["overflow"]
    assert info["first_op"] == "trans_Cast_0" and info["origin_ops"] == ["trans_Cast_0"]
    statuses = [(e["npu_op"], e["status"]) for e in info["ops"]]
    assert statuses[0] == ("trans_Cast_0", "0x100") and all(s == "0x20" for _, s in statuses[1:])
    assert not any(name.startswith("trans_TransData") for name, _ in statuses)
    scan = scan_dump_folder(ws / info["dir"])
    records = [read_overflow_record(ref.path).reporting_unit.task_id for ref in scan.overflow_records]
    tasks = {op.latest.name.task_id: op.op_name for op in scan.ops}
    assert [tasks[t] for t in records] == [sanitize_op_name(name) for name, _ in statuses]  # oldest first


# ------------------------------------------------------------------------------------------- perturbation
def test_planted_noise_shows_at_its_op_and_fades_downstream(emulated):
    ws = emulated["cnn_cli"]
    planted = manifest(ws)["perturbations"]
    assert planted == [{"tf_op": PLANTED_TF_OP, "rel": 0.5,
                        "npu_op": {"debug_0": PLANTED_TF_OP, "debug_1": PLANTED_TF_OP}}]
    fused, unfused = run_folder(ws, 0), run_folder(ws, 1)
    assert cosine(output_of(fused, PLANTED_TF_OP), reference(ws, FUSED_PLANTED_OUTPUT)) < 0.98
    assert cosine(output_of(unfused, PLANTED_TF_OP), reference(ws, PLANTED_TF_OP)) < 0.98
    for op in ("small_cnn_1/res_add_1/Add", "small_cnn_1/pool1_1/MaxPool2d", "small_cnn_1/conv1_1/convolution"):
        tf_op = op if op != "small_cnn_1/conv1_1/convolution" else "small_cnn_1/conv1_1/Relu"
        assert cosine(output_of(fused, op), reference(ws, tf_op)) > 0.99, op


def test_fused_and_unfused_outputs_differ_slightly(emulated):
    ws = emulated["cnn_cli"]
    fused = output_of(run_folder(ws, 0), "small_cnn_1/conv2_1/convolution")
    unfused = output_of(run_folder(ws, 1), "small_cnn_1/conv2_1/Relu")
    assert not np.array_equal(fused, unfused) and cosine(fused, unfused) > 0.9999


# ------------------------------------------------------------------------------------- manifest, forms
def test_manifest_lists_what_was_written(emulated):
    ws = emulated["cnn_cli"]
    info = manifest(ws)
    assert info["model_script"] == "sample_dumps/models/cnn.py" and info["seed"] == 0 and info["fusion"] == "both"
    assert all((ws / f).is_file() for f in info["files"]) and "manifest.json" not in info["files"]
    assert [g["npu_op"] for g in info["fusion_groups"]][:2] == ["small_cnn_1/conv1_1/convolution",
                                                                "small_cnn_1/conv2_1/convolution"]
    references = len(list((ws / "tf" / "dump").glob("*.npy")))
    assert info["reference"] == {"dir": "tf/dump", "files": references} and not (ws / "tf" / "tf_debug").exists()
    # one .npy per op of the model Keras traces from models/cnn.py: per Conv2D layer 9 (its kernel's resource, read
    # and convolution; its bias's resource, read, shape and reshape; the squeeze and the BiasAdd) and 3 activations;
    # per Dense layer 6 (kernel and bias: resource and read each; MatMul, BiasAdd) and fc1's ReLU; then the input,
    # pool1, res_add, res_relu, gap's Mean and its axes, the softmax and the Identity output: 60
    assert references == 9 * model_layers("Conv2D") + 3 + 6 * model_layers("Dense") + 1 + 8
    assert (ws / "tf" / "dump" / "image.0.1731990000000010.npy").is_file()  # the feed, under its own name


def test_a_plain_tf_function_model_is_emulated(emulated):
    ws = emulated["dense"]
    info = manifest(ws)
    assert info["fusion_groups"] == [{"npu_op": "mlp/fc1", "type": "MatMulV2",
                                      "tf_ops": ["mlp/fc1", "mlp/fc1_bias", "mlp/relu1"],
                                      "passes": ["MatMulBiasAddFusionPass"], "ub_pass": "TbeMatmulElemwiseFusionPass"}]
    # dense_function.py computes with fc1, fc1_bias, relu1, fc2 and prob; fusion makes the first three one op; GE adds
    # 4 (a Cast to float16 and a TransData to FRACTAL_NZ before fc1, back before the softmax)
    computed, transitions = 5, 4
    executed = [computed - 2 + transitions, computed + transitions]
    assert [r["executed_ops"] for r in info["runs"]] == executed
    assert [len(os.listdir(run_folder(ws, k))) for k in (0, 1)] == executed  # one dump file each
    assert cosine(output_of(run_folder(ws), "mlp/prob"), reference(ws, "mlp/prob")) > 0.999


def test_bad_perturb_is_one_line_and_leaves_no_workspace(emulated):
    errors = emulated.summary["errors"]
    assert errors["bad_perturb"].startswith("--perturb mlp/nope: no such op in the model")
    assert not errors["bad_perturb_left_folder"]
    assert errors["const_perturb"].startswith("--perturb mlp/fc1/b: this op is Const")


@pytest.mark.parametrize("run", [0, 1])
def test_every_op_of_a_varied_model_decodes_and_matches_float32(emulated, run, tmp_path):
    ws = emulated["varied"]
    folder = run_folder(ws, run)
    assert main(["dc", str(folder), "-o", str(tmp_path)]) == 0
    graph = read_ge_graph(ws / "npu" / f"debug_{run}" / "graph" / "ge_proto_00000001_Build.txt").root
    types = {op.type for op in graph.ops}
    assert {"ConcatV2D", "AvgPool", "ReduceMeanD", "BatchMatMulV2", "Reshape", "MatMulV2"} <= types
    compared = 0
    for op in graph.ops:
        if op.type in ("Data", "Const", "NetOutput", "Cast", "TransData"):
            continue
        desc = op.output_descs[0]
        npu = output_of(folder, op.name)
        assert npu.shape == desc.origin_shape, op.name
        assert cosine(npu, reference(ws, desc.origin_name)) > 0.999, op.name
        compared += 1
    # every computing op's dump file in the folder (GE's Cast and TransData aside), counted by name
    assert compared == sum(name.split(".")[0] not in ("Cast", "TransData") for name in os.listdir(folder))
