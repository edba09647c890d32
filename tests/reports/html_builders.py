"""Results for the HTML report tests: the sample CNN compared once into tmp, and small synthetic result CSVs.

* :func:`sample_result` -- ``ac -c`` on ``sample_dumps/cnn_workspace`` into a fresh folder (never the sample);
* :func:`write_synthetic_result` -- a result CSV written by our own writer from a few rows, with a minimal
  ``summary.json`` beside it or none (msaccucmp's case).
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
from pathlib import Path
from typing import Optional, Sequence, Tuple

from precision_tool.cli import main
from precision_tool.comparison import TensorResult
from precision_tool.metrics import ALL
from precision_tool.status import Status
from precision_tool.reports.result_csv import write_result_csv

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "sample_dumps" / "cnn_workspace"
RES_CONV = "small_cnn_1/res_conv_1/convolution"
RES_ADD = "small_cnn_1/res_add_1/Add"
CONV3 = "small_cnn_1/conv3_1/convolution"
EVIL = "-neg/<script>alert('x')</script>&\"q\""


def sample_result(folder) -> Path:
    """Run ``precision_tool -d sample_dumps/cnn_workspace ac -c -o FOLDER``; returns the result CSV's path."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["-d", str(CNN), "ac", "-c", "-o", str(folder), "--workers", "1"])
    assert code == 1  # the planted culprit fails
    (csv,) = [name for name in os.listdir(folder) if name.endswith(".csv")]
    return Path(folder) / csv


def tensor(index: int, op: str, kind: str = "output", k: int = 0, cosine: Optional[float] = 1.0,
           max_rel: Optional[float] = 1e-4, status: str = "PASS", reason: str = "", op_type: str = "Conv2D"):
    metrics = [None] * len(ALL)
    if status != "NOT_COMPARED":
        metrics = [0.0] * len(ALL)
        metrics[ALL.index("StandardDeviation")] = None
        metrics[ALL.index("CosineSimilarity")] = cosine
        metrics[ALL.index("MaxRelativeError")] = max_rel
        if cosine is not None:  # two tensors of equal norm at this cosine are this far apart
            metrics[ALL.index("RelativeEuclideanDistance")] = math.sqrt(max(0.0, 2.0 * (1.0 - cosine)))
    return TensorResult(index=index, tensor_id=f"{op}:{kind}:{k}", op_name=op, kind=kind, tensor_index=k,
                        op_type=op_type, status=Status(status), reason=reason, npu_dtype="float16",
                        ground_truth=op, reference=f"{op}:output:{k}" if status != "NOT_COMPARED" else "",
                        ref_dtype="float32" if status != "NOT_COMPARED" else "", shape=(2, 3),
                        metrics=tuple(metrics))


def write_synthetic_result(folder, rows: Sequence[TensorResult], threshold: float = 0.99, summary: bool = True,
                           order: Sequence[str] = (), edges: Optional[dict] = None,
                           name: str = "result_20260101000000.csv") -> Path:
    """``rows`` as a result CSV in ``folder``, with a minimal summary.json when ``summary``."""
    os.makedirs(folder, exist_ok=True)
    path = Path(folder) / name
    write_result_csv(path, rows)
    if summary:
        failing = [{"tensor_id": r.tensor_id} for r in rows if r.status not in ("PASS", "BOTH_ZERO", "NOT_COMPARED")]
        data = {"result_csv": name, "cosine_threshold": threshold, "failing": failing,
                "order": list(order) or list(dict.fromkeys(r.op_name for r in rows)),
                "data_inputs": edges or {}, "order_source": "graph", "inputs": {},
                "coverage": {"npu_tensors": len(rows), "reference_only": ["tf_only:output:0"],
                             "unaligned": [[r.tensor_id, "no reference file"] for r in rows
                                           if r.status == "NOT_COMPARED"]}}
        (Path(folder) / "summary.json").write_text(json.dumps(data))
    return path


def chain(*cosines: Tuple[str, Optional[float]]):
    """Rows of a chain of ops ``a -> b -> ...``: each op's input 0 and output 0 with the given output cosine
    (an input repeats its producer's output), plus the edges for summary.json."""
    rows, edges, previous = [], {}, None
    for position, (op, cosine) in enumerate(cosines):
        if previous is not None:
            prev_cos = rows[-1].metrics[0]
            status = "PASS" if prev_cos is None or prev_cos >= 0.99 else "FAIL"
            rows.append(tensor(position, op, "input", 0, prev_cos, status=status))
            edges[op] = [[previous, 0]]
        status = "PASS" if cosine is None or cosine >= 0.99 else "FAIL"
        rows.append(tensor(position, op, "output", 0, cosine, max_rel=0.5 if status == "FAIL" else 1e-4,
                           status=status))
        previous = op
    return rows, edges
