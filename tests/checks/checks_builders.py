"""Fixtures for the checks, written with precision_tool's own writers, and the sample workspace copied to tmp.

* :func:`copy_cnn_workspace` -- ``sample_dumps/cnn_workspace`` copied (never written in place);
* :func:`perturb_output` -- multiply a dump file's output payload by ``1 + rel * z`` in place (a copy only),
  the emulator's "imprecise kernel" after the fact, without TensorFlow;
* :func:`set_tensor` -- overwrite one dumped tensor with given origin-layout values (e.g. the reference
  rounded to the dump's dtype, to remove a planted fault);
* :func:`write_op_dump` / :func:`write_record` -- a dump file or an Opdebug record in a flat folder.
"""
from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import numpy as np

from precision_tool.formats.dump_file import read_dump_header, read_tensor
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import write_dump
from precision_tool.formats.opdebug import write_overflow_record

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "sample_dumps" / "cnn_workspace"
SINGLE_OPS = REPO / "sample_dumps" / "single_ops"
CONV2 = "small_cnn_1/conv2_1/convolution"
POOL1 = "small_cnn_1/pool1_1/MaxPool2d"
RES_CONV = "small_cnn_1/res_conv_1/convolution"
CONV3 = "small_cnn_1/conv3_1/convolution"


def copy_cnn_workspace(tmp_path) -> Path:
    target = Path(tmp_path) / "cnn_workspace"
    shutil.copytree(CNN, target)
    return target


def dump_file_of(workspace, run: int, sanitized_op: str) -> str:
    (path,) = glob.glob(os.path.join(workspace, "npu", f"debug_{run}", "dump", "**", f"*.{sanitized_op}.*"),
                        recursive=True)
    return path


def perturb_output(path: str, rel: float = 0.3, seed: int = 1, index: int = 0) -> None:
    """Rewrite output ``index``'s payload of the dump at ``path`` as ``x * (1 + rel * z)`` (padding stays 0)."""
    dump = read_dump_header(path)
    entry = dump.outputs[index]
    values = read_tensor(dump, entry)
    noise = 1.0 + rel * np.random.default_rng(seed).standard_normal(values.shape)
    changed = (values.astype(np.float32) * noise).astype(values.dtype)
    with open(path, "r+b") as handle:
        handle.seek(entry.offset)
        handle.write(changed.tobytes())


def set_tensor(path: str, kind: str, index: int, values: np.ndarray, origin_format: str = "NHWC") -> None:
    """Overwrite tensor ``kind``/``index`` of the dump at ``path`` with ``values`` (origin layout), cast to the
    stored dtype and laid out in the stored format."""
    from precision_tool.formats.layouts import to_device

    dump = read_dump_header(path)
    entry = dump.tensor(kind, index)
    stored = to_device(np.asarray(values).astype(entry.numpy_dtype), origin_format, entry.format_name)
    assert stored.shape == tuple(entry.shape), (stored.shape, entry.shape)
    with open(path, "r+b") as handle:
        handle.seek(entry.offset)
        handle.write(stored.tobytes())


def set_npu_to_reference(workspace, run: int) -> int:
    """Set every NPU tensor of ``npu/debug_<run>`` that has a reference to that reference -- rounded to float16 when
    the NPU stores it in float16 -- in the NPU tensor's dtype and layout (an NPU exact up to its storage: a float32
    input of the model stays the batch itself); returns how many were set. Not consistent under replay: an op
    computing in float32 (a mean) would not give the rounded value."""
    from precision_tool.comparison.pipeline import CompareRequest, align_request

    root = os.fspath(workspace)
    aligned = align_request(CompareRequest(os.path.join(root, "npu", f"debug_{run}", "dump"),
                                           os.path.join(root, "tf", "dump"),
                                           os.path.join(root, "npu", f"debug_{run}", "graph")))
    for pair in aligned.alignment.pairs:
        values = pair.ref.load()
        if values.dtype.kind == "f" and pair.npu.dtype in ("float16", ""):
            values = np.clip(values, -65504, 65504).astype(np.float16)
        set_tensor(pair.npu.path, pair.npu.kind, pair.npu.index, values, pair.npu.origin_format or "ND")
    return len(aligned.alignment.pairs)


def write_op_dump(folder, op_type: str, op_name: str, task: int, stream: int, timestamp: int, inputs=(),
                  outputs=()) -> str:
    path = os.path.join(os.fspath(folder), build_dump_name(op_type, op_name, task, stream, timestamp).file_name)
    os.makedirs(os.fspath(folder), exist_ok=True)
    return write_dump(path, op_name, inputs=list(inputs), outputs=list(outputs), dump_time=timestamp)


def write_record(folder, record, timestamp: int, **ids) -> str:
    os.makedirs(os.fspath(folder), exist_ok=True)
    return write_overflow_record(folder, record, timestamp=timestamp, **ids)


def tree_listing(root) -> list:
    """Every file under ``root`` with its size and modification time (to prove nothing was written)."""
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            info = os.stat(os.path.join(folder, name))
            found.append((os.path.relpath(os.path.join(folder, name), root), info.st_size, info.st_mtime_ns))
    return sorted(found)
