"""The TF2 user's flow, on TF 2.6 (Python 3.9) and TF 2.21: capture, tf_dump, then ac -c replays from the graph.

1. ``tests/capture/scripts/tf2_flow.py``: a Keras CNN called in a ``tf.function`` under
   ``enable_reference_dump`` -- tfdbg v2, whose own files keep no graph; the capture writes the function graphs.
2. ``tf_dump`` keeps them in ``tf/graph``: every op TensorFlow lists for the function (minus tfdbg's debug ops)
   must be there with its type and data inputs, read without TensorFlow.
3. An NPU side built from the reference (``npu_side.py``) with a 2% relative error planted in the Conv2D's
   float16 output -- its cosine stays above 0.99 -- must be named by ``ac -c`` *by replay*, with a local error
   of about 2% (RED of ``x (1 + 0.02 z)`` against ``x`` is 0.02 rms(x z)/rms(x), ~0.02), and exit 1.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.npy_dir import read_npy_dir
from precision_tool.replay.reference_graph import load_reference_graph

from .npu_side import build_npu_side, cli, tensorflow_version

TF_VERSION = tensorflow_version()
pytestmark = [pytest.mark.compat,
              pytest.mark.skipif(not (TF_VERSION or "").startswith("2."),
                                 reason=f"TF2 flow: needs TensorFlow 2.x, not {TF_VERSION or 'none'}")]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "capture" / "scripts" / "tf2_flow.py"
DEBUG_OPS = ("DebugIdentityV2", "DebugIdentityV3", "DebugNumericSummaryV2")


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf2_flow")
    workspace = out / "precision_data"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", PRECISION_TOOL_DATA=str(workspace))
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    result = json.loads((out / "result.json").read_text())
    converted = cli(workspace, "tf_dump")
    assert converted.returncode == 0, converted.stdout
    result.update(workspace=workspace, capture_output=done.stdout, tf_dump=converted.stdout)
    return result


def test_tf_dump_keeps_the_function_graph_tensorflow_built(flow):
    assert "reference graphs: " in flow["capture_output"] and "precision_tool_graphs" in flow["capture_output"]
    assert "kept 1 graph" in flow["tf_dump"] or "kept 2 graphs" in flow["tf_dump"], flow["tf_dump"]
    graph = load_reference_graph(str(flow["workspace"] / "tf" / "graph"))
    listed = {op["name"]: op for op in flow["ops"] if op["type"] not in DEBUG_OPS}
    assert set(listed) <= set(graph.nodes)
    assert not [name for name, node in graph.nodes.items() if node.op in DEBUG_OPS]
    for name, op in listed.items():
        node = graph[name]
        assert node.op == op["type"], name
        assert [i if ":" in i else f"{i}:0" for i in node.data_inputs] == op["inputs"], name
    (conv,) = [name for name, op in listed.items() if op["type"] == "Conv2D"]
    assert graph[conv].attrs["strides"] == [1, 1, 1, 1] and graph[conv].attrs["padding"] == "VALID"


def test_ac_names_the_conv_by_replay_though_its_cosine_passes(flow, tmp_path):
    workspace = flow["workspace"]
    values = {ref.file_op_name: np.load(ref.path, allow_pickle=False)
              for ref in read_npy_dir(workspace / "tf" / "dump") if ref.output_index == 0}
    ops = [op for op in flow["ops"] if op["type"] not in DEBUG_OPS]
    (conv,) = [op["name"] for op in ops if op["type"] == "Conv2D"]
    noise = np.random.default_rng(5)

    def plant(output):
        wide = output.astype(np.float32)
        return (wide * (1 + 0.02 * noise.standard_normal(wide.shape))).astype(np.float16)

    build_npu_side(workspace, ops, values, {conv: plant})
    checked = cli(workspace, "--json", "ac", "-c", "-o", str(tmp_path / "ac"))
    assert checked.returncode == 1, checked.stdout[-3000:]
    data = json.loads(checked.stdout)["data"]
    culprit = data["verdict"]["culprit"]
    assert culprit["op_name"] == conv and "replay" in culprit["evidence"], culprit
    local = data["compare"]["local_error"]
    assert local["culprit"] == conv
    (measured,) = [op for op in local["ops"] if op["op_name"] == conv]
    assert measured["method"] == "replay" and measured["precision"] == "float32" and measured["dtype"] == "float16"
    assert 0.015 < measured["local"] < 0.025 and measured["local"] > 10 * measured["floor"], measured
    assert data["compare"]["failing"] == []  # no tensor fails the cosine gate: only replay sees the 2%
