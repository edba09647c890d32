"""Which op stands out, from hand-made result rows (no TensorFlow): the rules of comparison/attribution.py."""
import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.comparison.attribution import METHOD_ERROR_JUMP, METHOD_NONE, METHOD_REPLAY, attribute
from precision_tool.comparison.result import TensorResult
from precision_tool.formats.tensor_kind import TensorKind
from precision_tool.metrics import ALL
from precision_tool.status import Status

pytestmark = pytest.mark.compat
RED = ALL.index("RelativeEuclideanDistance")
RMSE = ALL.index("RootMeanSquareError")
REPO = Path(__file__).resolve().parents[2]


def _row(index, op, kind, red=None, local=None, floor=None, dtype="float16", k=0, compared=True, rmse=None,
         note="", op_type="Mul"):  # a vector op without a spec figure: the median rule alone decides
    metrics = [None] * len(ALL)
    metrics[0] = 0.999
    metrics[RED] = red
    metrics[RMSE] = rmse
    status = Status.PASS if compared else Status.NOT_COMPARED
    return TensorResult(index, f"{op}:{kind}:{k}", op, kind, k, op_type, status, npu_dtype=dtype,
                        metrics=tuple(metrics), local_error=local, local_floor=floor,
                        local_method="replay float64" if local is not None else "",
                        notes=(f"not replayed: {note}",) if note else ())


def _replayed(ratios):
    return [_row(i, f"op{i}", TensorKind.OUTPUT, red=0.001, local=r * 1e-3, floor=1e-3) for i, r in enumerate(ratios)]


def test_an_op_stands_out_above_its_floor_and_ten_times_the_median():
    attribution = attribute(_replayed([0.25, 0.25, 0.3, 25.0, 0.25, 30.0]))
    assert attribution.median_ratio == 0.275
    assert [op.op_name for op in attribution.standouts] == ["op3", "op5"]
    assert attribution.culprit.op_name == "op3" and attribution.culprit.method == METHOD_REPLAY


def test_with_few_peers_the_floor_alone_decides_and_an_op_is_not_its_own_peer():
    # two ops: the median of the *other* op is no base, so 3x the floor stands out on the floor alone
    assert [op.op_name for op in attribute(_replayed([0.25, 3.0])).standouts] == ["op1"]
    # four ops: op3's peers have median 0.3 -> 10x is 3; 2.5 is above its floor but not an outlier
    assert attribute(_replayed([0.3, 0.25, 0.35, 2.5])).culprit is None


def test_integer_outputs_are_not_ranked():
    rows = [_row(0, "argmax", TensorKind.OUTPUT, red=0.0, local=0.25, floor=0.0, dtype="int32")]
    assert attribute(rows).ops[0].method != METHOD_REPLAY


def test_a_replay_standout_is_the_culprit_before_an_earlier_error_jump():
    rows = [_row(0, "jumps", TensorKind.INPUT, red=0.0015), _row(0, "jumps", TensorKind.OUTPUT, red=0.02),
            _row(1, "adds", TensorKind.OUTPUT, red=0.03, local=0.03, floor=0.001)]
    attribution = attribute(rows)
    assert [op.op_name for op in attribution.standouts] == ["jumps", "adds"]
    assert attribution.culprit.op_name == "adds" and attribution.culprit.method == METHOD_REPLAY


def test_above_the_floor_is_not_enough_when_every_op_is():
    # a kernel family rounding at 1.5x the floor everywhere: nobody is an outlier
    assert attribute(_replayed([1.5, 1.4, 1.6, 1.5])).culprit is None
    # ten times the median but below the floor: rounding, not an error
    assert attribute(_replayed([0.01, 0.01, 0.01, 0.9])).culprit is None


def test_an_op_not_replayed_is_judged_by_its_error_jump():
    rows = [_row(0, "a", TensorKind.INPUT, red=0.0015, k=0),
            _row(0, "a", TensorKind.INPUT, red=0.0, dtype="int32", k=1),
            _row(0, "a", TensorKind.OUTPUT, red=0.02, note="no reference graph")]
    (op,) = attribute(rows).ops
    # 2% out of at most 0.15% in (the int32 axis carries no rounding error, and 0.15% is above the float16
    # floor 4 * 2^-11 / sqrt(3) = 0.113%): a jump of 13.3 >= 10
    assert op.method == METHOD_ERROR_JUMP and op.score == pytest.approx(0.02 / 0.0015) and op.standout
    assert op.floor == pytest.approx(4 * 2.0 ** -11 / math.sqrt(3))
    assert "not replayed: no reference graph" in op.summary


def test_a_step_function_is_not_judged_by_its_error_jump():
    # ReluGrad masks the gradient by the forward activation's sign: 2.48% out of 0.06% in, as in an emulated
    # training step where fp16 activations sit at 0, is what a correct kernel does there
    rows = [dataclasses.replace(row, op_type="ReluGrad") for row in (
        _row(0, "g", TensorKind.INPUT, red=0.0006, k=0), _row(0, "g", TensorKind.INPUT, red=0.0004, k=1),
        _row(0, "g", TensorKind.OUTPUT, red=0.0248))]
    (op,) = attribute(rows).ops
    assert op.method == METHOD_NONE and not op.standout and op.total == pytest.approx(0.0248)
    assert "a ReluGrad output jumps where an input crosses a step" in op.why_not


