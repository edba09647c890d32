"""Write an emulated NPU run exactly as a device would: dump files, the Build graph, fusion results, Opdebug
overflow records.

Everything is deterministic: each run has a fixed base time (:data:`RUN_BASE_US`); the k-th executed op gets task
id ``FIRST_TASK_ID + k`` on stream ``STREAM_ID`` and time stamp ``base + 10 * (k + 1)`` µs, and an Opdebug record
is stamped 1 µs after its op's dump. The layout: docs/emulate.md#files-written; the fixed names and values:
docs/internals/emulator.md#artifacts.
"""
from __future__ import annotations

import dataclasses
import os
import time
import zlib
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from precision_tool.capture.emulate import op_tables as T
from precision_tool.capture.emulate.fusion_groups import pass_counts
from precision_tool.capture.emulate.graph_info import split_tensor_name
from precision_tool.capture.emulate.npu_values import NpuValues, OverflowEvent
from precision_tool.capture.emulate.npu_plan import NpuOp, NpuPlan, NpuTensor
from precision_tool.formats import dtypes, ge_graph as G
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.fileio import atomic_write
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.fusion_result import (GRAPH_FUSION, UB_FUSION, FusionResult, GraphFusion,
                                                  PassRecord, write_fusion_result)
from precision_tool.formats.ge_io import write_ge_graph_text
from precision_tool.formats.layouts import to_device
from precision_tool.formats.opdebug import OverflowUnit, old_layout_record, write_overflow_record

RUN_BASE_US = {"debug_0": 1732000000000000, "debug_1": 1732003600000000, "overflow": 1732007200000000}
DEVICE_ID, MODEL_ID, STEP = "0", "1", "0"
STREAM_ID = 2
FIRST_TASK_ID = 3
TIMESTAMP_STEP_US = 10
GRAPH_FILE_NAME = "ge_proto_00000001_Build.txt"
FUSION_RESULT_KEY = "session_and_graph_id_0_1"
AICORE_LIB, GE_LOCAL_LIB = "AIcoreEngine", "DNN_VM_GE_LOCAL_OP_STORE"


def folder_time(base_us: int) -> str:
    """``YYYYmmddHHMMSS`` (UTC) of a time stamp in µs: the dump tree's time folder."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(base_us // 1_000_000))


def model_name_for(base_us: int = RUN_BASE_US["debug_0"]) -> str:
    """GE's name for the root graph, which is also the ``model_name`` folder: ``ge_default_{time}_1``."""
    return f"ge_default_{folder_time(base_us)}_1"


def dump_folder(root: str, base_us: int, model_name: str, step: int = int(STEP)) -> str:
    """``root/{time}/{device}/{model}/{model_id}/{step}``: the step is the training step dumped (0 for a model)."""
    return os.path.join(root, folder_time(base_us), DEVICE_ID, model_name, MODEL_ID, str(step))


@dataclass(frozen=True)
class TaskInfo:
    task_id: int
    index: int


def task_table(plan: NpuPlan) -> Dict[str, TaskInfo]:
    """Task id and execution index of every executed op."""
    return {op.name: TaskInfo(FIRST_TASK_ID + k, k) for k, op in enumerate(plan.tasks)}


def kernel_name(op: NpuOp) -> str:
    return f"te_{op.type.lower()}_{zlib.crc32(op.name.encode('utf-8')):08x}"


# ------------------------------------------------------------------------------------------ dump files
def _stored(array: np.ndarray, tensor: NpuTensor) -> np.ndarray:
    if tensor.format in T.DEVICE_FORMATS:
        return to_device(array, tensor.origin_format, tensor.format)
    return np.ascontiguousarray(array)


def _spec(array: np.ndarray, tensor: NpuTensor, is_output: bool) -> TensorSpec:
    if not is_output:
        return TensorSpec(_stored(array, tensor), format=tensor.format, original_shape=tensor.shape)
    original_op = None
    if tensor.is_origin:
        op_name, index = split_tensor_name(tensor.tf_tensor)
        original_op = (op_name, index)
    return TensorSpec(_stored(array, tensor), format=tensor.format, original_shape=tensor.shape,
                      original_op=original_op, original_format=tensor.origin_format)


