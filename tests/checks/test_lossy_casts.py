"""Casts that lose information: float -> int, fp32 -> fp16 beyond range, integer narrowing."""
import numpy as np
import pytest

from checks_builders import CNN, write_op_dump
from precision_tool.checks.casts import check_casts, count_losses
from precision_tool.formats.dump_names import scan_dump_folder

TS = 1700000000000000


@pytest.mark.parametrize("values, source, target, expected", [
    ([1.0, 70000.0, -1e5, 2.0], "float32", "float16",
     ["2 of 4 values beyond +/-65504 (become inf or saturate)"]),
    ([1e-9, 0.0, 1.0], "float32", "float16",
     ["1 of 3 non-zero values below 2**-24 in magnitude (flushed to zero)"]),
    ([1.5, 3e9, -2.0], "float32", "int32",
     ["1 of 3 values beyond +/-2.14748e+09 (saturate)", "1 of 3 values have a fractional part (truncated)"]),
    ([3e5, 5.0], "int64", "int16", ["1 of 2 values beyond [-32768, 32767] (saturate)"]),
    ([70000, 1], "int32", "float16", ["1 of 2 values beyond +/-65504 (become inf or saturate)"]),
    ([1.5, 60000.0], "float16", "float32", []),  # widening: nothing to lose
    ([1.0, 2.0, -3.0], "float32", "int32", []),
])
def test_losses(values, source, target, expected):
    array = np.array(values, dtype=source)
    assert count_losses(array, np.dtype(source), np.dtype(target)) == expected


def test_only_narrowing_casts_are_read_and_lossy_ones_reported(tmp_path):
    write_op_dump(tmp_path, "Cast", "to_half", 1, 1, TS + 1, inputs=[np.array([1.0, 1e5], np.float32)],
                  outputs=[np.array([1.0, np.inf], np.float16)])
    write_op_dump(tmp_path, "Cast", "to_float", 2, 1, TS + 2, inputs=[np.array([1.0], np.float16)],
                  outputs=[np.array([1.0], np.float32)])
    write_op_dump(tmp_path, "CastD", "to_int", 3, 1, TS + 3, inputs=[np.array([0.5, 2.0], np.float32)],
                  outputs=[np.array([0, 2], np.int32)])
    write_op_dump(tmp_path, "Add", "not_a_cast", 4, 1, TS + 4, inputs=[np.array([1e5], np.float32)],
                  outputs=[np.array([np.inf], np.float16)])
    check = check_casts(scan_dump_folder(tmp_path))
    assert check.casts_checked == 2
    assert [(c.op_name, c.from_dtype, c.to_dtype, c.losses) for c in check.lossy] == [
        ("to_half", "float32", "float16", ("1 of 2 values beyond +/-65504 (become inf or saturate)",)),
        ("to_int", "float32", "int32", ("1 of 2 values have a fractional part (truncated)",))]


def test_sample_casts_lose_nothing():
    check = check_casts(scan_dump_folder(CNN / "npu" / "debug_0" / "dump"))
    # allow_fp32_to_fp16: the input, and the float32 results of pool1, the residual ReLU and the mean, each cast
    # down for the Cube op after it (the four casts up are not checked: widening is exact)
    assert check.casts_checked == 4 and check.lossy == ()