def test_a_difference_of_close_values_is_judged_on_absolute_errors():
    # shadow - weight of an EMA: inputs of rms 1 with absolute errors 7.7e-6 and 1e-8 (RED 0.00077%), output of
    # rms 0.018 with absolute error 7.7e-6 (RED 0.043%): relative, a jump of 55; absolute, 7.7e-6 / 7.71e-6 = 1
    rows = [dataclasses.replace(row, op_type="Sub") for row in (
        _row(0, "d", TensorKind.INPUT, red=7.7e-6, rmse=7.7e-6, dtype="float32", k=0),
        _row(0, "d", TensorKind.INPUT, red=1e-8, rmse=1e-8, dtype="float32", k=1),
        _row(0, "d", TensorKind.OUTPUT, red=7.7e-6 / 0.018, rmse=7.7e-6, dtype="float32"))]
    (op,) = attribute(rows).ops
    assert op.method == METHOD_ERROR_JUMP and not op.standout and op.score == pytest.approx(7.7e-6 / 7.71e-6)
    # the same op adding 100x its inputs' absolute error of its own stands out
    rows[2] = dataclasses.replace(rows[2], metrics=tuple(7.7e-4 if i == RMSE else 7.7e-4 / 0.018 if i == RED else m
                                                         for i, m in enumerate(rows[2].metrics)))
    (op,) = attribute(rows).ops
    assert op.standout and op.score == pytest.approx(7.7e-4 / 7.71e-6)


def test_an_uncompared_float_input_leaves_the_op_unmeasured():
    rows = [_row(0, "a", TensorKind.INPUT, compared=False), _row(0, "a", TensorKind.OUTPUT, red=0.5)]
    # floor check: a jump needs every float input's error, and input 0 has none
    (op,) = attribute(rows).ops
    assert op.method == METHOD_NONE and op.uncompared_inputs == (0,) and not op.standout
    assert "a jump cannot be told from inherited error" in op.why_not


def test_analysis_without_replay_never_imports_tensorflow(tmp_path):
    code = ("import contextlib, io\nfrom precision_tool.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['-d', {str(REPO / 'sample_dumps' / 'cnn_workspace')!r}, 'ac', '-c', '--no-replay', '-o', "
            f"{str(tmp_path / 'out')!r}])\n"
            "import sys, json; print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    modules = set(__import__("json").loads(out.splitlines()[-1]))
    assert "precision_tool.comparison.attribution" in modules
    assert not {m for m in modules if m == "tensorflow" or m.startswith("tensorflow.")}


def test_a_reduction_is_judged_on_its_terms_absolute_errors():
    """A bias gradient summing 64 terms of rms 1 that partly cancel (reference rms 0.5): the terms' errors (RMSE
    2.3e-4 each, independent) add to sqrt(64) x 2.3e-4 = 1.84e-3, a RED of 0.37% on the small sum -- 16x its inputs'
    relative error, and no error of its own (training steps met this as a false culprit)."""
    from precision_tool.metrics import MeanStd

    def row(kind, shape, ref_rms, error):
        metrics = [None] * len(ALL)
        metrics[0], metrics[RED], metrics[RMSE] = 0.9999, error / ref_rms, error
        metrics[ALL.index("StandardDeviation")] = MeanStd(0.0, ref_rms, 0.0, ref_rms)
        return TensorResult(0, f"g:{kind}:0", "g", kind, 0, "BiasAddGrad", Status.PASS, npu_dtype="float32",
                            shape=shape, metrics=tuple(metrics))

    rows = [row(TensorKind.INPUT, (64, 16), 1.0, 2.3e-4), row(TensorKind.OUTPUT, (16,), 0.5, 8 * 2.3e-4)]
    (op,) = attribute(rows).ops
    assert op.method == METHOD_ERROR_JUMP and op.score == pytest.approx(1.0) and not op.standout
    rows[1] = row(TensorKind.OUTPUT, (16,), 0.5, 0.05)  # an error 27x what its terms bring
    (op,) = attribute(rows).ops
    assert op.standout and op.score == pytest.approx(0.05 / (8 * 2.3e-4))


def test_the_peers_median_without_an_op_is_statistics_median_of_the_others():
    """The O(log n) median of every other op's ratio (attribution of 10,000s of ops in n log n) against the
    definition."""
    import random
    import statistics

    from precision_tool.comparison.attribution import MIN_PEERS, _median_without

    rng = random.Random(37)
    for _ in range(500):
        values = sorted(rng.choice([0.25, 0.3, 1.5, 64.0, rng.random()]) for _ in range(rng.randint(0, 9)))
        own = rng.choice(values) if values and rng.random() < 0.8 else None
        others = list(values)
        if own is not None:
            others.remove(own)
        expected = statistics.median(others) if len(others) >= MIN_PEERS else None
        assert _median_without(values, own) == expected, (values, own)
