"""``ac``'s verdict: the most likely culprit op, why, and the next commands to run.

Rules, first match wins (:func:`decide_verdict`): 1. **local error** -- with a comparison, the earliest op whose own
error stands out; 1b. **first divergence** -- an op whose local error could not be measured (or that fails for NaN/inf
the reference lacks), when it comes before any op of rule 1; 2. **fusion** -- the first fused op that differs from its
unfused TF ops; 3. **overflow** -- the first overflow, unless the comparison shows its outputs all match the reference;
4. none. Whatever does not make the culprit is listed in :attr:`Verdict.also`. Commands are given as typed in the
shell (``ni OP``). The rules in full: docs/internals/checks.md#run_verdict.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from precision_tool.checks.nonfinite import INTRODUCED
from precision_tool.comparison.attribution import METHOD_NONE, METHOD_REPLAY, STANDOUT_FACTOR
from precision_tool.comparison.judgment import (METHOD_DIVERGENCE, METHOD_FUSION, METHOD_OVERFLOW, decide_culprit,
                                                judged_by_local_error, underflows_only)
from precision_tool.comparison.same_model import drift_lines, mismatch_lines
from precision_tool.comparison.systemic import systemic_line
from precision_tool.formats.dump_names import sanitize_op_name
from precision_tool.replay.replay_plan import SOURCE_REFERENCE

if TYPE_CHECKING:
    from precision_tool.comparison.tree_runs import StepRun
from precision_tool.formats.tensor_kind import TensorKind

FIRST_DIVERGENCE, FUSION, OVERFLOW_RECORD, DUMP_SCAN = "first divergence", "fusion", "overflow record", "dump scan"
LOCAL_ERROR = "local error"
STATISTICS = "statistics"  # a statistics run's suspect (checks/stats_check.py)


@dataclass(frozen=True)
class Culprit:
    """The op to look at first. ``evidence`` is one of the four rule names above; ``reasons`` are one-liners."""

    op_name: str
    op_type: str
    evidence: str
    reasons: Tuple[str, ...]
    next_commands: Tuple[str, ...]
    passes: Tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "evidence": self.evidence,
                "reasons": list(self.reasons), "next_commands": list(self.next_commands), "passes": list(self.passes)}


@dataclass(frozen=True)
class Verdict:
    """``culprit`` (``None`` when nothing points at an op), further findings, and what to run next."""

    culprit: Optional[Culprit]
    also: Tuple[str, ...] = ()
    next_commands: Tuple[str, ...] = ()
    checked: bool = True  # False: no comparison with the reference ran, so the culprit is only a lead
    withheld: str = ""  # why no op is judged at all (the runs do not compute the same model)
    unchecked: str = ""  # why a lead is not checked, when not for want of 'ac -c' (a statistics run)

    @property
    def headline(self) -> str:
        """One line: ``Most likely culprit: OP (TYPE), by EVIDENCE``; without a comparison with the reference
        (``ac`` without ``-c``, or no reference), ``Lead, not yet checked against the reference: ...`` -- an
        overflow or a fusion difference may cost no accuracy at all; or why there is none."""
        if self.withheld:
            return f"No verdict: {self.withheld}."
        if self.culprit is None:
            return "No culprit found."
        c = self.culprit
        if c.evidence == STATISTICS:
            return (f"Suspect by statistics, to confirm with a full dump of it (the dump_layer line): {c.op_name} "
                    f"({c.op_type or 'unknown type'}).")
        unchecked = self.unchecked or "'ac -c' does"
        what = "Most likely culprit" if self.checked else f"Lead, not yet checked against the reference ({unchecked})"
        return f"{what}: {c.op_name} ({c.op_type or 'unknown type'}), by {c.evidence}."

    def to_dict(self) -> dict:
        return {"culprit": None if self.culprit is None else self.culprit.to_dict(), "also": list(self.also),
                "next_commands": list(self.next_commands), "headline": self.headline}


def _q(text: str) -> str:
    return shlex.quote(text)


def _same_op(a: str, b: str) -> bool:
    return a == b or sanitize_op_name(a) == sanitize_op_name(b)


def _overflow_finding(overflow, op_name: str):
    return next((f for f in overflow.records.findings if f.status_lines and _same_op(f.op_name, op_name)), None)


def _scan_op(overflow, op_name: str):
    if overflow.scan is None:
        return None
    return next((op for op in overflow.scan.ops if _same_op(op.op_name, op_name)), None)


def _rows_of(compare, op_name: str):
    if compare is None or compare.result is None:
        return []
    return [row for row in compare.result.results if row.op_name == op_name]


def _matched_outputs(compare, op_name: str) -> dict:
    """``{output index: matched NaN/inf count}`` of the op's compared outputs whose NaN/inf all match the
    reference's (:attr:`~precision_tool.comparison.result.TensorResult.matched_non_finite`)."""
    return {row.tensor_index: row.matched_non_finite for row in _compared_outputs(compare, op_name)
            if row.matched_non_finite}


