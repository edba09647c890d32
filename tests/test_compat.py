"""precision_tool.compat: the Python 3.7 fallbacks behave as the standard library they stand in for."""
import math
import xml.etree.ElementTree as ET

import pytest

from precision_tool import compat


def _tree():
    root = ET.Element("testsuites", name="x")
    suite = ET.SubElement(root, "testsuite")
    ET.SubElement(suite, "testcase", name="a")
    case = ET.SubElement(suite, "testcase", name="b")
    failure = ET.SubElement(case, "failure", message="m")
    failure.text = "kept text"
    ET.SubElement(root, "empty")
    return root


@pytest.mark.compat
def test_fallback_indent_writes_the_bytes_python_39_writes():
    fallback = _tree()
    compat._indent(fallback, "  ")
    expected = (b'<testsuites name="x">\n  <testsuite>\n    <testcase name="a" />\n    <testcase name="b">\n'
                b'      <failure message="m">kept text</failure>\n    </testcase>\n  </testsuite>\n  <empty />\n'
                b'</testsuites>')
    assert ET.tostring(fallback) == expected  # written out by hand from the 3.9+ rules
    if hasattr(ET, "indent"):  # and checked against the standard library where it exists
        native = _tree()
        ET.indent(native)
        assert ET.tostring(native) == expected


@pytest.mark.compat
def test_indent_xml_accepts_a_tree_and_leaves_a_childless_root_alone():
    tree = ET.ElementTree(_tree())
    compat.indent_xml(tree)
    assert ET.tostring(tree.getroot()).startswith(b'<testsuites name="x">\n  <testsuite>')
    lone = ET.Element("lone")
    compat._indent(lone)
    assert ET.tostring(lone) == b"<lone />"


@pytest.mark.compat
def test_fallback_prod_and_cached_property_match_the_standard_ones():
    assert compat._prod([]) == 1 and compat._prod((3, 5, 7)) == 105 and compat._prod([2] * 100) == 2 ** 100
    if hasattr(math, "prod"):
        assert compat._prod((4, 0, 9)) == math.prod((4, 0, 9))

    class Counter:
        calls = 0

        @compat._CachedProperty
        def value(self):
            """The doc."""
            Counter.calls += 1
            return 42

    counter = Counter()
    assert (counter.value, counter.value, Counter.calls) == (42, 42, 1)
    assert counter.__dict__["value"] == 42 and Counter.value.__doc__ == "The doc."
