"""Op names are data: ``-neg/<script>`` and friends are shown as text everywhere (HTML, inline SVG, SVG files)."""
import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from html_builders import EVIL, tensor, write_synthetic_result
from precision_tool.reports.html import build_report, render_page
from precision_tool.reports.html.export import safe_file_part, write_plots
from precision_tool.reports.html.markup import element, text
from precision_tool.reports.html.plot import PlotPoint, accuracy_plot_svg

CONTROL = "bad\x01name\x1f"


class Texts(HTMLParser):
    """Every script body, every text node and every attribute value, unescaped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts, self.data_blocks, self.texts, self.values, self._in_script = [], [], [], [], ""

    def handle_starttag(self, tag, attrs):
        self._in_script = (dict(attrs).get("type") or "code") if tag == "script" else ""
        self.values += [value for _name, value in attrs if value is not None]

    def handle_endtag(self, tag):
        self._in_script = ""

    def handle_data(self, data):
        if self._in_script == "application/json":  # never run: the graph view's data, parsed with JSON.parse
            self.data_blocks.append(data)
        else:
            (self.scripts if self._in_script else self.texts).append(data)


@pytest.fixture
def evil_page(tmp_path):
    rows = [tensor(0, "input_op", cosine=1.0), tensor(1, EVIL, "input", 0, cosine=1.0),
            tensor(1, EVIL, cosine=0.5, status="FAIL", reason="", op_type="<b>Neg</b>"),
            tensor(2, CONTROL, cosine=0.2, status="FAIL")]
    csv = write_synthetic_result(tmp_path / "out", rows, edges={EVIL: [["input_op", 0]], CONTROL: [[EVIL, 0]]})
    data = build_report(str(csv), run_checks=False)
    return data, render_page(data)


def test_markup_text_escapes_every_special_character():
    assert text(EVIL) == "-neg/&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&quot;q&quot;"
    assert element("td", text("<i>"), title='"><script>') == '<td title="&quot;&gt;&lt;script&gt;">&lt;i&gt;</td>'


def test_a_script_in_an_op_name_never_becomes_a_script(evil_page):
    data, page = evil_page
    assert data.first_divergence == EVIL
    assert "<script>alert" not in page and "<b>Neg</b>" not in page
    parsed = Texts()
    parsed.feed(page)
    assert len(parsed.scripts) == 3 and not any("alert" in script for script in parsed.scripts)  # our own three
    (payload,) = parsed.data_blocks
    assert "</script" not in payload.lower() and EVIL in json.loads(payload)["culprit"]  # data, kept exact
    assert f"first divergence: {EVIL}" in parsed.texts  # shown, as text, on the marker
    assert EVIL in parsed.values  # data-op of the marker and the table rows, round-tripped exactly
    assert "<b>Neg</b>" in parsed.texts


def test_control_characters_are_replaced_so_svg_files_stay_well_formed(evil_page, tmp_path):
    data, page = evil_page
    assert "\x01" not in page and "\x1f" not in page and "bad\ufffdname\ufffd" in page
    exported = write_plots(data, str(tmp_path / "plots"), png=False)
    svg = tmp_path / "plots" / "accuracy_plot.svg"
    assert str(svg) in exported.files and exported.png_note == "PNG not asked for"
    root = ET.parse(svg).getroot()  # raises on any unescaped name
    titles = [node.text for node in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(EVIL in title for title in titles)


def test_standalone_svg_has_no_links_and_inline_svg_has_no_namespace_url():
    point = PlotPoint(0, 1, f"{EVIL}:output:0", EVIL, 0.5, 1.0, True)
    inline = accuracy_plot_svg([point], 0.99, EVIL)
    standalone = accuracy_plot_svg([point], 0.99, EVIL, standalone=True)
    assert "http" not in inline and 'href="#row-0"' in inline
    assert "href" not in standalone and 'xmlns="http://www.w3.org/2000/svg"' in standalone
    ET.fromstring(standalone)


def test_file_names_from_op_names_are_safe():
    assert safe_file_part(EVIL + ":output:0") == "-neg_script_alert_x_script_q_output_0"
    assert safe_file_part("../../etc/passwd") == ".._.._etc_passwd"
    assert "/" not in safe_file_part("a/b") and safe_file_part("////") == "tensor"