def _scan_matches_reference(compare, scan_op) -> bool:
    """True when every output the dump scan flags holds only NaN/inf the reference holds too (same count,
    every one matched; no fp16 saturation): the scan saw TensorFlow's own values, not an NPU overflow."""
    matched = _matched_outputs(compare, scan_op.op_name)
    return bool(matched) and all(not tensor.saturated and tensor.non_finite
                                 and matched.get(tensor.index) == tensor.non_finite for tensor in scan_op.outputs)


def _shared_text(matched: dict, lead: str = "its") -> str:
    """``its NaN/inf in output 0 (6) are the reference's too ...``: what the comparison says about them."""
    where = ", ".join(f"output {index} ({count})" for index, count in sorted(matched.items()))
    return (f"{lead} NaN/inf in {where} are the reference's too (same positions, same kinds): the reference "
            "computes them, so they are no overflow of the NPU's")


def _non_finite_text(scan_op) -> str:
    worst = scan_op.worst
    parts = [f"{worst.inf} inf" if worst.inf else "", f"{worst.nan} NaN" if worst.nan else "",
             f"{worst.saturated} saturated at +/-65504" if worst.saturated else ""]
    where = f", first at {list(worst.first_non_finite)}" if worst.first_non_finite is not None else ""
    return f"{worst.label} holds {', '.join(p for p in parts if p)}{where}"


@dataclass(frozen=True)
class _FusionFinding:
    """What fusion says about one op: reason lines, its passes, and whether fusion is blamed, cleared or
    undecided (fused, but no fusion-off run to tell)."""

    lines: Tuple[str, ...] = ()
    passes: Tuple[str, ...] = ()
    blamed: bool = False
    undecided: bool = False


def _fusion_reason(fusion, op_name: str) -> _FusionFinding:
    """Reasons about fusion for ``op_name``, its passes, and whether fusion is blamed."""
    view = fusion.overview.fused_op(op_name)
    comparison = fusion.comparison
    diff = comparison.op(op_name) if comparison is not None else None
    passes = tuple(view.passes) if view is not None else ()
    at = f" at {comparison.read_at} (the fusion-off run's only step)" if comparison is not None and \
        comparison.read_at else ""
    if diff is not None and diff.differs and diff.fused is not None:
        return _FusionFinding((f"fusion: it differs from its unfused TF ops in the fusion-off run{at} "
                               f"(relative distance {diff.output_distance:.3g} vs {diff.input_distance:.3g} on its "
                               f"inputs); made by {diff.fused.passes_text}",), tuple(diff.fused.passes), blamed=True)
    if view is not None and diff is not None:
        return _FusionFinding((f"not fusion: fused by {view.passes_text}, but the fusion-off run computes the same"
                               f"{at} (relative distance {diff.output_distance:.3g})",), passes)
    if view is not None:
        return _FusionFinding((f"fused from {len(view.tf_ops)} TF ops by {view.passes_text}; a fusion-off run "
                               "(action='fusion_off') would tell whether fusion is to blame",), passes, undecided=True)
    return _FusionFinding(passes=passes)


def _inputs_text(divergence, rows) -> str:
    """What was measured about the culprit's inputs: never "they match" for an input nobody compared.

    Inputs without a reference (e.g. a model input captured under another name) count as passing when the
    first divergence is chosen; the reason says so instead of claiming they match.
    """
    unknown = list(divergence.unknown_inputs)
    if not unknown:
        return " while its inputs still match"
    compared = [row for row in rows if row.kind == TensorKind.INPUT and row.compared]
    if compared:
        return f" while its compared inputs still match (input(s) {unknown} not compared: assumed right)"
    return (f"; none of its inputs was compared (no reference for input(s) {unknown}), so it is the first failing "
            "op, not proven to add the error")


