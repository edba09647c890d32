"""Our metrics against msaccucmp's own code, case for case (``make check-peer``).

``peer_harness.py`` runs msaccucmp's ``AlgorithmManager.compare`` -- the code behind its ``compare`` and
``file_compare`` commands, all ten algorithms -- over every case in one subprocess of the peer's Python, once as
shipped (its 6-decimal CSV cells) and once at full precision. One ``file_compare`` run per chosen case checks
that the harness writes what the real command writes.

* Every metric that both sides compute as a number agrees to 1e-6 (relative above 1), unless the case is in
  ``metric_cases.PEER_WRONG``; StandardDeviation cells are equal character for character.
* For every case in ``PEER_WRONG`` the peer indeed says something else, and we give the verdict listed there.
"""
from __future__ import annotations

import glob
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metric_cases import PEER_WRONG, peer_wrong_cases, shared_cases
from precision_tool.metrics import ALL, compare_tensors, compute_metrics, format_mean_std

pytestmark = pytest.mark.peer

HARNESS = Path(__file__).with_name("peer_harness.py")
TOLERANCE = 1e-6
SD = "StandardDeviation"


def _number(text):
    """The peer's cell as a float, or None for ``NaN``/``nan``/``inf`` (not a usable number)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _agrees(ours, theirs, name="", n=1) -> bool:
    """Within 1e-6, relative above magnitude 1. AccumulatedRelativeError is a sum of N per-element errors,
    each of which msaccucmp rounds in float32 (``x / y - 1`` near 1 keeps ~7 digits): it must agree per
    element, i.e. as the mean it is N times."""
    if name == "AccumulatedRelativeError" and n > 1:
        ours, theirs = ours / n, theirs / n
    return abs(ours - theirs) <= TOLERANCE * max(1.0, abs(theirs))


@pytest.fixture(scope="module")
def peer_results(peer, tmp_path_factory):
    """``{case: {"npu", "ref", "formatted": {metric: text}, "full": {metric: text}, "errors": [...]}}``."""
    cases = shared_cases() + peer_wrong_cases()
    work = tmp_path_factory.mktemp("peer_metrics")
    arrays = {}
    for i, (_, npu, ref) in enumerate(cases):
        arrays[f"m{i}"], arrays[f"g{i}"] = npu, ref
    np.savez(work / "cases.npz", **arrays)
    python = Path(os.environ.get("PEER_VENV", "/tmp/peer-venv")) / "bin" / "python"
    subprocess.run([str(python), str(HARNESS), str(work / "cases.npz"), str(work / "out.json")], check=True,
                   capture_output=True, text=True, timeout=600)
    data = json.loads((work / "out.json").read_text())
    assert data["names"] == list(ALL), "the peer's metric order is the CSV order we mirror"
    results = {}
    for (name, npu, ref), case in zip(cases, data["cases"]):
        results[name] = {"npu": npu, "ref": ref, "errors": case["errors"],
                         "formatted": dict(zip(ALL, case["formatted"])), "full": dict(zip(ALL, case["full"]))}
    return results


def _wrong_metrics(case):
    wrong = PEER_WRONG.get(case, (set(), None))[0]
    return set(ALL) if "all" in wrong else wrong


def test_every_metric_both_compute_agrees(peer_results):
    worst = {name: 0.0 for name in ALL if name != SD}
    compared = {name: 0 for name in ALL}
    failures = []
    for case, result in peer_results.items():
        ours = compare_tensors(result["npu"], result["ref"])
        for name in ALL:
            if name in _wrong_metrics(case):
                continue
            theirs_text, value = result["full"][name], ours.value(name)
            if name == SD:
                if value is not None and format_mean_std(value) != result["formatted"][SD]:
                    failures.append((case, name, format_mean_std(value), result["formatted"][SD]))
                compared[name] += value is not None
                continue
            theirs = _number(theirs_text)
            if theirs is None and value is None:
                continue
            if theirs is None or value is None or not _agrees(value, theirs, name, ours.compared_count):
                failures.append((case, name, value, theirs_text))
                continue
            compared[name] += 1
            worst[name] = max(worst[name], abs(value - theirs))
    print("\nmetric: pairs compared, max |ours - msaccucmp|")
    for name in ALL:
        print(f"  {name:28s} {compared[name]:3d}  {worst.get(name, 'identical text')}")
    assert not failures, failures


def test_the_pure_functions_give_the_same_numbers(peer_results):
    """compute_metrics on the flattened arrays (no verdict logic) agrees on every case msaccucmp gets right."""
    names = [case for case, _, _ in shared_cases()]
    for case in names:
        result = peer_results[case]
        values = compute_metrics(result["npu"].reshape(-1), result["ref"].reshape(-1))
        for name in ALL:
            if name == SD:
                assert format_mean_std(values[name]) == result["formatted"][SD], case
            else:
                assert _agrees(values[name], float(result["full"][name]), name, result["npu"].size), (case, name)


def test_six_decimal_cells_match_to_the_last_digit(peer_results):
    """Our CSV cells equal msaccucmp's, or differ by one in the sixth decimal (float32 vs float64 rounding)."""
    exact = total = 0
    for case, _, _ in shared_cases():
        result = peer_results[case]
        ours = compare_tensors(result["npu"], result["ref"])
        for name in ALL:
            mine, theirs = ours.metric(name).formatted, result["formatted"][name]
            total += 1
            exact += mine == theirs
            if mine != theirs:
                one_digit = abs(float(mine) - float(theirs)) <= 1.0001e-6 * max(1.0, abs(float(theirs)))
                assert name != SD and (one_digit or _agrees(float(mine), float(theirs), name, ours.compared_count)), \
                    (case, name, mine, theirs)
    print(f"\n{exact} of {total} cells identical")
    assert exact >= 0.9 * total


