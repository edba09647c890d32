"""``summary.json``: what a compare run found, for people and CI, beside its result CSV.

It names the CSV it describes (``result_csv``) and holds the exit code, the threshold, the counts, the coverage, the
failing tensors, the first divergence, the run's one judgment, ``ac``'s verdict when ``ac -c`` wrote the run, and the
run facts the same-model check reads (the keys: docs/internals/reports.md#summary). It is written last of a run's
outputs (:mod:`.result_outputs`), so the CSV it names is always there, complete. Reading it back
(:func:`summary_for_csv`) checks every field's type: a damaged summary is one ``ResultFileError`` naming it.
"""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Dict, Optional, Tuple

from precision_tool import __version__
from precision_tool.comparison import ComparisonResult
from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, EXIT_UNUSABLE_INPUT, ResultFileError
from precision_tool.fileio import read_input_text, write_text_atomic
from precision_tool.reports.result_store import (check_inputs, check_list, check_object, check_run_facts,
                                                 check_threshold, check_timing, expect, is_count, optional,
                                                 parse_stored_json)

SUMMARY_NAME = "summary.json"


def unusable_inputs(coverage: Any) -> Tuple[Tuple[str, str], ...]:
    """``(path, message)`` of every input file the run could not read
    (:attr:`~precision_tool.alignment.Coverage.unusable_inputs`); ``()`` for ``None`` (a CSV without its run's
    facts: unknown)."""
    return () if coverage is None else tuple(coverage.unusable_inputs)


def unusable_text(count: int) -> str:
    """``"3 input files could not be read"``: how every report says it."""
    return f"{count} input file{'s' if count != 1 else ''} could not be read"


def unusable_note(unusable: Tuple[Tuple[str, str], ...]) -> str:
    """The line a report on a stored result adds for :func:`unusable_inputs` (not empty), naming the first."""
    were = "was" if len(unusable) == 1 else "were"
    return f"{unusable_text(len(unusable))} and {were} not compared; first: {unusable[0][1]}"


def exit_status(exit_code: int, failing: int, compared: int, unusable: int, culprit: str = "",
                same_model: bool = True) -> str:
    """The status line of a report on a comparison: what decided its exit code
    (:func:`~precision_tool.comparison.judgment.exit_code`).

    >>> exit_status(1, 0, 52, 0, culprit="conv2"), exit_status(2, 42, 52, 0, same_model=False)
    ('culprit conv2 (every tensor passes the cosine gate)', 'the two runs do not compute the same model')
    """
    if not same_model:
        return SAME_MODEL_MEANING
    if exit_code == EXIT_OK:
        return "all compared tensors pass"
    if exit_code == EXIT_FAILED_CHECK:
        if not failing:
            return f"culprit {culprit} (every tensor passes the cosine gate)"
        return f"{failing} failing" + (f"; {unusable_text(unusable)}" if unusable else "")
    return "nothing was compared" if compared == 0 else unusable_text(unusable)


#: What exit 2 means when the two runs do not compute the same model.
SAME_MODEL_MEANING = "the two runs do not compute the same model"


def run_exit_code(result: ComparisonResult) -> int:
    """The exit code of a comparison result, made now or read back from disk
    (:meth:`~precision_tool.comparison.ComparisonResult.exit_code`)."""
    return result.exit_code()