@dataclass(frozen=True)
class _Causes:
    """What overflow and fusion say about an op: reason lines, its passes, whether fusion is blamed, and
    whether anything (overflow, fusion, undecided fusion) explains it."""

    lines: Tuple[str, ...]
    passes: Tuple[str, ...]
    blamed: bool
    explained: bool


def _causes(op_name: str, overflow, fusion, compare=None) -> _Causes:
    lines = []
    finding = _overflow_finding(overflow, op_name)
    if finding is not None:
        lines.append(f"overflow: record {finding.position} of the overflow run names it: "
                     f"{'; '.join(finding.status_lines)}")
    scan_op = _scan_op(overflow, op_name)
    shared = scan_op is not None and _scan_matches_reference(compare, scan_op)
    if shared:
        lines.append(f"not overflow: in the normal run its {_non_finite_text(scan_op)}, but "
                     + _shared_text(_matched_outputs(compare, op_name), lead="the"))
    elif scan_op is not None:
        lines.append(f"overflow: in the normal run its {_non_finite_text(scan_op)}")
    fused = _fusion_reason(fusion, op_name)
    lines.extend(fused.lines)
    explained = finding is not None or (scan_op is not None and not shared) or fused.blamed or fused.undecided
    return _Causes(tuple(lines), fused.passes, fused.blamed, explained)


def _commands(op_name: str, index: int, causes: _Causes, compare) -> List[str]:
    out_folder = compare.out_folder if compare is not None else ""
    ni = f"ni -f {_q(out_folder)} {_q(op_name)}" if out_folder else f"ni {_q(op_name)}"  # -o: ni must be told
    commands = [ni, f"pt {_q(f'{op_name}:output:{index}')}"]
    if causes.blamed:
        commands.append(f"ls -f {_q(causes.passes[0])}")
    commands.append(_vcs_command(compare))
    return commands


def _divergence_culprit(divergence, overflow, fusion, compare) -> Culprit:
    op_name = divergence.op_name
    rows = _rows_of(compare, op_name)
    op_type = rows[0].op_type if rows else ""
    failing = [row for row in rows if row.kind == TensorKind.OUTPUT and row.compared and not row.passed]
    reasons = []
    if failing:
        worst = min(failing, key=lambda row: row.cosine if row.cosine is not None else -2.0)
        reasons.append(f"its output {worst.tensor_index} fails against the reference ({worst.status.value}: "
                       f"{worst.reason}){_inputs_text(divergence, rows)}")
        if worst.matched_non_finite:
            reasons.append(f"its output {worst.tensor_index}'s {worst.matched_non_finite} NaN/inf are the "
                           "reference's too (same positions, same kinds) and left out: it fails on its finite "
                           "elements")
    attribution = compare.attribution if compare is not None else None
    measured = attribution.op(op_name) if attribution is not None else None
    if measured is not None:
        reasons.append(f"its local error is {measured.summary}")
    reasons.extend(_systemic_reasons(compare, op_name))
    causes = _causes(op_name, overflow, fusion, compare)
    reasons.extend(causes.lines)
    if not causes.explained:
        reasons.append("no overflow and no fusion explain it: the kernel itself loses accuracy on good inputs"
                       if not divergence.unknown_inputs else
                       "no overflow and no fusion explain it: if its uncompared inputs are right, the kernel itself "
                       "loses accuracy")
    index = divergence.failed_outputs[0] if divergence.failed_outputs else 0
    evidence = f"{FIRST_DIVERGENCE} and {FUSION}" if causes.blamed else FIRST_DIVERGENCE
    return Culprit(op_name, op_type, evidence, tuple(reasons), tuple(_commands(op_name, index, causes, compare)),
                   causes.passes)


