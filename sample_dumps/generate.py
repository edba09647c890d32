"""Rebuild ``sample_dumps/`` bit-identically (``make sample-dumps``).

``single_ops/``: a handful of Ascend op dump files as a device writes them -- activations in NC1HWC0,
matmul outputs in FRACTAL_NZ, weights in FRACTAL_Z, a bf16 tensor, a fused op whose output names its
TensorFlow op, and one Opdebug overflow record -- written with precision_tool's own writer, fixed seeds
and fixed timestamps. ``make demo`` decodes it with ``dc``.
"""
from __future__ import annotations

import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from precision_tool.formats.dtypes import float32_to_bf16_bits  # noqa: E402
from precision_tool.formats.dump_file import TensorSpec, write_dump  # noqa: E402
from precision_tool.formats.dump_names import build_dump_name  # noqa: E402
from precision_tool.formats.layouts import to_device  # noqa: E402
from precision_tool.formats.overflow import OverflowUnit, old_layout_record, write_overflow_record  # noqa: E402

BASE_TS = 1732000000000000
DUMP_SUBDIR = os.path.join("20241119071000", "0", "ge_default_20241119071000_1", "1", "0")


def _write(folder, op_type, op_name, task_id, ts, inputs, outputs):
    name = build_dump_name(op_type, op_name, task_id, 2, ts)
    write_dump(os.path.join(folder, name.file_name), op_name, inputs=inputs, outputs=outputs, dump_time=ts)


def build_single_ops(root: str) -> None:
    folder = os.path.join(root, "single_ops", DUMP_SUBDIR)
    os.makedirs(folder)
    rng = np.random.default_rng(20241119)
    image = rng.standard_normal((1, 8, 8, 3)).astype(np.float16)                        # NHWC
    weights = (rng.standard_normal((3, 3, 3, 19)) * 0.2).astype(np.float16)             # HWCN
    conv = np.maximum(rng.standard_normal((1, 8, 8, 19)), 0).astype(np.float16)         # NHWC
    _write(folder, "Conv2D", "conv1/Conv2D", 11, BASE_TS + 10, inputs=[
        TensorSpec(to_device(image, "NHWC", "NC1HWC0"), format="NC1HWC0", original_shape=image.shape),
        TensorSpec(to_device(weights, "HWCN", "FRACTAL_Z"), format="FRACTAL_Z", original_shape=weights.shape),
    ], outputs=[
        TensorSpec(to_device(conv, "NHWC", "NC1HWC0"), format="NC1HWC0", original_shape=conv.shape,
                   original_op=("conv1/Relu", 0), original_format="NHWC"),
    ])
    features = rng.standard_normal((4, 33)).astype(np.float16)
    dense = (features.astype(np.float32) @ rng.standard_normal((33, 17)).astype(np.float32)).astype(np.float16)
    _write(folder, "MatMulV2", "dense/MatMul", 12, BASE_TS + 20, inputs=[
        TensorSpec(to_device(features, "ND", "FRACTAL_NZ"), format="FRACTAL_NZ", original_shape=features.shape),
    ], outputs=[
        TensorSpec(to_device(dense, "ND", "FRACTAL_NZ"), format="FRACTAL_NZ", original_shape=dense.shape),
    ])
    logits = rng.standard_normal((4, 17)).astype(np.float32)
    _write(folder, "Cast", "dense/Cast_bf16", 13, BASE_TS + 30, inputs=[logits], outputs=[
        TensorSpec(float32_to_bf16_bits(logits), dtype_code=27)])
    overflowing = np.array([[60000.0, 65504.0], [np.inf, -np.inf]], dtype=np.float16)
    _write(folder, "Mul", "scale/Mul", 14, BASE_TS + 40, inputs=[overflowing[:1]], outputs=[overflowing])
    record = old_layout_record(ai_core=OverflowUnit(unit="AI Core", model_id=1, stream_id=2, task_id=14,
                                                    task_type=0, status=(0x20,)))
    write_overflow_record(folder, record, timestamp=BASE_TS + 41, task_id=14, stream_id=2)


def main() -> int:
    target = os.path.join(HERE, "single_ops")
    if os.path.exists(target):
        shutil.rmtree(target)
    build_single_ops(HERE)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
