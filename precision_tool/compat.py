"""The few standard-library features newer than Python 3.7 that precision_tool uses, with 3.7 fallbacks.

Huawei's TensorFlow adapter runs TF 1.15 on Python 3.7, and precision_tool installs there (issue 12), so the package
must import and behave the same on 3.7 through 3.13 (``vermin``, run by ``make lint``, finds any other newer
feature). Each name is the standard one where it exists: :data:`cached_property` (3.8), :func:`prod` (3.8),
:func:`indent_xml` (``ElementTree.indent``, 3.9); what each does: docs/internals/package.md#compat.

>>> prod(()), prod((2, 3, 4))
(1, 24)
"""
from __future__ import annotations

import functools
import math
import operator
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

__all__ = ["cached_property", "prod", "indent_xml"]


class _CachedProperty:
    """Python 3.7's stand-in for ``functools.cached_property`` (no lock, like the 3.12 one)."""

    def __init__(self, func: Callable[[Any], Any]):
        self.func = func
        self.attrname = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.attrname = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value
        return value


cached_property: Any = getattr(functools, "cached_property", _CachedProperty)


def _prod(values: Iterable[int]) -> int:
    return functools.reduce(operator.mul, values, 1)


prod: Callable[[Iterable[int]], int] = getattr(math, "prod", _prod)


def _indent(element: ET.Element, space: str = "  ", level: int = 0) -> None:
    """Same whitespace as ``ElementTree.indent``: children one ``space`` deeper, text/tails only where empty."""
    if not len(element):
        return
    child_indent = "\n" + space * (level + 1)
    if not element.text or not element.text.strip():
        element.text = child_indent
    for child in element:
        _indent(child, space, level + 1)
        if not child.tail or not child.tail.strip():
            child.tail = child_indent
    if not (child.tail or "").strip():  # the last child closes back to this element's own level
        child.tail = "\n" + space * level


def indent_xml(tree, space: str = "  ") -> None:
    """Indent ``tree`` (an Element or ElementTree) in place, as ``ET.indent(tree, space)`` does on 3.9+."""
    import xml.etree.ElementTree as ET  # here: only the JUnit writer needs it, not every command's start-up

    native = getattr(ET, "indent", None)
    if native is not None:
        native(tree, space)
        return
    _indent(tree.getroot() if isinstance(tree, ET.ElementTree) else tree, space)