def _systemic_reasons(compare, op_name: str) -> List[str]:
    """The line saying the op is part of a systemic fault of the judgment (its first such group), if it is."""
    judgment = _judgment(compare)
    faults = [fault for fault in (judgment.systemic if judgment is not None else ()) if op_name in fault.ops]
    if not faults:
        return []
    fault = faults[0]
    return [f"it is one of {len(fault.ops)} ops of {fault.kind} {fault.name} beyond Ascend's operator standard (of "
            f"{fault.measured} replayed): a systemic fault of the {fault.kind}, not of this op alone"]


def _local_error_culprit(measured, overflow, fusion, compare) -> Culprit:
    """The first op whose local error stands out (:mod:`precision_tool.comparison.attribution`), with how it was
    measured."""
    op_name = measured.op_name
    rows = _rows_of(compare, op_name)
    reasons = [("it adds the error itself: " if measured.method == METHOD_REPLAY else
                "its output's error jumps: ") + measured.summary]
    worst = next((row for row in rows if row.tensor_id == measured.tensor_id), None)
    if worst is not None and worst.compared:
        reasons.append(f"against the reference its output {worst.tensor_index} "
                       + (f"still passes ({worst.reason}): the error is its own, not yet large"
                          if worst.passed else f"fails ({worst.status.value}: {worst.reason})"))
    replay = compare.replay.op(op_name) if compare is not None and compare.replay is not None else None
    if replay is not None:
        from_reference = [line for line, source in zip(replay.feeds, replay.sources) if source == SOURCE_REFERENCE]
        if from_reference:
            reasons.append(f"{len(from_reference)} of its {len(replay.feeds)} replay inputs came from the reference, "
                           f"not the NPU dump (first: {from_reference[0]})")
    reasons.extend(_systemic_reasons(compare, op_name))
    causes = _causes(op_name, overflow, fusion, compare)
    reasons.extend(causes.lines)
    if not causes.explained:
        reasons.append("no overflow and no fusion explain it: the kernel itself loses accuracy")
    index = worst.tensor_index if worst is not None else 0
    evidence = f"{LOCAL_ERROR} ({measured.method})"
    if causes.blamed:
        evidence += f" and {FUSION}"
    return Culprit(op_name, measured.op_type, evidence, tuple(reasons),
                   tuple(_commands(op_name, index, causes, compare)), causes.passes)


def _fusion_culprit(diff) -> Culprit:
    reasons = (f"fusion: its output differs from its unfused TF ops ({', '.join(diff.fused.tf_ops)}) in the "
               f"fusion-off run by a relative distance of {diff.output_distance:.3g}, its inputs only by "
               f"{diff.input_distance:.3g}",
               f"made by {diff.fused.passes_text}: switch them off one at a time (fusion switch file) to tell which")
    commands = (f"ni {_q(diff.op_name)}", f"pt {_q(diff.worst_output)}", f"ls -f {_q(diff.fused.passes[0])}"
                if diff.fused.passes else "ls")
    return Culprit(diff.op_name, diff.op_type, FUSION, reasons, commands, diff.fused.passes)


def _compared_outputs(compare, op_name: str):
    """The op's output rows that were compared with the reference (none without a comparison)."""
    return [row for row in _rows_of(compare, op_name) if row.kind == TensorKind.OUTPUT and row.compared]


def _outputs_match(compare, op_name: str) -> bool:
    """True when the comparison compared the op's outputs and every one passes: its overflow cost nothing."""
    rows = _compared_outputs(compare, op_name)
    return bool(rows) and all(row.passed for row in rows)


def _reference_check_text(compare, op_name: str) -> str:
    """Why an overflow op is named although nothing showed its outputs are wrong (it may be harmless)."""
    if compare is None:
        return "not checked against the reference: run ac -c to see whether the overflow costs accuracy"
    if compare.result is None:
        return "not checked against the reference: the comparison did not run"
    if _compared_outputs(compare, op_name):
        matched = _matched_outputs(compare, op_name)
        return "its outputs fail against the reference" + (f"; {_shared_text(matched)}" if matched else "")
    return "not checked against the reference: none of its outputs was compared (no reference for them)"


