"""Judging ops against Ascend's own standard, and naming systemic faults (issue 38), from hand-made rows.

Figures are derived by hand from the standard's definitions (metrics/spec.py): MERE = mean |a - g| / (|g| + 1e-7)
over |g| >= 2^-11 (float16), threshold 2^-10; a Cube op with a float16 output may add 2 roundings of it.
"""
import math

import numpy as np
import pytest

from precision_tool.comparison.attribution import attribute
from precision_tool.comparison.judgment import judge
from precision_tool.comparison.result import RunFacts, TensorResult
from precision_tool.comparison.systemic import KIND_PASS, KIND_TYPE, systemic_faults
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics import ALL
from precision_tool.metrics.spec import mean_relative_error
from precision_tool.status import Status

pytestmark = pytest.mark.compat
RED = ALL.index("RelativeEuclideanDistance")
ROUNDING = 2.0 ** -11 / math.sqrt(3)  # float16's rms rounding: the floor is 4 of them


def _output(index, op, op_type, ratio, mere=None, dtype="float16"):
    """An output replayed at ``ratio`` floors (floor = 4 roundings), with MERE ``mere``."""
    floor = 4 * ROUNDING if dtype == "float16" else 1e-5
    metrics = [None] * len(ALL)
    metrics[0], metrics[RED] = 0.9999, ratio * floor
    return TensorResult(index, f"{op}:output:0", op, TensorKind.OUTPUT, 0, op_type, Status.PASS, npu_dtype=dtype,
                        metrics=tuple(metrics), local_error=ratio * floor, local_floor=floor,
                        local_method="replay float64", local_spec_error=mere)


def test_mean_relative_error_follows_the_standard_and_leaves_out_small_values():
    golden = np.array([1.0, -2.0, 2.0 ** -12, 0.5], dtype=np.float32)
    actual = np.array([1.002, -2.0, 0.0, 0.5005], dtype=np.float32)
    # 2^-12 is below float16's small-value threshold 2^-11: out. By hand: (0.002/1 + 0 + 0.0005/0.5) / 3 = 0.001
    assert mean_relative_error(actual, golden, "float16") == pytest.approx(0.001, rel=1e-4)
    assert mean_relative_error(actual[2:3], golden[2:3], "float16") is None  # nothing left: not applicable
    assert mean_relative_error(actual, golden, "int32") is None


def test_an_op_beyond_the_standard_stands_out_even_among_many_wrong_ops():
    # eleven Mul ops each 3 floors with MERE 2e-3 (> 2^-10 = 9.77e-4): the median rule alone sees no outlier
    rows = [_output(k, f"mul{k}", "Mul", 3.0, mere=2e-3) for k in range(11)]
    attribution = attribute(rows)
    assert all(not op.standout for op in attribute([_output(k, f"mul{k}", "Mul", 3.0) for k in range(11)]).ops)
    assert [op.op_name for op in attribution.standouts] == [f"mul{k}" for k in range(11)]
    assert attribution.culprit.op_name == "mul0"
    # within the standard (MERE 5e-4 < 2^-10), 3 floors among equals is not blamed
    assert not attribute([_output(k, f"mul{k}", "Mul", 3.0, mere=5e-4) for k in range(11)]).standouts


def test_the_standard_alone_does_not_blame_what_rounding_explains():
    rows = [_output(0, "exp", "Exp", 0.9, mere=3e-3)] + [_output(k, f"mul{k}", "Mul", 0.25) for k in range(1, 5)]
    assert not attribute(rows).standouts  # within its floor: the MERE of small elements is no kernel fault


def test_a_cube_op_is_held_to_four_roundings_of_its_output_whatever_the_others_do():
    # the floor is 4 roundings: a Cube op rounds before a fused activation and in its 3 native float16 steps
    peers = [_output(k, f"conv{k}", "Conv2D", 1.5) for k in range(1, 6)]  # many wrong: median 1.5
    assert [op.op_name for op in attribute([_output(0, "conv", "Conv2D", 1.2)] + peers).standouts] == \
        ["conv"] + [f"conv{k}" for k in range(1, 6)]
    assert not attribute([_output(0, "conv", "Conv2D", 0.95)]).standouts
    # a vector op at 1.2 floors among those peers: neither beyond the median rule nor, without a MERE, the standard
    assert "mul" not in {op.op_name for op in attribute([_output(0, "mul", "Mul", 1.2)] + peers).standouts}


def test_a_float32_cube_op_within_hf32_is_not_blamed_by_the_median():
    # A2 convolutions run in HF32: 2 HF32 roundings = 2 * 2^-12 / sqrt(3) = 2.82e-4 relative
    hf32 = 2 * 2.0 ** -12 / math.sqrt(3)
    peers = [_output(k, f"add{k}", "Add", 0.01, dtype="float32") for k in range(1, 6)]
    within = _output(0, "conv", "Conv2D", 0.9 * hf32 / 1e-5, dtype="float32")  # 25 floors, 250x the median
    beyond = _output(0, "conv", "Conv2D", 1.1 * hf32 / 1e-5, dtype="float32")
    assert not attribute([within] + peers).standouts
    assert [op.op_name for op in attribute([beyond] + peers).standouts] == ["conv"]


def test_systemic_faults_name_the_pass_and_the_type_most_of_whose_ops_are_beyond():
    rows = ([_output(k, f"conv{k}", "Conv2D", 3.0) for k in range(4)]
            + [_output(4 + k, f"mm{k}", "MatMulV2", 3.0) for k in range(2)]
            + [_output(6 + k, f"mm_ok{k}", "MatMulV2", 0.25) for k in range(3)]
            + [_output(9, "add", "Add", 0.25)])
    passes = {"conv0": ("ConvBatchnormFusionPass",), "conv1": ("ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass"),
              "conv2": ("ConvBatchnormFusionPass",), "conv3": ("ConvBiasaddFusionPass",)}
    faults = systemic_faults(attribute(rows), passes)
    # ConvBatchnormFusionPass: 3 of 3. TbeConvElemwise (conv1 alone) and ConvBiasadd (conv3 alone): one op is no
    # system. Conv2D: 4 of 4, not all held by the pass -> named. MatMulV2: 2 of 5, not most -> not named.
    assert [(f.kind, f.name, f.ops, f.measured) for f in faults] == [
        (KIND_PASS, "ConvBatchnormFusionPass", ("conv0", "conv1", "conv2"), 3),
        (KIND_TYPE, "Conv2D", ("conv0", "conv1", "conv2", "conv3"), 4)]


def test_the_judgment_carries_the_systemic_fault_and_its_facts_survive_the_result_file():
    rows = [_output(k, f"conv{k}", "Conv2D", 3.0) for k in range(3)] + [_output(3, "relu", "Relu", 0.0)]
    facts = RunFacts("npu_vs_tf", tuple(r.op_name for r in rows), "graph",
                     passes={f"conv{k}": ("ConvBatchnormFusionPass",) for k in range(3)})
    assert RunFacts.from_dict(facts.to_dict()).passes == facts.passes
    judgment = judge(rows, facts)
    assert judgment.culprit.op_name == "conv0"
    # the pass and the type hold the same ops: both named, nothing tells a wrong pass from a wrong kernel
    assert [(f.name, len(f.ops)) for f in judgment.systemic] == [("ConvBatchnormFusionPass", 3), ("Conv2D", 3)]
    assert judgment.to_dict()["systemic"][0]["ops"] == ["conv0", "conv1", "conv2"]
