"""The modelled Ascend kernels (issue 38), each against an independent computation: numpy in float16 step by
step, the fact's formula (docs/emulated-numerics.md), scipy's erf, a numpy convolution -- never the emulator's own
output. Workspaces: scripts/hardware_cases.py (one subprocess); each op reads a model input directly, so its NPU
input dump is what its kernel read."""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest
from emulate_helpers import run_case_output

from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.npy_dir import reference_op_name
from precision_tool.formats.origin_tensor import read_origin_tensor

pytestmark = pytest.mark.tf
SCRIPT = Path(__file__).resolve().parent / "scripts" / "hardware_cases.py"
H = np.float16


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    import json

    out = run_case_output(tmp_path_factory, SCRIPT)
    return out, json.loads((out / "summary.json").read_text())


def _dump(out: Path, case: str, op: str):
    folder = next((out / case / "npu" / "debug_0" / "dump").glob("*/0/*/1/0"))
    found = scan_dump_folder(folder).find(op)
    assert found is not None, f"no dump of {op} in {case}"
    dump = read_dump_header(found.latest.path)
    return ([read_origin_tensor(dump, e).array for e in dump.inputs],
            [read_origin_tensor(dump, e).array for e in dump.outputs], dump)


def _reference(out: Path, case: str, op: str) -> np.ndarray:
    (path,) = glob.glob(str(out / case / "tf" / "dump" / f"{reference_op_name(op)}.0.*.npy"))
    return np.load(path)


def _ulps(a, b) -> np.ndarray:
    """|a - b| in float16 ulps of b (the spacing at b; subnormals' at the smallest normal)."""
    b16 = np.asarray(b, dtype=H)
    return np.abs(np.asarray(a, np.float64) - b16.astype(np.float64)) / np.spacing(np.abs(b16)).astype(np.float64)


def _sigmoid_chain(x16: np.ndarray, clamp) -> np.ndarray:
    """sigmoid.py on float16: clamp, -x, exp, +1, reciprocal -- every step rounded to float16 (to nearest)."""
    x = x16.astype(np.float64)
    if clamp is not None:
        x = np.maximum(x, np.float64(H(clamp)))
    with np.errstate(over="ignore", divide="ignore"):
        e = np.exp((-x).astype(H).astype(np.float64)).astype(H).astype(np.float64)
        return (1.0 / (1.0 + e).astype(H).astype(np.float64)).astype(H)


def test_the_manifest_records_target_mode_and_exact_ops(cases):
    _, summary = cases
    assert summary["vector_910_default"]["numerics"] == "ascend910"
    assert summary["vector_910_default"]["precision_mode"] == "allow_fp32_to_fp16"  # the 910 training default
    assert summary["conv_910b"]["precision_mode"] == "must_keep_origin_dtype"  # A2's
    assert summary["conv_910_exact"]["exact"] == ["conv"]
    assert all(case["exit"] == 0 for case in summary.values())


def test_910_sigmoid_is_float16_step_by_step_with_its_input_clamped(cases):
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910_fp16", "sig")
    assert x.dtype == H and y.dtype == H
    chain = _sigmoid_chain(x, -11.089)
    # two faithful steps (exp, reciprocal) and a rounded one: within 3 ulps of the chain rounded to nearest
    assert _ulps(y, chain).max() <= 3
    assert np.mean(y != chain) > 0.05  # the steps are not all correctly rounded: the native error shows
    # below the clamp the result is sigmoid(-11.0859) = 1.53e-5, not the true 3.1e-7 (x = -15)
    assert x[0, 0] == -15 and abs(float(y[0, 0]) - 1 / (1 + np.exp(11.0859375))) < 2e-7
    assert float(y[0, 0]) > 40 * (1 / (1 + np.exp(15.0)))


def test_a2_sigmoid_has_no_clamp_and_ideal_rounds_once(cases):
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910b_fp16", "sig")
    assert float(y[0, 0]) == 0.0  # exp(15) overflows float16 in the chain: 1 / inf
    assert _ulps(y, _sigmoid_chain(x, None)).max() <= 3
    (x,), (y,), _ = _dump(out, "vector_ideal_fp16", "sig")
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert np.array_equal(y, exact.astype(H))  # one rounding of the exact value


def test_910_native_exp_is_within_one_ulp_and_not_always_rounded_to_nearest(cases):
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910_fp16", "exp")
    exact = np.exp(x.astype(np.float64))
    finite = exact < 65504
    assert np.all(np.abs(y[finite] - exact[finite]) <= np.spacing(exact[finite].astype(H)).astype(np.float64))
    assert np.mean(y[finite] != exact[finite].astype(H)) > 0.05


