"""``summary.json``: what a compare run found, for people and CI, beside its result CSV.

Keys
----
``result_csv``       the CSV this summary describes (file name, same folder); a reader checks it, since an
                     output folder given with ``-out`` may hold several runs' CSVs and only the last summary
``exit_code``        0 every compared tensor passes, 1 some fail, 2 nothing could be compared
``cosine_threshold`` the cosine gate; ``allclose_gate`` is off, ``allclose_below_default`` lists the tensors
                     whose allclose ratio is below their dtype's default minimum (reported, not failed)
``counts``           compared / passed / failed / errors / not compared / ops without dump / reused inputs,
                     and every status's count
``coverage``         :meth:`Coverage.to_dict` of the alignment: what was not compared, and why
``failing``          every failing tensor (first divergence first, then execution order) with its reason
``first_divergence`` the op that most likely introduced the error (``None`` when nothing fails), with
                     ``divergence`` (every root and every op that only inherits an error)
``order``, ``data_inputs``, ``order_source``  the execution order and data edges (also in the lossless
                     result file, :mod:`.result_store`, which is what ``vcs`` and the reports read back)
``inputs``, ``timing``, ``tool``, ``created``
"""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Dict, Optional

from precision_tool import __version__
from precision_tool.comparison import ComparisonResult
from precision_tool.fileio import atomic_write

SUMMARY_NAME = "summary.json"


def build_summary(result: ComparisonResult, *, result_csv: str, exit_code: int,
                  total_s: Optional[float] = None) -> Dict[str, Any]:
    """The summary of one run as a JSON-ready dict (see the module docstring for the keys)."""
    facts = result.facts
    failing = [{"tensor_id": r.tensor_id or r.op_name, "op_type": r.op_type, "status": r.status.value,
                "reason": r.reason, "cosine": r.cosine, "allclose_ratio": r.allclose_ratio,
                "reference": r.reference, "index": r.index} for r in result.failing_in_order()]
    below = [{"tensor_id": r.tensor_id, "allclose_ratio": r.allclose_ratio, "min_ratio": r.allclose_min_ratio,
              "dtype": r.tolerance_dtype} for r in result.compared if r.below_allclose_default()]
    divergence = result.divergence
    timing = result.timing.to_dict()
    if total_s is not None:
        timing["total_s"] = round(total_s, 4)
    inputs: Dict[str, Any] = dict(result.inputs)
    inputs["mode"] = facts.mode
    return {
        "tool": f"precision_tool {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "result_csv": os.path.basename(result_csv),
        "exit_code": exit_code,
        "inputs": inputs,
        "mode": facts.mode,
        "cosine_threshold": result.cosine_threshold,
        "allclose_gate": False,
        "counts": result.counts(),
        "coverage": facts.coverage.to_dict() if facts.coverage is not None else None,
        "failing": failing,
        "first_divergence": None if divergence.first is None else divergence.first.to_dict(),
        "divergence": divergence.to_dict(),
        "allclose_below_default": below,
        "order_source": facts.order_source,
        "order": list(facts.order),
        "data_inputs": {op: [list(edge) for edge in edges] for op, edges in facts.data_inputs.items() if edges},
        "timing": timing,
    }


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def write_summary(path, summary: Dict[str, Any]) -> str:
    """Write ``summary`` as JSON atomically (NaN/inf as strings); returns ``path``."""
    with atomic_write(path, "w") as handle:
        json.dump(_json_ready(summary), handle, indent=1, allow_nan=False)
        handle.write("\n")
    return os.fspath(path)


def summary_for_csv(csv_path) -> Optional[Dict[str, Any]]:
    """The ``summary.json`` beside ``csv_path`` when it describes that CSV; ``None`` otherwise.

    A missing, unreadable or other run's summary gives ``None``: the CSV alone is still a complete result.
    """
    path = os.path.join(os.path.dirname(os.fspath(csv_path)), SUMMARY_NAME)
    try:
        with open(path, encoding="utf-8") as handle:
            summary = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or summary.get("result_csv") != os.path.basename(os.fspath(csv_path)):
        return None
    return summary
