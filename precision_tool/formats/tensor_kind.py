"""Which side of an op a dumped tensor is on: :class:`TensorKind`, the one spelling of ``input``/``output``.

Dump headers list an op's inputs and outputs; tensor ids (``op:output:0``, msaccucmp's ``TensorIndex``), the
first-divergence verdicts and every report name a tensor by its kind. A :class:`TensorKind` is a ``str``, so
``TensorKind.OUTPUT == "output"`` and ids parsed from text compare equal to it.

>>> TensorKind("output") is TensorKind.OUTPUT, f"conv:{TensorKind.INPUT}:0"
(True, 'conv:input:0')
>>> TensorKind.parse("reference") is None
True
"""
from __future__ import annotations

from enum import Enum
from typing import Optional


class TensorKind(str, Enum):
    INPUT = "input"
    OUTPUT = "output"

    @classmethod
    def parse(cls, text: str) -> Optional["TensorKind"]:
        """The kind spelled ``text``, or ``None`` when it is neither ``input`` nor ``output``."""
        try:
            return cls(text)
        except ValueError:
            return None

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


INPUT, OUTPUT = TensorKind.INPUT, TensorKind.OUTPUT
