"""Streamed tensor statistics: values, chunk boundaries, device padding left out, unreadable payloads."""
import numpy as np
import pytest

from checks_builders import write_op_dump
from precision_tool.checks.tensor_summary import summarize_dump, summarize_entry
from precision_tool.metrics import array_stats as array_stats_module
from precision_tool.metrics.array_stats import array_stats
from precision_tool.formats.dump_file import read_dump_header
from precision_tool.formats.dump_writer import TensorSpec
from precision_tool.formats.layouts import to_device


def test_stats_skip_non_finite_and_count_fp16_saturation():
    values = np.array([[2.0, np.inf], [-65504.0, np.nan]], dtype=np.float16)
    stats = array_stats(values)
    assert (stats.max, stats.min, stats.inf, stats.nan, stats.saturated) == (2.0, -65504.0, 1, 1, 1)
    assert stats.mean == pytest.approx((2.0 - 65504.0) / 2)
    assert stats.first_non_finite_flat == 1


def test_chunked_reduction_equals_whole_array_reduction(monkeypatch):
    monkeypatch.setattr(array_stats_module, "CHUNK_ELEMENTS", 7)
    rng = np.random.default_rng(0)
    values = rng.standard_normal(100).astype(np.float32) * 10
    values[53] = -np.inf
    stats = array_stats(values)
    finite = values[np.isfinite(values)]
    assert stats.max == pytest.approx(finite.max()) and stats.min == pytest.approx(finite.min())
    assert stats.mean == pytest.approx(finite.mean(dtype=np.float64), rel=1e-12)
    assert (stats.inf, stats.first_non_finite_flat) == (1, 53)


def test_all_non_finite_and_integer_and_empty_tensors():
    assert array_stats(np.array([np.nan, np.nan])).max is None
    ints = array_stats(np.array([3, -1, 7], dtype=np.int32))
    assert (ints.max, ints.min, ints.mean, ints.inf) == (7.0, -1.0, 3.0, 0)
    assert array_stats(np.zeros((0, 3), dtype=np.float16)).size == 0


def test_device_padding_does_not_count_in_origin_layout(tmp_path):
    origin = np.full((1, 2, 2, 3), 4.0, dtype=np.float16)  # C=3 is padded to 16 in NC1HWC0
    stored = to_device(origin, "NHWC", "NC1HWC0")
    path = write_op_dump(tmp_path, "Relu", "a/relu", 1, 1, 1700000000000000,
                         outputs=[TensorSpec(stored, format="NC1HWC0", original_shape=origin.shape)])
    dump = read_dump_header(path)
    (summary,) = summarize_dump(dump)
    assert (summary.layout, summary.shape, summary.min, summary.mean) == ("NHWC", (1, 2, 2, 3), 4.0, 4.0)
    kept = summarize_entry(dump, dump.outputs[0], origin_layout=False)
    assert kept.min == 0.0 and kept.shape == stored.shape  # padding zeros, had we not converted


def test_first_non_finite_index_is_in_the_origin_shape(tmp_path):
    values = np.ones((2, 3), dtype=np.float16)
    values[1, 2] = np.nan
    path = write_op_dump(tmp_path, "Div", "d", 1, 1, 1700000000000000, outputs=[values])
    (summary,) = summarize_dump(read_dump_header(path))
    assert summary.first_non_finite == (1, 2) and summary.nan == 1


def test_unreadable_payload_is_a_note_not_an_exception(tmp_path):
    path = write_op_dump(tmp_path, "Add", "x", 1, 1, 1700000000000000, outputs=[np.ones(8, dtype=np.float32)])
    dump = read_dump_header(path)
    with open(path, "ab") as handle:
        handle.write(b"\0")  # the file changed since its header was read
    summary = summarize_entry(dump, dump.outputs[0])
    assert not summary.readable and "changed on disk" in summary.note and summary.max is None