def write_op_dump(folder: str, plan: NpuPlan, values: NpuValues, op: NpuOp, task_id: int, timestamp: int) -> str:
    """One dump file for ``op`` in ``folder``; returns its path."""
    inputs = [_spec(a, t, False) for a, t in zip(values.inputs(op), plan.input_tensors(op))]
    outputs = [_spec(a, t, True) for a, t in zip(values.outputs(op), op.outputs)]
    name = build_dump_name(op.type, op.name, task_id, STREAM_ID, timestamp)
    if name.mapping_row is not None:  # names of 255+ bytes go through mapping.csv
        from precision_tool.formats.dump_names import append_mapping_row
        append_mapping_row(folder, name.mapping_row)
    return write_dump(os.path.join(folder, name.file_name), op.name, inputs, outputs, dump_time=timestamp)


def write_npu_dumps(plan: NpuPlan, values: NpuValues, dump_root: str, base_us: int, model_name: str,
                    only: Optional[Sequence[str]] = None, step: int = 0) -> List[str]:
    """Dump files of every executed op (or of the ops named in ``only``) under ``dump_root``, in the folder of
    step ``step``."""
    folder = dump_folder(dump_root, base_us, model_name, step)
    os.makedirs(folder, exist_ok=True)
    tasks = task_table(plan)
    paths = []
    for op in plan.tasks:
        if only is not None and op.name not in only:
            continue
        info = tasks[op.name]
        paths.append(write_op_dump(folder, plan, values, op, info.task_id,
                                   base_us + TIMESTAMP_STEP_US * (info.index + 1)))
    return paths


def write_op_stats(folder: str, plan: NpuPlan, values: NpuValues, op: NpuOp, task_id: int, timestamp: int) -> str:
    """GE's per-op statistics CSV for ``op`` in ``folder`` (``{dump file name}.csv``, the default header); returns
    its path. Each row states its tensor as the device holds it: data type, format, shape and bytes, and the
    statistics (:func:`~precision_tool.metrics.stat_bounds.stats_of_array`) of that buffer, a device layout's
    padding included, so that ``Count`` is the product of ``Shape`` as in the facts' example row. (Whether CANN's
    statistics skip the padding of NC1HWC0 or FRACTAL layouts is not in the facts.)"""
    from precision_tool.formats.stats_csv import stats_csv_text
    from precision_tool.formats.tensor_kind import INPUT, OUTPUT
    from precision_tool.metrics.stat_bounds import stats_of_array

    rows = []
    for kind, arrays, tensors in ((INPUT, values.inputs(op), plan.input_tensors(op)),
                                  (OUTPUT, values.outputs(op), op.outputs)):
        for index, (array, tensor) in enumerate(zip(arrays, tensors)):
            stored = _stored(array, tensor)
            stats = stats_of_array(stored, kind, index)
            rows.append(dataclasses.replace(stats, dtype=_dtype_enum(tensor.dtype), format=tensor.format))
    name = build_dump_name(op.type, op.name, task_id, STREAM_ID, timestamp)
    if name.mapping_row is not None:  # the statistics file of a hashed dump name is the hash + ".csv"
        from precision_tool.formats.dump_names import append_mapping_row
        append_mapping_row(folder, name.mapping_row)
    path = os.path.join(folder, name.file_name + ".csv")
    with atomic_write(path, "w", encoding="utf-8") as handle:
        handle.write(stats_csv_text(rows))
    return path


def write_npu_stats(plan: NpuPlan, values: NpuValues, dump_root: str, base_us: int, model_name: str,
                    only: Optional[Sequence[str]] = None, step: int = 0) -> List[str]:
    """What :func:`write_npu_dumps` writes, as GE's statistics CSVs (``dump_data="stats"``) instead of dump files."""
    folder = dump_folder(dump_root, base_us, model_name, step)
    os.makedirs(folder, exist_ok=True)
    tasks = task_table(plan)
    return [write_op_stats(folder, plan, values, op, tasks[op.name].task_id,
                           base_us + TIMESTAMP_STEP_US * (tasks[op.name].index + 1))
            for op in plan.tasks if only is None or op.name in only]


