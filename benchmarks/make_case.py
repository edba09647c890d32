"""Build the peer-style comparison case: a chain of N ops, each dumping one input and one float16 output of
262,144 elements, float32 npy references, and the chain's GE graph (text and JSON).

Variants: ``nd`` (outputs ND ``[512, 512]``), ``nc1hwc0`` (NHWC ``[1, 64, 64, 64]`` stored NC1HWC0), and the
bounded-memory cases, 64M elements built with one op: ``huge`` (ND ``[8192, 8192]``) and ``huge_nc1hwc0`` (NHWC
``[1, 1024, 1024, 64]`` stored NC1HWC0).
Every reference is the NPU value plus a little noise, so every metric has work to do. Written with
precision_tool's own writers; the case folder is flat (msaccucmp needs flat folders):

    CASE/npu/       dump files           CASE/ref/    {tf_name}.0.{ts}.npy
    CASE/graph.txt  GE Build graph       CASE/graph.json  the same as msaccucmp's -f JSON
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.ge_graph import Graph, GraphModel, InputRef, OpNode, tensor_desc
from precision_tool.formats.ge_io import write_ge_graph_json, write_ge_graph_text
from precision_tool.formats.layouts import to_device
from precision_tool.formats.npy_dir import write_reference_npy

TS = 1732000000000000
VARIANTS = {
    "nd": dict(shape=(512, 512), origin="ND", stored="ND"),
    "nc1hwc0": dict(shape=(1, 64, 64, 64), origin="NHWC", stored="NC1HWC0"),
    "huge": dict(shape=(8192, 8192), origin="ND", stored="ND"),  # 64M elements: 128 MiB float16, 256 MiB float32
    "huge_nc1hwc0": dict(shape=(1, 1024, 1024, 64), origin="NHWC", stored="NC1HWC0"),  # the same, in a device layout
}


def _desc(variant, name):
    shape = VARIANTS[variant]["shape"]
    stored_shape = to_device(np.zeros(shape, np.float16), VARIANTS[variant]["origin"],
                             VARIANTS[variant]["stored"]).shape
    return tensor_desc("DT_FLOAT16", VARIANTS[variant]["stored"], list(stored_shape),
                       origin_format=VARIANTS[variant]["origin"], origin_shape=list(shape),
                       origin_name=name, origin_output_index=0)


def build_case(folder: str, variant: str = "nd", ops: int = 300, seed: int = 0) -> str:
    """Write the case into ``folder`` (created); returns ``folder``. Skips the work if already complete."""
    done = os.path.join(folder, ".complete")
    if os.path.exists(done):
        return folder
    spec = VARIANTS[variant]
    npu_dir, ref_dir = os.path.join(folder, "npu"), os.path.join(folder, "ref")
    os.makedirs(npu_dir, exist_ok=True)
    os.makedirs(ref_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    previous = rng.standard_normal(spec["shape"]).astype(np.float16)
    write_reference_npy(ref_dir, "input", 0, previous.astype(np.float32), timestamp_us=TS)
    nodes = [OpNode("input", "Data", id=0, output_descs=(_desc(variant, "input"),))]
    for i in range(ops):
        name = f"block{i}/op"
        output = (previous.astype(np.float32) * 0.9 + rng.standard_normal(spec["shape"]) * 0.1).astype(np.float16)
        stored_in = to_device(previous, spec["origin"], spec["stored"])
        stored_out = to_device(output, spec["origin"], spec["stored"])
        file_name = build_dump_name("Add", name, i + 1, 0, TS + i).file_name
        write_dump(os.path.join(npu_dir, file_name), name, dump_time=TS + i,
                   inputs=[TensorSpec(stored_in, format=spec["stored"], original_shape=spec["shape"])],
                   outputs=[TensorSpec(stored_out, format=spec["stored"], original_shape=spec["shape"],
                                       original_op=(name, 0))])
        reference = output.astype(np.float32) + rng.standard_normal(spec["shape"]).astype(np.float32) * 1e-3
        write_reference_npy(ref_dir, name, 0, reference, timestamp_us=TS + i)
        producer = "input" if i == 0 else f"block{i - 1}/op"
        nodes.append(OpNode(name, "Add", id=i + 1, inputs=(InputRef(producer, 0),),
                            input_descs=(_desc(variant, producer),), output_descs=(_desc(variant, name),),
                            attrs={"_datadump_original_op_names": [name]}))
        previous = output
    model = GraphModel((Graph("ge_default_bench", tuple(nodes)),), name="ge_default_bench")
    write_ge_graph_text(model, os.path.join(folder, "graph.txt"))
    write_ge_graph_json(model, os.path.join(folder, "graph.json"))
    open(done, "w").close()
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="nd")
    parser.add_argument("--ops", type=int, default=300)
    args = parser.parse_args(argv)
    print(build_case(args.folder, args.variant, args.ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
