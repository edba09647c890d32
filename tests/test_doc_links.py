"""Every ``docs/FILE.md#section`` a docstring or a doc points to exists (issue 41: the long explanations moved out of
the docstrings into docs/, and a pointer that leads nowhere is an explanation lost).

Anchors are GitHub's: the heading lower-cased, punctuation other than ``-`` and ``_`` dropped, spaces made ``-``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# docs/FILE.md or docs/internals/FILE.md, optionally #anchor, as written in docstrings and comments
CODE_POINTER = re.compile(r"(?<![\w/])docs/((?:internals/)?[\w.-]+\.md)(?:#([\w-]+))?")
# ](target.md#anchor) links inside the docs
MD_LINK = re.compile(r"\]\(((?:\.\./|internals/)?[\w./-]*\.md)?(?:#([\w-]+))?\)")


def anchor_of(heading: str) -> str:
    """GitHub's anchor of a Markdown heading.

    >>> anchor_of("NPU vs NPU"), anchor_of("`ac -c`, step by step"), anchor_of("dump_tree")
    ('npu-vs-npu', 'ac--c-step-by-step', 'dump_tree')
    """
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set:
    found, fenced = set(), False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(anchor_of(line.lstrip("#")))
    return found


def test_the_anchor_rule_matches_github_on_known_headings():
    assert anchor_of("Set-up: two commands") == "set-up-two-commands"
    assert anchor_of("Tensor arguments (`pt`, `cp`)") == "tensor-arguments-pt-cp"


def _code_pointers():
    for path in sorted((ROOT / "precision_tool").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CODE_POINTER.finditer(line):
                yield f"{path.relative_to(ROOT)}:{number}", DOCS / match.group(1), match.group(2)


def _doc_links():
    for doc in sorted(DOCS.rglob("*.md")):
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for match in MD_LINK.finditer(line):
                target = (doc.parent / match.group(1)).resolve() if match.group(1) else doc
                yield f"{doc.relative_to(ROOT)}:{number}", target, match.group(2)


@pytest.mark.parametrize("where, doc, anchor", [*_code_pointers(), *_doc_links()],
                         ids=lambda value: value if isinstance(value, str) else None)
def test_every_pointer_to_the_docs_leads_somewhere(where, doc, anchor):
    assert doc.is_file(), f"{where}: {doc} does not exist"
    if anchor:
        assert anchor in anchors(doc), f"{where}: {doc.name} has no section #{anchor}"


def test_the_pointers_were_found():
    """The scan itself works: the package points into docs/internals/ many times (issue 41)."""
    assert sum(1 for _, doc, _ in _code_pointers() if "internals" in doc.parts) > 50
