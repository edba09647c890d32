"""Comparison maths: msaccucmp's ten metrics as pure functions, an allclose ratio, and per-tensor verdicts.

Modules: ``absolute``, ``relative``, ``similarity``, ``moments`` (one pure function per metric over two flattened
arrays, x = NPU and y = reference, formula and edge cases in its docstring), all formulas over the sums of
``pair_stats``; ``closeness`` (the allclose ratio and its default tolerances); ``metric_registry``
(:class:`MetricInfo` records by name or alias); ``tensor_verdict`` (:func:`compare_tensors`, a frozen, truthy
:class:`TensorComparison`); ``errors_detail`` (the worst elements and an error histogram, for reports). Every
metric works in float64, where msaccucmp casts to float32 (docs/internals/metrics.md#working-precision).
"""
from precision_tool.metrics.absolute import max_absolute_error, mean_absolute_error, root_mean_square_error
from precision_tool.metrics.errors_detail import ElementError
from precision_tool.metrics.closeness import (DEFAULT_TOLERANCES, Tolerance, allclose_ratio, canonical_dtype,
                                              default_tolerance)
from precision_tool.metrics.moments import MeanStd, format_mean_std, standard_deviation
from precision_tool.metrics.metric_registry import (ALL, METRICS, MetricInfo, compute_metrics, format_value, get_metric,
                                                    resolve_metrics)
from precision_tool.metrics.relative import (accumulated_relative_error, max_relative_error, mean_relative_error,
                                             relative_euclidean_distance)
from precision_tool.metrics.similarity import cosine_similarity, kullback_leibler_divergence
from precision_tool.metrics.tensor_verdict import (DEFAULT_COSINE_THRESHOLD, MetricValue, NonFiniteClass,
                                                   NonFiniteSummary, Status, TensorComparison, compare_tensors,
                                                   threshold_text)

__all__ = [
    "cosine_similarity", "max_absolute_error", "accumulated_relative_error", "relative_euclidean_distance",
    "kullback_leibler_divergence", "standard_deviation", "mean_absolute_error", "root_mean_square_error",
    "max_relative_error", "mean_relative_error", "MeanStd", "format_mean_std",
    "allclose_ratio", "Tolerance", "DEFAULT_TOLERANCES", "canonical_dtype", "default_tolerance",
    "MetricInfo", "METRICS", "ALL", "get_metric", "resolve_metrics", "compute_metrics", "format_value",
    "compare_tensors", "TensorComparison", "MetricValue", "Status", "NonFiniteClass", "NonFiniteSummary",
    "ElementError", "DEFAULT_COSINE_THRESHOLD", "threshold_text",
]
