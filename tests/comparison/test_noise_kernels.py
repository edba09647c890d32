"""The noise floor against the way the NPU really sums (docs/local-error.md, "Against the real kernels").

Ascend's ReduceSum adds float16 pairwise as a binary tree within each 256-byte repeat and, on the training series,
across repeats (../shared/docs/ascend-kernel-numerics.md). numpy's float16 arithmetic, rounding after every add,
is the independent source here: the rule's floor ``F`` must cover the tree's error on a sum that cancels to
noise, and the docs' warning that a sequential combination of repeats outgrows it must hold too.
"""
import math

import numpy as np

from precision_tool.metrics.rounding import FLOOR_FACTOR, rms_rounding


def _tree(values: np.ndarray) -> float:
    """Pairwise float16 sum, every partial sum rounded to float16."""
    level = values.astype(np.float16)
    while level.size > 1:
        if level.size % 2:
            level = np.concatenate([level, np.zeros(1, np.float16)])
        level = (level[0::2] + level[1::2]).astype(np.float16)
    return float(level[0])


def _sequential_repeats(values: np.ndarray) -> float:
    """Trees of 128 float16 values, their results added one after another in float16."""
    total = np.float16(0)
    for start in range(0, values.size, 128):
        total = np.float16(total + np.float16(_tree(values[start:start + 128])))
    return float(total)


def _error_over_floor(summer, terms: int, draws: int = 60) -> float:
    """rms over seeded draws of (float16 sum - exact sum) / F, ``F = FLOOR_FACTOR rms_rounding(float16) m``."""
    rng = np.random.default_rng(2022)
    ratios = []
    for _ in range(draws):
        values = rng.standard_normal(terms) * 0.003
        exact = float(np.sum(values.astype(np.float16).astype(np.float64)))
        magnitude = math.sqrt(terms) * float(np.sqrt(np.mean(values.astype(np.float64) ** 2)))
        floor = FLOOR_FACTOR * rms_rounding("float16") * magnitude
        ratios.append((summer(values) - exact) / floor)
    return float(np.sqrt(np.mean(np.square(ratios))))


def test_the_npus_tree_sum_of_float16_stays_within_the_floor_up_to_2_to_the_15_terms():
    for terms in (256, 4096, 1 << 15):
        assert _error_over_floor(_tree, terms) < 1.0, terms


def test_a_sequential_combination_of_repeats_outgrows_the_floor_as_the_docs_warn():
    assert _error_over_floor(_sequential_repeats, 1 << 15) > 1.0
