"""The ten msaccucmp metrics by name: frozen :class:`MetricInfo` records, looked up by name or alias.

As in ``scipy.spatial.distance``: one record per metric, a lookup table built (and checked for clashes) once at
import, and a typed error for unknown names. :data:`METRICS` is in msaccucmp's column order, so
``[info.name for info in METRICS]`` is its CSV header from ``CosineSimilarity`` to ``MeanRelativeError``, and
its ``-alg`` numbers (0-9) work as aliases.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple, Union

from precision_tool.errors import UnknownMetricError
from precision_tool.metrics import absolute, moments, relative, similarity
from precision_tool.metrics.pair_stats import PairStats, pair_stats

__all__ = ["MetricInfo", "METRICS", "ALL", "NOT_COMPUTED", "get_metric", "resolve_metrics", "compute_metrics",
           "format_value", "build_lookup"]

#: What msaccucmp writes in a metric cell it could not compute; we write it for every ``None``.
NOT_COMPUTED = "NaN"


def format_float(value: float) -> str:
    """msaccucmp's number cell: six decimals (``'{:.6f}'``)."""
    return "{:.6f}".format(value)


@dataclass(frozen=True)
class MetricInfo:
    """One metric.

    ``name`` is the CSV column (msaccucmp's spelling); ``aliases`` are other names for lookup (case does not
    matter); ``func(x, y)`` is the public pure function; ``higher_is_better`` is True for similarities, False
    for errors and divergences, None for StandardDeviation (not a score); ``csv_format(value)`` writes the
    CSV cell; ``index`` is msaccucmp's ``-alg`` number. ``kernel`` computes the value from a
    :class:`~precision_tool.metrics.pair_stats.PairStats` (the sums every metric shares).
    """

    name: str
    aliases: Tuple[str, ...]
    func: Callable[[Any, Any], Any]
    higher_is_better: Optional[bool]
    csv_format: Callable[[Any], str]
    index: int
    summary: str
    kernel: Callable[[PairStats], Any] = field(repr=False, compare=False)


def _info(index, name, aliases, module, func_name, higher_is_better, summary, csv_format=format_float):
    return MetricInfo(name=name, aliases=tuple(aliases), func=getattr(module, func_name),
                      higher_is_better=higher_is_better, csv_format=csv_format, index=index, summary=summary,
                      kernel=getattr(module, "_" + func_name))


METRICS: Tuple[MetricInfo, ...] = (
    _info(0, "CosineSimilarity", ["cosine", "cos", "cosine_similarity"], similarity, "cosine_similarity", True,
          "cosine of the angle between the tensors"),
    _info(1, "MaxAbsoluteError", ["max_abs_error", "max_absolute_error", "MaxAE"], absolute,
          "max_absolute_error", False, "largest |x - y|"),
    _info(2, "AccumulatedRelativeError", ["acc_rel_error", "accumulated_relative_error", "AccRE"], relative,
          "accumulated_relative_error", False, "sum of |x - y| / |y| over non-zero references"),
    _info(3, "RelativeEuclideanDistance", ["red", "relative_euclidean_distance"], relative,
          "relative_euclidean_distance", False, "||x - y|| / ||y||"),
    _info(4, "KullbackLeiblerDivergence", ["kl", "kld", "kullback_leibler_divergence"], similarity,
          "kullback_leibler_divergence", False, "KL divergence of the min-max scaled value profiles"),
    _info(5, "StandardDeviation", ["std", "mean_std", "standard_deviation"], moments, "standard_deviation",
          None, "mean and standard deviation of each side", csv_format=moments.format_mean_std),
    _info(6, "MeanAbsoluteError", ["mean_abs_error", "mean_absolute_error", "MeanAE"], absolute,
          "mean_absolute_error", False, "mean |x - y|"),
    _info(7, "RootMeanSquareError", ["rmse", "root_mean_square_error"], absolute, "root_mean_square_error",
          False, "sqrt(mean((x - y)^2))"),
    _info(8, "MaxRelativeError", ["max_rel_error", "max_relative_error", "MaxRE"], relative,
          "max_relative_error", False, "largest |x - y| / |y| over non-zero references"),
    _info(9, "MeanRelativeError", ["mean_rel_error", "mean_relative_error", "MeanRE"], relative,
          "mean_relative_error", False, "sum of |x - y| / |y| over non-zero references, divided by N"),
)

#: Every metric name, in msaccucmp's column order.
ALL: Tuple[str, ...] = tuple(info.name for info in METRICS)


def build_lookup(infos: Iterable[MetricInfo]) -> Mapping[str, MetricInfo]:
    """Map every lower-cased name, alias and index (as text) to its record.

    Raises ``ValueError`` -- a bug, not a user error -- when two records share a name or alias.
    """
    lookup: Dict[str, MetricInfo] = {}
    for info in infos:
        for key in (info.name, *info.aliases, str(info.index)):
            folded = key.lower()
            owner = lookup.get(folded)
            if owner is not None and owner is not info:
                raise ValueError(f"metric key {key!r} of {info.name} clashes with {owner.name}")
            lookup[folded] = info
    return MappingProxyType(lookup)


_LOOKUP = build_lookup(METRICS)


def get_metric(name: Union[str, int, MetricInfo]) -> MetricInfo:
    """The record for a name, alias or msaccucmp ``-alg`` index; case does not matter.

    >>> get_metric("cos").name, get_metric("RMSE").name, get_metric(4).name
    ('CosineSimilarity', 'RootMeanSquareError', 'KullbackLeiblerDivergence')

    Raises
    ------
    UnknownMetricError
        For anything else; the message lists the known names.
    """
    if isinstance(name, MetricInfo):
        return name
    info = _LOOKUP.get(str(name).strip().lower())
    if info is None:
        raise UnknownMetricError(name, ALL)
    return info


def resolve_metrics(names: Union[None, str, Iterable[Union[str, int, MetricInfo]]] = ALL
                    ) -> Tuple[MetricInfo, ...]:
    """Records for ``names`` in the order given, without repeats. ``None`` or ``"all"`` mean all ten;
    a string may list several names separated by commas.

    >>> [info.name for info in resolve_metrics("rmse, cos, RMSE")]
    ['RootMeanSquareError', 'CosineSimilarity']
    """
    if names is None or names is ALL:  # the default, once per compared pair
        return METRICS
    if isinstance(names, str):
        if names.strip().lower() == "all":
            return METRICS
        names = [part for part in names.split(",") if part.strip()]
    seen, out = set(), []
    for name in names:
        info = get_metric(name)
        if info.name not in seen:
            seen.add(info.name)
            out.append(info)
    return tuple(out)


def compute_metrics(x, y, metrics=ALL) -> Dict[str, Any]:
    """``{name: value}`` for the chosen metrics over one pair, all from one :func:`pair_stats` (two passes).
    Values are what the metric functions return (``nan`` where undefined).

    >>> compute_metrics([1.0, 2.0], [1.0, 4.0], ["MaxAbsoluteError", "mean_rel_error"])
    {'MaxAbsoluteError': 2.0, 'MeanRelativeError': 0.25}
    """
    stats = pair_stats(x, y)
    return {info.name: info.kernel(stats) for info in resolve_metrics(metrics)}


def format_value(metric: Union[str, int, MetricInfo], value: Any) -> str:
    """The CSV cell for ``value``: :data:`NOT_COMPUTED` for ``None``, else the metric's ``csv_format``.

    >>> format_value("MaxAbsoluteError", 2.0), format_value("cosine", None)
    ('2.000000', 'NaN')
    """
    if value is None:
        return NOT_COMPUTED
    return get_metric(metric).csv_format(value)
