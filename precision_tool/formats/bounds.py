"""Limits on what a hostile or broken file can make a reader build: dimensions, integer digits, JSON numbers.

* :func:`ndim_problem`: more than :data:`MAX_NDIM` dimensions (what this numpy holds) is refused in words.
* :func:`parse_decimal`: only ASCII digits ``[0-9]``, at most ``max_digits`` of them; ``None`` for anything else.
* :func:`json_decoder`: an integer of more than :data:`MAX_JSON_INT_DIGITS` digits raises
  :class:`JsonNumberTooLong` (a ``ValueError``); callers also catch ``RecursionError`` (deep nesting).

Why each limit: docs/internals/formats.md#bounds.
"""
from __future__ import annotations

import json
import re
from typing import Optional

import numpy as np

MAX_JSON_INT_DIGITS = 30
"""Digits (sign not counted) of the longest integer a JSON reader accepts: any count or id fits in 20."""

UINT64_DIGITS = 20
"""Digits of 2**64 - 1: no id, size or timestamp in a file name or a count needs more."""

_ASCII_DIGITS = re.compile(r"[0-9]+")


def _numpy_max_ndim() -> int:
    """The most dimensions this numpy allows: ``np.MAXDIMS`` (numpy 1.x), else probed with 1-element arrays."""
    declared = getattr(np, "MAXDIMS", None)
    if isinstance(declared, int) and declared > 0:
        return declared
    for candidate in (64, 32):
        try:
            np.empty((1,) * candidate, dtype=np.uint8)
        except ValueError:
            continue
        return candidate
    return 32


MAX_NDIM = _numpy_max_ndim()


def ndim_problem(ndim: int, what: str = "shape") -> Optional[str]:
    """``None`` when numpy can hold ``ndim`` dimensions, else the cause for a one-line error.

    >>> ndim_problem(4) is None
    True
    >>> ndim_problem(MAX_NDIM + 1) == f"shape has {MAX_NDIM + 1} dimensions; numpy holds at most {MAX_NDIM}"
    True
    """
    if ndim <= MAX_NDIM:
        return None
    return f"{what} has {ndim} dimensions; numpy holds at most {MAX_NDIM}"


def parse_decimal(text: str, max_digits: int = UINT64_DIGITS) -> Optional[int]:
    """``int(text)`` when ``text`` is 1 to ``max_digits`` ASCII digits, else ``None`` (never raises).

    Leading zeros count as digits. Signs, spaces, underscores and non-ASCII digits (``'²'``, ``'٣'``) are
    refused: a name field or a count is plain ``[0-9]+``.

    >>> parse_decimal("0042"), parse_decimal("²"), parse_decimal("9" * 21), parse_decimal("-1")
    (42, None, None, None)
    """
    if not isinstance(text, str) or len(text) > max_digits or _ASCII_DIGITS.fullmatch(text) is None:
        return None
    return int(text)


class JsonNumberTooLong(ValueError):
    """A JSON integer with more than :data:`MAX_JSON_INT_DIGITS` digits."""


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise JsonNumberTooLong(f"a number of {digits:,} digits (more than {MAX_JSON_INT_DIGITS})")
    return int(text)


def json_decoder() -> json.JSONDecoder:
    """A ``JSONDecoder`` whose integers have at most :data:`MAX_JSON_INT_DIGITS` digits (see module doc)."""
    return json.JSONDecoder(parse_int=_bounded_int)


def loads_json(text: str):
    """``json.loads(text)`` with bounded integers; raises ``ValueError`` (incl. ``JSONDecodeError``,
    :class:`JsonNumberTooLong`) or ``RecursionError`` for the caller to turn into its typed error."""
    return json_decoder().decode(text)


def shown_name(text: str, limit: int = 120) -> str:
    """``repr(text)`` cut to ``limit`` characters, for a name read from a damaged file in a one-line message:
    control characters (NUL, ESC) come out escaped and a megabyte-long name stays short.

    >>> print(shown_name("a" + chr(0) + "b"), len(shown_name("x" * 1000)))
    'a\\x00b' 120
    """
    shown = repr(text)
    return shown if len(shown) <= limit else shown[:limit - 4] + "...'"
