"""Faults that hit many ops: the ops of one fusion pass, or of one op type, beyond Ascend's standard.

A wrong kernel or fusion pass makes every op it touches wrong, so nothing stands out against the other ops. The
groups are the fusion passes that made an op (the GE graph's ``pass_name``/``pass_name_ub``) and the NPU op types.
A group is **systemic** when at least :data:`MIN_OPS` of its replayed ops are beyond the spec
(:attr:`~.attribution.OpAttribution.beyond_spec`) and they are more than half of its replayed ops. Passes come
first, then op types; a group whose ops are some of a named group's is not named again. Ordering and ties:
docs/internals/comparison.md#systemic-faults.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from precision_tool.comparison.attribution import METHOD_REPLAY, Attribution

KIND_PASS, KIND_TYPE = "fusion pass", "op type"
#: The fewest ops a systemic fault is named for: one op is an op's fault.
MIN_OPS = 2


@dataclass(frozen=True)
class SystemicFault:
    """``ops``: the group's ops beyond the spec (execution order), of ``measured`` replayed ops in the group."""

    kind: str
    name: str
    ops: Tuple[str, ...]
    measured: int

    @property
    def text(self) -> str:
        """``fusion pass ConvBatchnormFusionPass: 16 of 16 replayed ops beyond Ascend's standard (a, b, c, ...)``."""
        shown = ", ".join(self.ops[:3]) + (", ..." if len(self.ops) > 3 else "")
        return (f"{self.kind} {self.name}: {len(self.ops)} of {self.measured} replayed op(s) beyond Ascend's "
                f"operator standard ({shown})")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "ops": list(self.ops), "measured": self.measured}


def systemic_faults(attribution: Attribution, passes: Mapping[str, Sequence[str]]) -> Tuple[SystemicFault, ...]:
    """The systemic faults of ``attribution`` (module docstring); ``passes``: NPU op name -> the fusion passes that
    made it (empty without a graph: op types only)."""
    replayed = [op for op in attribution.ops if op.method == METHOD_REPLAY and op.score is not None]
    by_pass: Dict[str, List] = {}
    by_type: Dict[str, List] = {}
    for op in replayed:
        for name in dict.fromkeys(passes.get(op.op_name, ())):
            by_pass.setdefault(name, []).append(op)
        by_type.setdefault(op.op_type, []).append(op)
    found: List[SystemicFault] = []
    for kind, groups in ((KIND_PASS, by_pass), (KIND_TYPE, by_type)):
        named = []
        for name, ops in groups.items():
            beyond = tuple(op.op_name for op in ops if op.beyond_spec)
            if len(beyond) >= MIN_OPS and 2 * len(beyond) > len(ops):
                named.append(SystemicFault(kind, name, beyond, len(ops)))
        named.sort(key=lambda fault: (-len(fault.ops) / fault.measured, -len(fault.ops), fault.name))
        for fault in named:  # a group of some of a named one's ops adds nothing to it (the same ops: both named)
            if not any(set(fault.ops) < set(other.ops) for other in found):
                found.append(fault)
    return tuple(found)


def systemic_line(faults: Sequence[SystemicFault]) -> str:
    """The one line every report prints: ``Systemic: ...; ...`` -- a kernel or pass fault, not one op's."""
    return ("Systemic: " + "; ".join(fault.text for fault in faults)
            + " -- a wrong kernel or fusion pass hits every op it touches; fix or switch off the "
            + ("pass (fusion_switch.cfg)" if faults[0].kind == KIND_PASS else "op type's kernel (precision_mode, "
               "customize_dtypes)"))
