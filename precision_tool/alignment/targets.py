"""What an NPU tensor stands for: a TF tensor (:class:`Target`) or nothing, with the reason (:class:`NoTarget`).

The graph rules (:mod:`.graph_alignment`) and the name rules (:mod:`.name_alignment`) both answer with these;
the reference lookup happens afterwards, once every TF name is known (so ambiguity can be judged).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple, Union


@dataclass(frozen=True)
class Target:
    """TF tensor ``name:index``, found by ``rule``; ``via`` lists the NPU producers visited to get there,
    nearest first (the last one's output named the tensor); empty when the tensor's own op named it."""

    name: str
    index: int
    rule: str
    via: Tuple[str, ...] = ()

    @property
    def tensor(self) -> Tuple[str, int]:
        return (self.name, self.index)


@dataclass(frozen=True)
class NoTarget:
    """No TF tensor: ``reason`` is one line for the coverage report; ``ambiguous`` is set (one line) when the
    reason is that several tensors could be meant."""

    reason: str
    ambiguous: str = ""


Resolution = Union[Target, NoTarget]