def _scan_culprit_op(overflow, compare):
    """The dump scan's op to name: its first op introducing inf/NaN/saturation (else the first it lists);
    with a comparison, the first such op whose outputs do not all match the reference and whose NaN/inf are
    not all the reference's own (:func:`_scan_matches_reference`). ``None`` when there is none."""
    scan = overflow.scan
    first = scan.first_introduced if scan is not None else None
    if first is None or compare is None or compare.result is None:
        return first
    introduced = [op for op in scan.ops if op.origin == INTRODUCED] or [first]
    return next((op for op in introduced
                 if not (_outputs_match(compare, op.op_name) or _scan_matches_reference(compare, op))), None)


def _overflow_culprit(overflow, compare=None) -> Optional[Culprit]:
    """The overflow record's op, else the dump scan's (:func:`_scan_culprit_op`); ``None`` for an op whose
    compared outputs all match."""
    first = overflow.records.first
    if first is not None and not (first.located and _outputs_match(compare, first.op_name)):
        reasons = [f"record {first.position} of {overflow.records.records} in the overflow run, the earliest "
                   f"(timestamp {first.timestamp}): " + "; ".join(first.status_lines)]
        if not first.located:
            reasons.append(first.problem)
            return Culprit(f"task {first.task_id} stream {first.stream_id}", "", OVERFLOW_RECORD, tuple(reasons),
                           ("ov",))
        reasons.append(_reference_check_text(compare, first.op_name))
        return Culprit(first.op_name, first.op_type, OVERFLOW_RECORD, tuple(reasons),
                       (f"ni {_q(first.op_name)}", f"pt {_q(first.dump_path)}", "ov"))
    scan_op = _scan_culprit_op(overflow, compare)
    if scan_op is None:
        return None
    return Culprit(scan_op.op_name, scan_op.op_type, DUMP_SCAN,
                   (f"the first op of the normal run whose {_non_finite_text(scan_op)} "
                    f"({scan_op.origin} here)", _reference_check_text(compare, scan_op.op_name)),
                   (f"ni {_q(scan_op.op_name)}", f"pt {_q(f'{scan_op.op_name}:output:{scan_op.worst.index}')}"))


def _earlier_step_lines(compare) -> List[str]:
    """One line when an earlier step of the dump tree diverges than the one compared in detail (the newest:
    :attr:`~.autocheck.CompareSection.steps`); none otherwise."""
    from precision_tool.comparison.tree_runs import first_diverging

    steps: Sequence[StepRun] = getattr(compare, "steps", ())
    first = first_diverging(steps)
    if first is None or first is steps[-1]:
        return []
    asked = getattr(compare, "asked_device", None)
    device = f" --device {first.device}" if asked is not None else ""  # the device asked for stays
    return [f"step {first.step} diverges first, before the step {steps[-1].step} detailed here (first divergence "
            f"{first.first_divergence}, {len(first.failing)} tensor(s) fail): detail it with ac -c --step {first.step}"
            f"{device}"]


