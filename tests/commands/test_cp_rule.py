"""``cp`` judges a pair with ``compare``'s own rule (issue 13: cp FAILed clean fp16 tensors compare passed)."""
import os

import numpy as np
import pytest

from precision_tool.commands import build_registry
from precision_tool.commands.command_registry import Context
from precision_tool.comparison.pipeline import CompareRequest, run_comparison
from precision_tool.formats.dump_names import build_dump_name
from precision_tool.formats.dump_writer import write_dump
from precision_tool.metrics import compare_tensors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CNN = os.path.join(REPO, "sample_dumps", "cnn_workspace")


def _cp(data_dir, *argv):
    return build_registry().dispatch(["cp", *argv], Context(data_dir=data_dir))


def _fp16_two_ulps_off():
    """A float32 reference in [64, 80) and an fp16 result 2 ulps above its rounding.

    By hand: fp16's ulp in [64, 128) is 2**-4 = 0.0625, so every |x - y| lies in [1.5, 2.5] ulp =
    [0.094, 0.156], above fp16's tolerance 1e-3 + 1e-3 * |y| <= 0.081: the allclose ratio is 0 (the old cp
    rule failed it). Each relative error is at most 0.156 / 64 = 2.4e-3, and 1 - cos <= sin^2 <= (2.4e-3)^2 =
    6e-6: cosine > 0.99999, so compare's cosine gate passes it.
    """
    y = (64.0 + 16.0 * np.random.default_rng(13).random(1024)).astype(np.float32)
    x = y.astype(np.float16)
    inf = np.float16(np.inf)
    for _ in range(2):
        x = np.nextafter(x, inf)
    return x, y


@pytest.mark.compat
def test_cp_gives_compare_s_status_on_a_clean_fp16_tensor(tmp_path):
    x, y = _fp16_two_ulps_off()
    npu, ref = tmp_path / "npu", tmp_path / "ref"
    os.makedirs(npu)
    os.makedirs(ref)
    dump = os.path.join(npu, build_dump_name("Mul", "clean/Mul", 1, 2, 1700000000000000).file_name)
    write_dump(dump, "clean/Mul", outputs=[x])
    np.save(ref / "clean_Mul.0.1700000000000000.npy", y)

    assert not compare_tensors(x, y)  # the allclose gate cp used to apply on its own fails it
    (row,) = run_comparison(CompareRequest(str(npu), str(ref), workers=1)).compared
    assert (row.status, row.allclose_ratio) == ("PASS", 0.0)

    report = _cp(str(tmp_path), dump, str(ref / "clean_Mul.0.1700000000000000.npy"))
    assert report.data["status"] == row.status and report.exit_code == 0 and report.status == "passed"
    assert report.data["cosine"] > 0.99999 and report.data["allclose_ratio"] == 0.0
    assert report.data["reason"] == row.reason


@pytest.mark.compat
def test_cp_agrees_with_compare_on_the_sample_s_fp16_conv(tmp_path):
    # conv1's fp16 output is within 94% of fp16's allclose tolerance: compare passes it, so must cp
    result = run_comparison(CompareRequest(os.path.join(CNN, "npu", "debug_0", "dump"), os.path.join(CNN, "tf", "dump"),
                                           os.path.join(CNN, "npu", "debug_0", "graph"), workers=1))
    (row,) = [r for r in result.compared if r.tensor_id == "small_cnn_1/conv1_1/convolution:output:0"]
    assert row.status == "PASS" and row.allclose_ratio < 0.999
    report = _cp(CNN, "small_cnn_1/conv1_1/convolution:output:0", row.reference.replace(":output:", ":"))
    assert (report.data["status"], report.exit_code) == ("PASS", 0)
    assert report.data["allclose_ratio"] == pytest.approx(row.allclose_ratio)