@pytest.mark.parametrize("case", sorted(PEER_WRONG))
def test_where_the_peer_is_wrong_it_says_something_else(peer_results, case):
    result = peer_results[case]
    ours = compare_tensors(result["npu"], result["ref"])
    assert ours.status.value == PEER_WRONG[case][1], ours.reason
    for name in _wrong_metrics(case):
        theirs = result["full"][name]
        value = ours.value(name)
        if name == SD:
            assert value is None or format_mean_std(value) != result["formatted"][SD] or \
                ours.non_finite.any, (name, value, theirs)
            continue
        theirs_number = _number(theirs)
        both_numbers = theirs_number is not None and value is not None
        same = (theirs_number is None and value is None) or (
            both_numbers and _agrees(value, theirs_number, name, ours.compared_count))
        assert not same, f"{case}: msaccucmp and we both say {theirs!r} for {name}"


# What msaccucmp writes in the cosine cell of its CSV, and why that misleads.
PEER_COSINE = {
    "dims_all_one_opposite": ("1.000000", "This tensor is scalar."),  # 3 against -5
    "dims_all_one_same_sign": ("1.000000", "This tensor is scalar."),  # 2 against 2.5: no real comparison
    "scalar_shape": ("1.000000", "This tensor is scalar."),
    "both_zero": ("1.0", None),
    "tiny_orthogonal": ("1.0", None),  # both norms below 2.2e-16: "identical" whatever the directions
    "huge_identical": ("0.000000", None),  # float32 norms overflow to inf: identical tensors look orthogonal
    "nan_in_npu": ("nan", None),
    "inf_in_npu": ("nan", None),
    "empty": ("1.0", None),
    "empty_2d": ("1.000000", "This tensor is scalar."),  # shape (0, 2): its dims sum to their count
}


@pytest.mark.parametrize("case", sorted(PEER_COSINE))
def test_peer_cosine_cells(peer_results, case):
    text, message = PEER_COSINE[case]
    result = peer_results[case]
    assert result["formatted"]["CosineSimilarity"] == text
    if message:
        assert message in result["errors"]


def test_peer_hides_the_inf_behind_the_nan(peer_results):
    result = peer_results["nan_hides_inf"]
    assert {result["full"][name] for name in ALL if name != SD} == {"nan"}
    ours = compare_tensors(result["npu"], result["ref"])
    assert (ours.non_finite.npu_nan, ours.non_finite.npu_posinf) == (1, 1)
    assert ours.reason == "NPU has 1 NaN, reference none; NPU has 1 +inf, reference none; " \
                          "metrics over the 2 pairs finite on both sides"


def test_peer_compares_transposed_data_without_a_word(peer_results):
    result = peer_results["transposed_shape"]
    assert result["errors"] == []
    assert _number(result["full"]["CosineSimilarity"]) < 0.99
    ours = compare_tensors(result["npu"], result["ref"])
    assert not ours and ours.status.value == "SHAPE_MISMATCH"


def test_float32_relative_errors_drift_and_ours_do_not(peer_results):
    """msaccucmp computes r_i = |x/y - 1| in float32; near x = y that keeps ~7 digits per element and the sum
    drifts (here by 1.2e-6 relative on 1000 fp16 elements). Ours matches the exactly rounded sum."""
    result = peer_results["fp16_npu_vs_fp32_ref_1000"]
    x = result["npu"].astype(np.float64)
    y = result["ref"].astype(np.float64)
    exact = math.fsum(abs(a - b) / abs(b) for a, b in zip(x.tolist(), y.tolist()) if abs(b) > 2.220446049250313e-16)
    ours = compare_tensors(result["npu"], result["ref"]).value("AccumulatedRelativeError")
    theirs = float(result["full"]["AccumulatedRelativeError"])
    assert abs(ours - exact) <= 1e-13 * exact
    assert abs(theirs - exact) > 1e-6 * exact


FILE_COMPARE_CASES = ["fp32_random_4096", "fp16_npu_vs_fp32_ref_1000", "zeros_in_reference", "dims_all_one_opposite",
                      "reference_zero"]


def test_file_compare_writes_what_the_harness_reports(peer, peer_results, tmp_path):
    """The real ``msaccucmp file_compare`` command (8 of the 10 metrics) agrees with the harness cell for cell,
    and with our cells to the last digit where msaccucmp is right."""
    for case in FILE_COMPARE_CASES:
        result = peer_results[case]
        out = tmp_path / case
        out.mkdir()
        np.save(out / "npu.npy", result["npu"])
        np.save(out / "ref.npy", result["ref"])
        peer.run("file_compare", "-m", out / "npu.npy", "-g", out / "ref.npy", "-out", out)
        (summary,) = glob.glob(str(out / "file_result_*.txt"))
        cells = dict(line.split(": ", 1) for line in Path(summary).read_text().splitlines() if ": " in line)
        assert len(cells) == 8 and set(cells) < set(ALL)
        ours = compare_tensors(result["npu"], result["ref"])
        for name, text in cells.items():
            assert text == result["formatted"][name], (case, name)
            if name not in _wrong_metrics(case):
                mine = ours.metric(name).formatted
                assert mine == text or _agrees(float(mine), float(text), name, ours.compared_count) or \
                    abs(float(mine) - float(text)) <= 1.0001e-6 * max(1.0, abs(float(text)))