def _also(culprit: Optional[Culprit], overflow, fusion, compare) -> List[str]:
    lines = []
    result = getattr(compare, "result", None)
    if result is not None and not result.compared:
        lines.append("nothing was compared: no NPU tensor has a reference counterpart (the NPU dumps hold "
                     f"{'no tensor' if not result.results else 'only tensors without one'}); exit 2")
    named = culprit.op_name if culprit is not None else None
    first = overflow.records.first
    if first is not None and not (named and _same_op(first.op_name, named)):
        text = (f"overflow run: first overflow at {first.op_name or f'task {first.task_id}'} "
                f"({first.op_type or '?'}): {'; '.join(first.status_lines)}")
        if _outputs_match(compare, first.op_name):
            shared = " (its NaN/inf are the reference's too)" if _matched_outputs(compare, first.op_name) else ""
            text += f"; its outputs match the reference in the dump run{shared}, so it cost no accuracy there"
        lines.append(text)
    scan_op = overflow.scan.first_introduced if overflow.scan is not None else None
    if scan_op is not None and not (named and _same_op(scan_op.op_name, named)):
        text = f"normal run: {scan_op.op_name} {_non_finite_text(scan_op)}"
        if _scan_matches_reference(compare, scan_op):
            text += f"; {_shared_text(_matched_outputs(compare, scan_op.op_name))}"
        if _outputs_match(compare, scan_op.op_name):
            text += "; its outputs match the reference, so it cost no accuracy"
        lines.append(text)
    exceptions = getattr(overflow, "exception_dumps", ())
    if exceptions:
        first = exceptions[0].name
        ids = f"task {first.task_id}" if first.stream_id is None else f"stream {first.stream_id}, task {first.task_id}"
        lines.append(f"{len(exceptions)} exception dump(s) of an AI Core error (the inputs of the op that raised it; "
                     f"first: {ids}, {first.time_text}): look at them with pt or convert them with dc")
    if overflow.casts is not None and overflow.casts.lossy:
        cast = overflow.casts.lossy[0]
        lines.append(f"{len(overflow.casts.lossy)} cast(s) lose information, first {cast.op_name} "
                     f"({cast.from_dtype} -> {cast.to_dtype}: {cast.losses[0]})")
    comparison = fusion.comparison
    if comparison is not None:
        others = [op for op in comparison.culprits if op.op_name != named]
        if others:
            lines.append(f"fusion: {len(others)} more fused op(s) differ from their unfused TF ops: "
                         + ", ".join(f"{op.op_name} ({', '.join(op.fused.passes) or '?'})" for op in others[:5]))
        if comparison.other_differences:
            lines.append("fusion-on and fusion-off runs also differ at unfused op(s): "
                         + ", ".join(op.op_name for op in comparison.other_differences[:5]))
    judgment = _judgment(compare)
    if judgment is not None and not judgment.same_model:  # the reference-independent findings above stay
        lines[:0] = mismatch_lines(judgment.mismatches)
    elif judgment is not None:
        lines.extend(drift_lines(judgment.mismatches))
        lines.extend(_attribution_lines(judgment.attribution, compare, named))
        lines.extend(_noise_lines(judgment))
        roots = [op.op_name for op in judgment.divergence.roots if op.op_name != named
                 and not _judged_by_local_error(compare, op.op_name) and not underflows_only(judgment, op.op_name)]
        if roots:
            lines.append(f"{len(roots)} more op(s) fail on good inputs (independent errors): " + ", ".join(roots[:5]))
    matching = compare.result.matching_non_finite_line() if compare is not None and compare.result is not None \
        else ""
    if matching:
        lines.append(matching)
    if compare is not None and compare.result is not None and compare.result.failing \
            and compare.result.divergence.first is None:
        failing = compare.result.failing
        lines.append(f"{len(failing)} tensor(s) fail against the reference but no op output fails on matching "
                     f"inputs (first: {failing[0].tensor_id or failing[0].op_name}): look at them with vcs")
    if compare is not None and compare.error:
        lines.append(f"comparison not run: {compare.error}")
    lines.extend(_earlier_step_lines(compare))
    coverage = compare.result.facts.coverage if compare is not None and compare.result is not None else None
    references = coverage.unreadable_references if coverage is not None else ()  # None: unknown (a CSV)
    if references:
        lines.insert(0, f"{len(references)} reference file(s) could not be read and their tensors were not "
                        f"compared (first: {references[0][1]}): a culprit among them stays hidden; re-run tf_dump")
    replay = compare.replay if compare is not None else None
    if replay is not None and replay.index_problem:
        lines.insert(0, f"replay read reference graphs without their index: {replay.index_problem}")
    overflow_inputs = overflow.unreadable
    if overflow_inputs and overflow.records.first is None:
        lines.insert(0, f"{len(overflow_inputs)} overflow input(s) could not be read (first: {overflow_inputs[0]}): "
                        "an overflow recorded there stays hidden")
    unreadable = coverage.unreadable if coverage is not None else ()
    if unreadable:  # first: an op that could not be compared may be the real culprit
        lines.insert(0, f"{len(unreadable)} NPU dump file(s) could not be read and were not compared (first: "
                        f"{_dump_op_label(unreadable[0][0])}): a culprit among them stays hidden; re-dump them")
    return lines


