"""Result rows for judgment tests: built from the statistics a real comparison keeps, or from two arrays through the
comparator itself (``judge_pair``), with the run's facts (order, edges, sources)."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from precision_tool.comparison.result import RunFacts, TensorResult
from precision_tool.comparison.worker import judge_pair
from precision_tool.metrics import ALL, MeanStd
from precision_tool.status import Status

STD, RMSE, RED, COSINE = (ALL.index(name) for name in ("StandardDeviation", "RootMeanSquareError",
                                                       "RelativeEuclideanDistance", "CosineSimilarity"))


def stats_row(index: int, op: str, kind: str, k: int, op_type: str, status: str, shape: Tuple[int, ...], *,
              ref_rms: float, rmse: float, dtype: str = "float16", cosine: Optional[float] = 0.5,
              local: Optional[float] = None, floor: Optional[float] = None) -> TensorResult:
    """A compared row with the figures the noise rule reads: the reference's rms (as StandardDeviation's mean 0,
    std ``ref_rms``), the RMSE, the RED they make, and replay figures when given."""
    metrics = [None] * len(ALL)
    metrics[STD] = MeanStd(0.0, ref_rms, 0.0, ref_rms)
    metrics[RMSE] = rmse
    metrics[RED] = rmse / ref_rms if ref_rms else (0.0 if rmse == 0 else float("inf"))
    metrics[COSINE] = cosine
    return TensorResult(index, f"{op}:{kind}:{k}", op, kind, k, op_type, Status(status), npu_dtype=dtype,
                        ref_dtype="float32", shape=shape, metrics=tuple(metrics), local_error=local,
                        local_floor=floor, local_method="replay float32" if local is not None else "")


def array_row(index: int, op: str, kind: str, k: int, op_type: str, npu: np.ndarray, reference: np.ndarray,
              cosine_threshold: float = 0.99) -> TensorResult:
    """The row the comparator makes of ``npu`` against ``reference``."""
    comparison = judge_pair(npu, reference, cosine_threshold=cosine_threshold)
    return TensorResult(index, f"{op}:{kind}:{k}", op, kind, k, op_type, comparison.status, comparison.reason,
                        npu_dtype=str(np.asarray(npu).dtype), ref_dtype=str(np.asarray(reference).dtype),
                        shape=tuple(np.asarray(npu).shape), metrics=tuple(m.value for m in comparison.metrics))


def facts(order: Sequence[str], edges: Optional[dict] = None, sources: Optional[dict] = None) -> RunFacts:
    return RunFacts("npu_vs_tf", tuple(order), "graph", {op: tuple(tuple(e) for e in pairs)
                                                         for op, pairs in (edges or {}).items()},
                    sources=dict(sources or {}))
