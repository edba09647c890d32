"""Escaping and a tiny element builder for HTML and SVG text: every name that reaches the page goes through here.

Op names come from user graphs and can hold anything (``-neg/<script>``, quotes, ``&``, control bytes). The
rule is simple: every text node and every attribute value is built by :func:`text` / :func:`element`, which
escape ``& < > " '`` and replace the control characters XML 1.0 forbids (so an exported ``.svg`` file stays
well-formed). Nothing from the data is ever put into a ``<script>``: the page's JavaScript reads the DOM.
"""
from __future__ import annotations

import html
import re
from typing import Mapping, Optional, Union

_FORBIDDEN_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
REPLACEMENT = "\ufffd"

Attrs = Mapping[str, Union[str, int, float, None, bool]]


def text(value) -> str:
    """``value`` as HTML/XML text or attribute content: ``& < > " '`` escaped, control characters replaced.

    >>> text('-neg/<script>"x"')
    '-neg/&lt;script&gt;&quot;x&quot;'
    >>> text("a\\x00b")
    'a\\ufffdb'
    """
    return html.escape(_FORBIDDEN_IN_XML.sub(REPLACEMENT, str(value)), quote=True)


def attributes(attrs: Optional[Attrs]) -> str:
    """`` name="value"`` pairs; ``None`` and ``False`` leave the attribute out, ``True`` writes ``name="name"``.

    Names are ours (never data); a trailing underscore is dropped (``class_`` -> ``class``), other underscores
    become dashes (``data_row`` -> ``data-row``), so Python keywords and data attributes read naturally.
    """
    if not attrs:
        return ""
    parts = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        parts.append(f' {name}="{text(name if value is True else value)}"')
    return "".join(parts)


def element(name: str, content: str = "", attrs: Optional[Attrs] = None, **more) -> str:
    """``<name attrs>content</name>``; ``content`` must already be markup (use :func:`text` for data).

    >>> element("td", text("a<b"), class_="num")
    '<td class="num">a&lt;b</td>'
    """
    merged = dict(attrs or {})
    merged.update(more)
    return f"<{name}{attributes(merged)}>{content}</{name}>"


def void(name: str, attrs: Optional[Attrs] = None, **more) -> str:
    """An element without content: ``<name attrs/>`` (valid in SVG and, for void elements, in HTML)."""
    merged = dict(attrs or {})
    merged.update(more)
    return f"<{name}{attributes(merged)}/>"


def number(value: float, digits: int = 2) -> str:
    """A coordinate for SVG: fixed decimals without trailing zeros (``12.5``, ``3``)."""
    out = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if out in ("-0", "") else out
