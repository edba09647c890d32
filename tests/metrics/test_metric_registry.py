"""The metric registry: names in msaccucmp's CSV order, aliases, typed errors, clash checks."""
from __future__ import annotations

import dataclasses

import pytest

from precision_tool.errors import PrecisionToolError, UnknownMetricError
from precision_tool.metrics import ALL, METRICS, MetricInfo, compute_metrics, format_value, get_metric, resolve_metrics
from precision_tool.metrics.metric_registry import build_lookup

CSV_HEADER = ("CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
              "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,"
              "MeanRelativeError")


def test_names_are_msaccucmps_columns_in_order():
    assert ",".join(ALL) == CSV_HEADER
    assert [info.index for info in METRICS] == list(range(len(CSV_HEADER.split(","))))


@pytest.mark.parametrize("key, name", [
    ("CosineSimilarity", "CosineSimilarity"), ("cosinesimilarity", "CosineSimilarity"), ("cos", "CosineSimilarity"),
    (" Cosine ", "CosineSimilarity"), ("MAXAE", "MaxAbsoluteError"), ("red", "RelativeEuclideanDistance"),
    ("kl", "KullbackLeiblerDivergence"), ("std", "StandardDeviation"), ("rmse", "RootMeanSquareError"),
    ("mean_rel_error", "MeanRelativeError"), (0, "CosineSimilarity"), ("9", "MeanRelativeError"),
    (4, "KullbackLeiblerDivergence"),
])
def test_lookup(key, name):
    assert get_metric(key).name == name


def test_lookup_passes_records_through():
    assert get_metric(METRICS[3]) is METRICS[3]


@pytest.mark.parametrize("key", ["cosinus", "", "10", "MAE", None])
def test_unknown_metric_is_a_typed_error(key):
    with pytest.raises(UnknownMetricError) as info:
        get_metric(key)
    assert str(info.value) == f"unknown metric {key!r} (known metrics: {CSV_HEADER.replace(',', ', ')})"
    assert isinstance(info.value, PrecisionToolError) and isinstance(info.value, KeyError)
    assert info.value.exit_code == 2


def test_resolve_metrics():
    assert resolve_metrics(None) == METRICS == resolve_metrics("ALL")
    assert [i.name for i in resolve_metrics("kl, 0,kl")] == ["KullbackLeiblerDivergence", "CosineSimilarity"]
    assert resolve_metrics([]) == ()
    with pytest.raises(UnknownMetricError):
        resolve_metrics("cos,nope")


def test_records_are_frozen_and_complete():
    for info in METRICS:
        assert callable(info.func) and callable(info.kernel) and callable(info.csv_format)
        assert info.func.__doc__ and ".. math::" in info.func.__doc__ and "Examples" in info.func.__doc__
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.name = "x"
    assert get_metric("cos").higher_is_better is True
    assert get_metric("std").higher_is_better is None
    assert {get_metric(name).higher_is_better for name in ALL[1:] if name != "StandardDeviation"} == {False}


def test_clashing_aliases_are_a_bug_caught_at_build_time():
    first = METRICS[0]
    clash = dataclasses.replace(METRICS[1], aliases=("COS",))
    with pytest.raises(ValueError, match="metric key 'COS' of MaxAbsoluteError clashes with CosineSimilarity"):
        build_lookup([first, clash])


def test_compute_metrics_shares_one_pass():
    values = compute_metrics([1.0, 2.0, 4.0], [1.0, 2.0, 2.0])
    assert list(values) == list(ALL)
    assert values["MaxAbsoluteError"] == 2.0 and values["MeanRelativeError"] == pytest.approx(1 / 3)
    for info in METRICS:  # the shared kernels give what each public function gives
        assert info.func([1.0, 2.0, 4.0], [1.0, 2.0, 2.0]) == values[info.name]


def test_format_value():
    assert format_value("cos", 0.99999949) == "0.999999"
    assert format_value("cos", 0.9999995) == "1.000000"
    assert format_value("MaxAbsoluteError", float("inf")) == "inf"
    assert format_value("std", None) == "NaN"
    assert isinstance(METRICS[0], MetricInfo)