def write_overflow_run(plan: NpuPlan, values: NpuValues, events: Sequence[OverflowEvent], dump_root: str,
                       base_us: int, model_name: str, step: int = 0) -> List[str]:
    """The overflow action's output: each overflowing op's dump and its Opdebug record beside it."""
    if not events:
        return []
    paths = write_npu_dumps(plan, values, dump_root, base_us, model_name, only=[e.op_name for e in events], step=step)
    folder = dump_folder(dump_root, base_us, model_name, step)
    tasks = task_table(plan)
    for event in events:
        info = tasks[event.op_name]
        pc_start = 0x124080000000 + 0x1000 * info.index
        unit = OverflowUnit(unit="AI Core", model_id=int(MODEL_ID), stream_id=STREAM_ID, task_id=info.task_id,
                            task_type=0, status=(event.status,), pc_start=pc_start,
                            para_base=0x124100000000 + 0x400 * info.index, kernel_code=pc_start, block_idx=0)
        timestamp = base_us + TIMESTAMP_STEP_US * (info.index + 1) + 1
        paths.append(write_overflow_record(folder, old_layout_record(ai_core=unit), timestamp=timestamp))
    return paths


# ------------------------------------------------------------------------------------------- GE graph
def _dtype_enum(dtype: str) -> str:
    return dtypes.dtype_name(dtypes.dtype_code(np.dtype(dtype)))


def _desc(tensor: NpuTensor, with_origin: bool) -> G.TensorDesc:
    origin_name, origin_index = "", None
    if with_origin and tensor.is_origin:
        origin_name, origin_index = split_tensor_name(tensor.tf_tensor)
    return G.tensor_desc(_dtype_enum(tensor.dtype), tensor.format, tensor.device_shape,
                         origin_format=tensor.origin_format, origin_shape=tensor.shape,
                         origin_name=origin_name, origin_output_index=origin_index)


def _op_attrs(op: NpuOp) -> dict:
    attrs: dict = {}
    if op.kind == "compute":
        attrs[G.ORIGINAL_OP_NAMES] = list(op.tf_ops)
    group = op.group
    if op.kind == "compute" and group is not None:  # compute ops always carry their group
        if group.graph_passes:
            attrs[G.PASS_NAME] = list(group.graph_passes)
        if group.ub_pass:
            attrs[G.PASS_NAME_UB] = group.ub_pass
    if op.is_task:
        attrs[op.name + G.KERNEL_NAME_SUFFIX] = kernel_name(op)
        attrs[G.KERNEL_LIB] = AICORE_LIB
    else:
        attrs[G.KERNEL_LIB] = GE_LOCAL_LIB
    return attrs


def build_ge_graph(plan: NpuPlan, model_name: str) -> G.GraphModel:
    """The Build-stage graph: ops in execution order, names = dump names, origin attributes set."""
    nodes = []
    for index, op in enumerate(plan.ops):
        inputs = tuple(G.InputRef(producer, slot) for producer, slot in op.inputs)
        input_descs = tuple(_desc(t, with_origin=False) for t in plan.input_tensors(op))
        output_descs = tuple(_desc(t, with_origin=True) for t in op.outputs)
        nodes.append(G.OpNode(name=op.name, type=op.type, id=index, stream_id=STREAM_ID if op.is_task else 0,
                              inputs=inputs, input_descs=input_descs, output_descs=output_descs,
                              attrs=_op_attrs(op)))
    data = tuple(op.name for op in plan.ops if op.kind == "data")
    graph = G.Graph(model_name, tuple(nodes), inputs=data, outputs=("Node_Output",))
    return G.GraphModel((graph,), name=model_name)


def write_build_graph(plan: NpuPlan, graph_dir: str, model_name: str) -> str:
    os.makedirs(graph_dir, exist_ok=True)
    return str(write_ge_graph_text(build_ge_graph(plan, model_name), os.path.join(graph_dir, GRAPH_FILE_NAME)))


def write_fusion_result_file(plan: NpuPlan, path: str) -> str:
    """``fusion_result.json`` for the fused ops of ``plan`` (match = effect = ops made by the pass)."""
    counts = pass_counts(plan.groups)
    passes = [PassRecord(name, GRAPH_FUSION, n, n) for name, n in sorted(counts["graph_fusion"].items())]
    passes += [PassRecord(name, UB_FUSION, n, n, repository_hit_times=0)
               for name, n in sorted(counts["ub_fusion"].items())]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    result = FusionResult((GraphFusion(FUSION_RESULT_KEY, tuple(passes), 0, 1),))
    return str(write_fusion_result(result, path))