def test_erf_is_the_three_term_polynomial_on_hardware_and_libm_on_ideal(cases):
    import math

    erf = np.vectorize(math.erf)  # the C library's erf, not TensorFlow's
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910_default", "erf")  # allow_fp32_to_fp16: Erf stays float32
    assert y.dtype == np.float32
    v = x.astype(np.float64)
    t = 1 / (1 + 0.47047 * np.abs(v))
    polynomial = np.sign(v) * (1 - (0.3480242 * t - 0.0958798 * t ** 2 + 0.7478556 * t ** 3) * np.exp(-v * v))
    assert np.abs(y - polynomial).max() < 2e-6
    deviation = np.abs(y - erf(v))
    assert 1e-6 < deviation.max() <= 2.6e-5  # Abramowitz & Stegun 7.1.25: |error| <= 2.5e-5
    (x,), (y,), _ = _dump(out, "vector_ideal_fp16", "erf")
    assert np.abs(y.astype(np.float64) - erf(x.astype(np.float64)).astype(H)).max() <= \
        np.spacing(np.float16(1)) / 2  # one rounding of the true erf


def test_softmax_subtracts_the_row_maximum_in_float16(cases):
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910_fp16", "soft")
    v = x.astype(np.float64)
    shifted = (v - v.max(axis=-1, keepdims=True)).astype(H).astype(np.float64)  # exact difference, then rounded
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)
    assert _ulps(y, expected).max() <= 1
    exact = np.exp(v - v.max(axis=-1, keepdims=True))
    exact /= exact.sum(axis=-1, keepdims=True)
    assert _ulps(y, exact).max() > 2  # x - max rounded where it leaves x's binade: probabilities move


def test_910_saturates_where_a2_and_ideal_overflow_and_both_report_it(cases):
    out, summary = cases
    (x, _), (big,), _ = _dump(out, "vector_910_fp16", "big")
    assert float(x[1, 0]) * 7000 > 65504 and float(big[1, 0]) == 65504.0 and np.isfinite(big).all()
    (_,), (root,), _ = _dump(out, "vector_910_fp16", "root")  # sqrt reads x itself
    assert float(root[0, 0]) == 0.0 and not np.isnan(root).any()  # sqrt(-15): NaN -> 0
    for case in ("vector_910b_fp16", "vector_ideal_fp16"):
        (_, _), (big,), _ = _dump(out, case, "big")
        assert np.isinf(big[1, 0])
        (_,), (root,), _ = _dump(out, case, "root")
        assert np.isnan(root[0, 0])
    for case in ("vector_910_fp16", "vector_910b_fp16", "vector_ideal_fp16"):  # the Opdebug run sees them all
        assert {op["npu_op"] for op in summary[case]["overflow_ops"]} == {"big", "root"}


def _hf32(values: np.ndarray) -> np.ndarray:
    """Round to 12 significant bits (1 implicit + 11 explicit), to nearest even: by frexp, not by bits."""
    mantissa, exponent = np.frexp(values.astype(np.float64))
    return np.ldexp(np.round(mantissa * 2 ** 12) / 2 ** 12, exponent)


def _conv_same(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 SAME stride-1 NHWC convolution in float64."""
    n, height, width, _ = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, height, width, w.shape[-1]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,co->nhwo", padded[:, i:i + height, j:j + width, :], w[i, j])
    return out


def test_a2_float32_convolution_reads_hf32_inputs(cases):
    out, _ = cases
    (x, w), (y,), _ = _dump(out, "conv_910b", "conv")
    assert x.dtype == w.dtype == y.dtype == np.float32  # must_keep_origin_dtype: float32 throughout
    expected = _conv_same(_hf32(x), _hf32(w))
    scale = np.sqrt(np.mean(expected ** 2))
    assert np.abs(y - expected).max() < 1e-5 * scale  # float32 accumulation of HF32 products
    float32 = _conv_same(x.astype(np.float64), w.astype(np.float64))
    assert np.sqrt(np.mean((y - float32) ** 2)) > 3e-5 * scale  # and not the float32 convolution


def test_precision_modes_give_the_documented_dtypes(cases):
    out, _ = cases
    (x,), (y,), _ = _dump(out, "vector_910_default", "sig")
    assert x.dtype == y.dtype == np.float32  # allow_fp32_to_fp16: a vector op keeps float32
    (x, w), (y,), _ = _dump(out, "conv_910_mix", "conv")
    assert x.dtype == w.dtype == y.dtype == H
    (_,), (relu,), _ = _dump(out, "conv_910_mix", "conv_relu")
    assert relu.dtype == H  # gray: follows its float16 input
    (x, w), (y,), _ = _dump(out, "conv_910_fp32out", "conv")
    assert x.dtype == w.dtype == H and y.dtype == np.float32  # Cube: float16 in, float32 out


def test_an_exact_op_computes_as_the_reference_does(cases):
    out, _ = cases
    (x, w), (y,), _ = _dump(out, "conv_910_exact", "conv")
    assert x.dtype == y.dtype == np.float32
    assert np.array_equal(y, _reference(out, "conv_910_exact", "conv"))  # the reference's kernel, bit for bit
    (_, _), (fp16,), _ = _dump(out, "conv_910_mix", "conv")
    assert not np.array_equal(fp16.astype(np.float32), y)
