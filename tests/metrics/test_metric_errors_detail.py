"""Worst elements and error histograms."""
from __future__ import annotations

import math

import numpy as np
import pytest

from precision_tool.errors import MetricInputError
from precision_tool.metrics import errors_detail
from precision_tool.metrics.errors_detail import (DEFAULT_REL_EDGES, element_errors, error_histogram,
                                                  worst_elements)


def test_worst_elements_are_sorted_with_positions():
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    npu = ref.copy()
    npu[2, 1] += 3.0
    npu[0, 3] -= 1.0
    npu[1, 1] += 1.0
    worst = worst_elements(npu, ref, 3)
    assert [w.index for w in worst] == [(2, 1), (0, 3), (1, 1)]  # tie at 1.0: lower index first
    assert (worst[0].npu, worst[0].reference, worst[0].abs_error, worst[0].rel_error) == (12.0, 9.0, 3.0, 3.0 / 9.0)


def test_worst_by_relative_error_ranks_an_error_over_a_zero_reference_first():
    # the one rule (metrics.rounding.relative_error): over a zero reference, no error is 0 and any error inf
    worst = worst_elements([1.0, 2.0, 3.0, 0.0], [0.0, 1.0, 2.0, 0.0], 5, kind="rel")
    assert [w.flat_index for w in worst] == [0, 1, 2, 3]
    assert [w.rel_error for w in worst] == [math.inf, 1.0, 0.5, 0.0]


def test_non_finite_disagreements_rank_first():
    worst = worst_elements([1.0, np.nan, 5.0, np.inf], [1.0, 2.0, 3.0, np.inf], 4)
    assert [(w.flat_index, w.abs_error) for w in worst] == [(1, np.inf), (2, 2.0), (0, 0.0), (3, 0.0)]


def test_count_larger_than_the_tensor_and_zero():
    assert len(worst_elements([1.0, 2.0], [1.0, 2.0], 10)) == 2
    assert worst_elements([1.0, 2.0], [1.0, 2.0], 0) == ()


def test_large_tensor_matches_a_full_sort():
    rng = np.random.default_rng(5)
    ref = rng.standard_normal(100_000)
    npu = ref + rng.standard_normal(100_000) * 1e-3
    worst = worst_elements(npu, ref, 20)
    expected = np.argsort(-np.abs(npu - ref), kind="stable")[:20]
    assert [w.flat_index for w in worst] == expected.tolist()


def test_element_errors():
    errors = element_errors([1.0, np.nan, 3.0, 5.0, -np.inf, 0.0], [1.5, np.nan, np.inf, 0.0, np.inf, 0.0], "rel")
    np.testing.assert_array_equal(errors, [1 / 3, 0.0, np.inf, np.inf, np.inf, 0.0])
    with pytest.raises(MetricInputError, match="Unknown error kind 'max'"):
        element_errors([1.0], [1.0], "max")


def test_histogram():
    hist = error_histogram([1.0, 2.0, 3.0, 1.0, 7.0], [1.0, 2.2, 0.0, 1.0005, 1.0])
    assert hist.edges == DEFAULT_REL_EDGES
    assert hist.counts == (1, 0, 0, 1, 0, 1, 0, 2)  # 3 over a zero reference: inf, in the last bin
    assert sum(hist.counts) == 5


def test_histogram_absolute_with_edges():
    hist = error_histogram([0.0, 0.5, 2.0], [0.0, 0.0, 0.0], kind="abs", edges=[0, 1, 10])
    assert hist.counts == (2, 1)


@pytest.mark.parametrize("edges", [[1.0], [0.0, 0.0, 1.0], [1.0, 0.5]])
def test_histogram_edges_must_increase(edges):
    with pytest.raises(MetricInputError, match="Histogram edges must increase"):
        error_histogram([1.0], [1.0], edges=edges)


def test_size_mismatch():
    with pytest.raises(MetricInputError, match="Tensors differ in size: NPU 2, reference 3."):
        worst_elements([1.0, 2.0], [1.0, 2.0, 3.0])


def _worst_by_hand(x, y, count, kind):
    """The definition, element by element: every ranked (defined) error, largest first, ties by lower index."""
    errors = element_errors(x, y, kind).reshape(-1)
    ranked = [i for i in range(errors.size) if not np.isnan(errors[i])]
    return sorted(ranked, key=lambda i: (-errors[i], i))[:count]


@pytest.mark.parametrize("seed", range(40))
def test_worst_elements_streamed_in_chunks_are_the_definitions_worst_ties_included(seed, monkeypatch):
    """Small integers (many ties), NaN and inf, chunks of 1 to 500 elements: the chunked search keeps exactly the
    elements the definition ranks first (a fuzz run found ``cp`` of a 100M-element pair needing 3.7 GB: the whole
    pair was copied to float64 three times)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    x, y = rng.integers(-3, 4, n).astype(np.float16), rng.integers(-3, 4, n).astype(np.float32)
    x[rng.integers(0, n, 3)], y[rng.integers(0, n, 3)] = np.nan, np.inf
    monkeypatch.setattr(errors_detail, "CHUNK", int(rng.integers(1, 500)))
    for kind in ("abs", "rel"):
        for count in (0, 1, 4, 25):
            assert [e.flat_index for e in worst_elements(x, y, count, kind)] == _worst_by_hand(x, y, count, kind)