def _attribution_lines(attribution, compare, named: Optional[str]) -> List[str]:
    """How local error was measured, other ops that stand out, and -- when none does although tensors fail
    the cosine gate -- that the failures are accumulated drift."""
    judgment = _judgment(compare)
    lines = [systemic_line(judgment.systemic)] if judgment is not None and judgment.systemic else []
    lines += [f"local error: {attribution.methods_text}"
             + (f"; median ratio to the floor {attribution.median_ratio:.3g}" if attribution.median_ratio else "")
             + " (the floor: the error the output dtype's rounding alone makes; docs/local-error.md)"]
    if compare.replay is not None and not compare.replay.ran and compare.replay.notes:
        lines[-1] += f" ({compare.replay.notes[0]})"
    others = [op for op in attribution.standouts if op.op_name != named]
    if others:
        lines.append(f"{len(others)} more op(s) add error of their own: "
                     + "; ".join(f"{op.op_name} ({op.summary.split(':')[0]})" for op in others[:5]))
    failing = [row for row in compare.result.failing if judgment is None or not judgment.underflows(row)] \
        if compare.result is not None else []
    if judgment is not None and judgment.underflow:
        lines.append(_underflow_line(judgment))
        roots = {op.op_name for op in judgment.divergence.roots}
        if failing and not any(row.op_name in roots for row in failing):
            lines.append(f"{len(failing)} more tensor(s) fail only by inheriting that error (first: "
                         f"{failing[0].tensor_id})")
            failing = []
    replayed = [op for op in attribution.ops if op.method == METHOD_REPLAY and op.score is not None]
    unmeasured = [op for op in attribution.ops if op.method == METHOD_NONE
                  and any(row.op_name == op.op_name and row.kind == TensorKind.OUTPUT for row in failing)]
    if unmeasured and named is None:
        lines.append(f"{len(unmeasured)} op(s) with a failing output could not be measured, so nothing tells "
                     "whether they add the error: " + "; ".join(f"{op.op_name} ({op.why_not})"
                                                                  for op in unmeasured[:3]))
    elif not attribution.standouts and failing and named is None and replayed:
        worst = max(replayed, key=lambda op: op.score or 0.0)
        above = [op for op in attribution.above_floor if op.method == METHOD_REPLAY]
        coverage = compare.result.facts.coverage if compare.result is not None else None
        unreadable = len(coverage.unreadable) if coverage is not None else 0
        if not above and unreadable:  # the op that adds the error may be one whose dump could not be read
            text = (f"{len(failing)} tensor(s) fail against the reference and no replayed op adds more error than "
                    f"its dtype explains, but {unreadable} dump file(s) could not be read: the op that adds the "
                    f"error may be among them, so this is not shown to be drift")
        elif not above:
            text = (f"{len(failing)} tensor(s) fail against the reference, but every replayed op adds no more "
                    "error than its dtype explains: the differences are accumulated rounding (drift), not one "
                    f"op's fault; the largest local error is {worst.op_name}'s, {worst.score:.2g}x its floor")
        else:
            text = (f"{len(failing)} tensor(s) fail against the reference; {len(above)} replayed op(s) exceed their "
                    f"floor, none by {STANDOUT_FACTOR:g}x the others' median (largest: {worst.op_name}, "
                    f"{worst.score:.2g}x its floor): no single op stands out")
        lines.append(text)
    return lines


def _underflow_line(judgment) -> str:
    """The failing tensors that are float16 underflow (:mod:`precision_tool.comparison.underflow`), and the remedy."""
    from precision_tool.comparison.underflow import underflow_line

    return underflow_line(judgment.underflow) + ": no kernel is at fault"


def _noise_lines(judgment) -> List[str]:
    """One line on the tensors that are rounding noise (``BELOW_NOISE``), when any."""
    from precision_tool.comparison.noise import noise_line

    return [noise_line(judgment) + "; docs/local-error.md"] if judgment.noise else []


def _dump_op_label(path: str) -> str:
    """The op a dump file is of (its sanitised name from the file name), else the file name."""
    from precision_tool.formats.dump_names import parse_dump_name

    name = os.path.basename(path)
    parsed = parse_dump_name(name)
    return parsed.op_name if parsed is not None else name


def _vcs_command(compare) -> str:
    """``vcs``, or ``vcs -f FOLDER`` when the results went to a folder ``vcs`` does not search by itself."""
    out_folder = compare.out_folder if compare is not None else ""
    return f"vcs -f {_q(out_folder)}" if out_folder else "vcs"