def build_summary(result: ComparisonResult, *, result_csv: str, exit_code: int,
                  total_s: Optional[float] = None, verdict: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The summary of one run as a JSON-ready dict (the keys: docs/internals/reports.md#summary)."""
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
        "counts": dict(result.counts(), unusable_inputs=len(unusable_inputs(facts.coverage))),
        "coverage": facts.coverage.to_dict() if facts.coverage is not None else None,
        "failing": failing,
        "first_divergence": None if divergence.first is None else divergence.first.to_dict(),
        "divergence": divergence.to_dict(),
        "judgment": result.verdict.to_dict(),
        "verdict": verdict,
        "allclose_below_default": below,
        "order_source": facts.order_source,
        "order": list(facts.order),
        "data_inputs": {op: [list(edge) for edge in edges] for op, edges in facts.data_inputs.items() if edges},
        "sources": dict(facts.sources),
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
    return write_text_atomic(path, summary_text(summary))


def summary_text(summary: Dict[str, Any]) -> str:
    """``summary`` as the JSON text :func:`write_summary` writes (NaN/inf as strings, one space per level)."""
    return json.dumps(_json_ready(summary), indent=1, allow_nan=False) + "\n"


def summary_for_csv(csv_path) -> Optional[Dict[str, Any]]:
    """The ``summary.json`` beside ``csv_path`` when it describes that CSV; ``None`` otherwise.

    ``None`` when there is no ``summary.json``, or when it names another CSV (``-out`` folders hold several
    runs and the last summary): the CSV, with its lossless result file, is still a complete result. A
    ``summary.json`` that is there but cannot be trusted raises :class:`ResultFileError` naming it -- it is
    not a regular file (a FIFO, a symlink to ``/dev/zero``, a dangling symlink: refused by
    :func:`~precision_tool.fileio.open_input` before a byte is read), not strict JSON
    (:func:`~precision_tool.reports.result_store.parse_stored_json`: no ``NaN``, no 31-digit integers, no
    100,000-deep nesting), not an object with a ``result_csv`` string, or, when it names this CSV, a field
    of the wrong type (:func:`check_summary`). Nothing is guessed from a damaged summary.
    """
    path = os.path.join(os.path.dirname(os.fspath(csv_path)), SUMMARY_NAME)
    if not os.path.lexists(path):
        return None
    try:
        summary = parse_stored_json(read_input_text(path, ResultFileError))
    except ValueError as error:
        raise ResultFileError(path, f"is not JSON ({error})", _DAMAGED_HINT) from None
    try:
        check_object(summary, "the summary")
        expect(isinstance(summary.get("result_csv"), str), summary.get("result_csv"), "result_csv", "a file name")
        if summary["result_csv"] != os.path.basename(os.fspath(csv_path)):
            return None
        check_summary(summary)
    except ValueError as error:
        raise ResultFileError(path, str(error), _DAMAGED_HINT) from None
    return summary


_DAMAGED_HINT = "move it aside to read the result without it"


def check_summary(summary: Dict[str, Any]) -> None:
    """Type-check every key (docs/internals/reports.md#summary) that a reader may use; ``ValueError`` naming the first
    wrong one (``counts.compared is a string, not a count``). The run facts (``order``, ``data_inputs``,
    ``coverage``...) are :func:`~precision_tool.reports.result_store.check_run_facts`'s."""
    check_run_facts(summary)
    for key in ("tool", "created", "mode", "order_source"):
        if key in summary:
            expect(isinstance(summary[key], str), summary[key], key, "a string")
    if "exit_code" in summary:
        expect(summary["exit_code"] in (EXIT_OK, EXIT_FAILED_CHECK, EXIT_UNUSABLE_INPUT) and
               is_count(summary["exit_code"]), summary["exit_code"], "exit_code", "0, 1 or 2")
    check_threshold(summary.get("cosine_threshold"), "cosine_threshold")
    check_inputs(optional(summary, "inputs", {}), "inputs")
    check_timing(optional(summary, "timing", {}), "timing")
    _check_counts(optional(summary, "counts", {}))
    check_list(optional(summary, "failing", []), "failing",
               lambda item: isinstance(item, dict) and isinstance(item.get("tensor_id"), str),
               "an object with a tensor_id string")
    if summary.get("first_divergence") is not None:
        check_object(summary["first_divergence"], "first_divergence")
    check_object(optional(summary, "divergence", {}), "divergence")
    check_object(optional(summary, "judgment", {}), "judgment")
    if summary.get("verdict") is not None:
        check_object(summary["verdict"], "verdict")
        culprit = summary["verdict"].get("culprit")
        if culprit is not None:
            check_object(culprit, "verdict.culprit")
            expect(isinstance(culprit.get("op_name"), str), culprit.get("op_name"), "verdict.culprit.op_name",
                   "a string")
    below = optional(summary, "allclose_below_default", [])
    expect(isinstance(below, list), below, "allclose_below_default", "a list")


def _check_counts(counts: Any) -> None:
    check_object(counts, "counts")
    for key, value in counts.items():
        if key == "by_status":
            check_object(value, "counts.by_status")
            for status, count in value.items():
                expect(is_count(count), count, f"counts.by_status.{status[:40]}", "a count")
        else:
            expect(is_count(value), value, f"counts.{key[:40]}", "a count")
