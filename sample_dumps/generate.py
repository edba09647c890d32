"""Rebuild ``sample_dumps/`` bit-identically (``make sample-dumps``).

``single_ops/``: a handful of Ascend op dump files as a device writes them -- activations in NC1HWC0,
matmul outputs in FRACTAL_NZ, weights in FRACTAL_Z, a bf16 tensor, a fused op whose output names its
TensorFlow op, and one Opdebug overflow record -- written with precision_tool's own writer, fixed seeds
and fixed timestamps. ``make demo`` decodes it with ``dc``.

``cnn_workspace/`` and ``mobilenet_workspace/``: complete emulated workspaces (``precision_tool
emulate``) of the model scripts in ``models/`` -- NPU dumps, Build graphs, fusion results, overflow
records and the float32 reference -- each with a ``manifest.json`` listing what was planted:

* ``cnn_workspace``: ``models/cnn.py`` with noise planted on ``res_conv``'s Conv2D (an imprecise
  kernel in the middle), one float16 overflow (``conv3``, clamped by ReLU6 so only the overflow run
  sees it) and a fusion-off second run in ``npu/debug_1``;
* ``mobilenet_workspace``: ``models/mobilenet.py`` (MobileNetV2, 32x32, width 0.35, random weights),
  clean.

Everything is deterministic: running this again rewrites the same bytes (TensorFlow needed).
"""
from __future__ import annotations

import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from precision_tool.formats.dtypes import float32_to_bf16_bits  # noqa: E402
from precision_tool.formats.dump_names import build_dump_name  # noqa: E402
from precision_tool.formats.dump_writer import TensorSpec, write_dump  # noqa: E402
from precision_tool.formats.layouts import to_device  # noqa: E402
from precision_tool.formats.opdebug import OverflowUnit, old_layout_record, write_overflow_record  # noqa: E402

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


CNN_PERTURBED_OP = "small_cnn_1/res_conv_1/convolution"
WORKSPACES = {
    # folder: (model script relative to the repository, options)
    "cnn_workspace": ("sample_dumps/models/cnn.py",
                      dict(fusion="both", perturb={CNN_PERTURBED_OP: 0.5}, seed=0)),
    "mobilenet_workspace": ("sample_dumps/models/mobilenet.py", dict(fusion="on", seed=0)),
}
SIZE_BUDGET = 20 * 2**20


def build_workspaces(names) -> None:
    """Emulate each model of :data:`WORKSPACES` into ``sample_dumps/<folder>`` (paths relative to the
    repository, so manifests do not depend on where the checkout lives)."""
    from precision_tool.capture.emulate import EmulationOptions, emulate

    repo = os.path.dirname(HERE)
    os.chdir(repo)
    for folder, (script, options) in WORKSPACES.items():
        if folder not in names:
            continue
        target = os.path.join("sample_dumps", folder)
        if os.path.exists(target):
            shutil.rmtree(target)
        result = emulate(script, target, EmulationOptions(**options))
        print(f"wrote {target}: {len(result.manifest['files'])} files, {_size(target) / 2**20:.1f} MiB")


def _size(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(folder) for name in files)


def main(argv=None) -> int:
    """``generate.py [single_ops] [cnn_workspace] [mobilenet_workspace]``: rebuild those (default: all)."""
    known = ["single_ops", *WORKSPACES]
    wanted = list(sys.argv[1:] if argv is None else argv) or known
    unknown = [name for name in wanted if name not in known]
    if unknown:
        print(f"unknown sample {unknown[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    if "single_ops" in wanted:
        target = os.path.join(HERE, "single_ops")
        if os.path.exists(target):
            shutil.rmtree(target)
        build_single_ops(HERE)
        print(f"wrote {target}")
    build_workspaces([name for name in WORKSPACES if name in wanted])
    total = _size(HERE)
    print(f"sample_dumps/ is {total / 2**20:.1f} MiB")
    if total > SIZE_BUDGET:
        print(f"warning: sample_dumps/ is over its {SIZE_BUDGET // 2**20} MiB budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
