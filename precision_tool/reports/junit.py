"""JUnit XML for CI dashboards: one test case per NPU tensor, written atomically.

One ``<testsuite name="precision_tool.compare">`` with the cosine threshold and first divergence as properties, and
one ``<testcase classname=OP_TYPE name=TENSOR_ID>`` per row in execution order: empty when it passes, ``<failure>``
when it fails, ``<error>`` when it is ``ERROR`` (aligned but unreadable), ``<skipped>`` when it was not compared.
The element by element layout: docs/internals/reports.md#junit.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

from precision_tool.comparison import ComparisonResult, TensorResult
from precision_tool.compat import indent_xml
from precision_tool.fileio import atomic_write
from precision_tool.metrics import ALL, format_value
from precision_tool.status import Status

SUITE_NAME = "precision_tool.compare"
# Characters XML 1.0 cannot hold at all (ElementTree would write them and produce an unreadable file).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with characters XML 1.0 forbids (control characters, lone surrogates) replaced by ``?``."""
    return _NOT_XML.sub("?", text)


def _details(result: TensorResult) -> str:
    lines = [f"reference: {result.reference}", f"rule: {result.rule}"]
    lines += [f"{name}: {format_value(name, value)}" for name, value in zip(ALL, result.metrics)]
    if result.allclose_ratio is not None:
        lines.append(f"allclose ratio: {result.allclose_ratio:.6f}")
    lines += [f"note: {note}" for note in result.notes]
    return xml_text("\n".join(lines))


def build_junit(result: ComparisonResult) -> ET.ElementTree:
    """The JUnit tree of one run (see the module docstring)."""
    rows = result.results
    failures = sum(1 for r in rows if r.compared and not r.passed)
    errors = sum(1 for r in rows if r.status is Status.ERROR)
    skipped = sum(1 for r in rows if not r.compared and r.status is not Status.ERROR)
    root = ET.Element("testsuites", name="precision_tool", tests=str(len(rows)), failures=str(failures),
                      errors=str(errors), skipped=str(skipped), time=f"{result.timing.compare_s:.3f}")
    suite = ET.SubElement(root, "testsuite", name=SUITE_NAME, tests=str(len(rows)), failures=str(failures),
                          errors=str(errors), skipped=str(skipped), time=f"{result.timing.compare_s:.3f}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="cosine_threshold", value=str(result.cosine_threshold))
    first = result.divergence.first
    ET.SubElement(properties, "property", name="first_divergence", value=xml_text(first.op_name) if first else "")
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname=xml_text(row.op_type or row.op_name),
                             name=xml_text(row.tensor_id or row.op_name))
        if row.status is Status.ERROR:
            ET.SubElement(case, "error", type=Status.ERROR.value, message=xml_text(row.reason)).text = _details(row)
        elif row.compared and not row.passed:
            ET.SubElement(case, "failure", type=row.status.value, message=xml_text(row.reason)).text = _details(row)
        elif not row.compared:
            ET.SubElement(case, "skipped", message=xml_text(f"{row.status.value}: {row.reason}"))
    indent_xml(root)
    return ET.ElementTree(root)


def write_junit(path, result: ComparisonResult) -> str:
    """Write the JUnit XML of ``result`` atomically; returns ``path``."""
    tree = build_junit(result)
    with atomic_write(path, "wb") as handle:
        tree.write(handle, encoding="utf-8", xml_declaration=True)
    return os.fspath(path)