def _with_bisect(culprit: Culprit, compare, npu_run: str) -> Culprit:
    """``culprit`` with the bisects that would find its fix: fusion when passes made it and fusion is not cleared
    (a fusion-off run that computes the same), precision when its own float16 or bfloat16 output is measured to add
    the error (local error)."""
    import dataclasses

    from precision_tool.formats.customize_dtypes import is_half

    kinds = []
    cleared = any(reason.startswith("not fusion") for reason in culprit.reasons)
    if culprit.passes and not cleared:
        kinds.append("fusion")
    if culprit.evidence.startswith(LOCAL_ERROR) and any(
            row.kind == TensorKind.OUTPUT and is_half(row.npu_dtype) for row in _rows_of(compare, culprit.op_name)):
        kinds.append("precision")
    extra = tuple(f"bisect {kind} -- {npu_run}" for kind in kinds)
    return dataclasses.replace(culprit, next_commands=culprit.next_commands + extra) if extra else culprit


def _report_command(compare) -> str:
    """When every tensor passes, ``vcs`` would list nothing: the HTML report shows where drift grows instead."""
    out_folder = compare.out_folder if compare is not None else ""
    if not out_folder:
        return "report -o report.html"
    return f"report -f {_q(out_folder)} -o {_q(os.path.join(out_folder, 'report.html'))}"


def _position(compare, op_name: str) -> int:
    return min((row.index for row in _rows_of(compare, op_name)), default=0)


def _judgment(compare):
    """The comparison's :class:`~precision_tool.comparison.judgment.Judgment`, ``None`` without one."""
    return compare.result.verdict if compare is not None and compare.result is not None else None


def _judged_by_local_error(compare, op_name: str) -> bool:
    judgment = _judgment(compare)
    return judgment is not None and judged_by_local_error(judgment, op_name)


NPU_RUN_PLACEHOLDER = "YOUR_NPU_RUN (the training script with action='dump|fusion_switch')"


def decide_verdict(overflow, fusion, compare=None, npu_run: str = "") -> "Verdict":
    """Apply the rules (docs/internals/checks.md#run_verdict) to the three sections (``compare`` may be ``None``;
    its ``out_folder`` goes into the ``vcs`` hint): the culprit is
    :func:`~precision_tool.comparison.judgment.decide_culprit`'s, this module writes its reasons. A culprit blamed
    on fusion, or one whose failing output is float16 and whose own local error stands out, gets ``bisect fusion`` /
    ``bisect precision -- NPU_RUN`` among its next commands (``npu_run``: the NPU run as a command line, else a
    placeholder)."""
    judgment = _judgment(compare)
    fusion_culprits = fusion.comparison.culprits if fusion.comparison is not None else ()
    overflow_culprit = _overflow_culprit(overflow, compare)
    choice = decide_culprit(judgment, fusion_culprits,
                            None if overflow_culprit is None else (overflow_culprit.op_name, overflow_culprit))
    culprit = None
    if choice is None:
        pass
    elif choice.method == METHOD_DIVERGENCE:
        culprit = _divergence_culprit(choice.divergence, overflow, fusion, compare)
    elif choice.method == METHOD_FUSION:
        culprit = _fusion_culprit(choice.evidence)
    elif choice.method == METHOD_OVERFLOW:
        culprit = choice.evidence
    else:
        culprit = _local_error_culprit(choice.measured, overflow, fusion, compare)
    if culprit is not None:
        culprit = _with_bisect(culprit, compare, npu_run or NPU_RUN_PLACEHOLDER)
    next_commands: Tuple[str, ...] = culprit.next_commands if culprit is not None else ()
    if compare is None:
        next_commands += ("ac -c",)
    elif culprit is None and compare.result is not None and judgment is not None and judgment.same_model:
        next_commands += (_vcs_command(compare) if compare.result.failing_in_order() else _report_command(compare),)
        if judgment.underflow:
            next_commands += (f"bisect precision -- {npu_run or NPU_RUN_PLACEHOLDER}",)
    checked = compare is not None and compare.result is not None
    withheld = "the two runs do not compute the same model" if judgment is not None and not judgment.same_model \
        else ""
    return Verdict(culprit, tuple(_also(culprit, overflow, fusion, compare)), next_commands, checked, withheld)
