"""fusion_result.json in every shape found in the wild, and damaged by concurrent writers.

The real files of ``../shared/real-world/fusion`` (written by CANN, committed by the people who ran it) are
checked against an independent parse made here: every ``{...}`` of at most three nested levels is located
with a regular expression and kept when ``json.loads`` reads it as a record (it holds ``graph_fusion`` or
``ub_fusion``) -- nothing of the reader under test is used. Hand-written texts pin each shape and each kind of
damage, with byte offsets counted in the test.
"""
import collections
import json
import re
from pathlib import Path

import pytest

from precision_tool.cli import main
from precision_tool.errors import FusionFormatError
from precision_tool.formats.fusion_result import GRAPH_FUSION, UB_FUSION, parse_fusion_result, read_fusion_result

REAL = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "fusion"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent (real artifacts live beside the "
                                                          "checkout, never in it)")
REAL_FILES = sorted(REAL.glob("*/fusion_result.json")) if REAL.is_dir() else []
DAMAGED = "PKU-YuanGroup+Open-Sora-Plan"

_OBJECT = re.compile(r"\{(?:[^{}\x00]|\{(?:[^{}\x00]|\{[^{}\x00]*\})*\})*\}")


def independent_records(text: str):
    """Every complete record of ``text``, found without the reader (module docstring)."""
    found = []
    for match in _OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict) and (GRAPH_FUSION in obj or UB_FUSION in obj):
            found.append(obj)
    return found


def sums(records):
    """``{(family, pass): [match_times, effect_times]}`` summed over raw JSON records."""
    totals = collections.defaultdict(lambda: [0, 0])
    for record in records:
        for family in (GRAPH_FUSION, UB_FUSION):
            for name, counts in record.get(family, {}).items():
                totals[(family, name)][0] += int(counts.get("match_times", 0))
                totals[(family, name)][1] += int(counts.get("effect_times", 0))
    return dict(totals)


def reader_sums(result):
    totals = collections.defaultdict(lambda: [0, 0])
    for graph in result.graphs:
        for record in graph.passes:
            totals[(record.family, record.name)][0] += record.match_times
            totals[(record.family, record.name)][1] += record.effect_times
    return dict(totals)


def raw_ids(record):
    """``(session, graph)`` as a record states them: ``session_and_graph_id`` or ``sessionId``/``graphId``."""
    if "session_and_graph_id" in record:
        session, graph = record["session_and_graph_id"].split("_")
        return int(session), int(graph)
    return (int(record["sessionId"]) if "sessionId" in record else None,
            int(record["graphId"]) if "graphId" in record else None)


# ------------------------------------------------------------------------------------------ the real files
@needs_real
@pytest.mark.parametrize("path", REAL_FILES, ids=[p.parent.name for p in REAL_FILES])
def test_every_real_file_reads_every_record_with_the_counts_it_states(path):
    text = path.read_text(encoding="utf-8")
    expected = independent_records(text)
    result = read_fusion_result(path)
    assert expected, "the independent parse found no record: the test would prove nothing"
    assert len(result.graphs) == len(expected)
    assert reader_sums(result) == sums(expected)
    assert (result.damage != "") == (path.parent.name == DAMAGED)
    keyed = text.lstrip().startswith('{\n    "session_and_graph_id_')
    if not keyed:  # ids inside each record, in file order
        assert [(g.session_id, g.graph_id) for g in result.graphs] == [raw_ids(r) for r in expected]
    else:  # the current form: ids in the keys of one object
        keys = list(json.loads(text))
        assert [g.key for g in result.graphs] == keys
        assert [(g.session_id, g.graph_id) for g in result.graphs] == [
            tuple(int(v) for v in re.fullmatch(r"session_and_graph_id_(\d+)_(\d+)", k).groups()) for k in keys]


@needs_real
def test_the_real_tf_file_keeps_session_and_graph_apart():
    """Older TF runs write ``graphId`` and ``sessionId`` apart: the session used to be dropped."""
    result = read_fusion_result(REAL / "MZ+ResNet50_TF2" / "fusion_result.json")
    record = json.loads((REAL / "MZ+ResNet50_TF2" / "fusion_result.json").read_text())
    assert [(g.session_id, g.graph_id) for g in result.graphs] == [(int(record["sessionId"]),
                                                                    int(record["graphId"]))]
    assert result.graphs[0].key == f"session_and_graph_id_{record['sessionId']}_{record['graphId']}"


@needs_real
def test_the_damaged_real_file_names_its_first_damage_by_byte_offset():
    """The file two writers interleaved: everything before the first ``}[,{`` is clean JSON arrays written
    back to back (checked here with json.loads), so the damage starts at that ``[``."""
    path = REAL / DAMAGED / "fusion_result.json"
    data = path.read_bytes()
    first = data.index(b"}[,{") + 1
    clean_prefix = data[:first].decode("utf-8")
    assert json.loads(clean_prefix.replace("}][{", "},{") + "]")  # arrays back to back, nothing damaged
    result = read_fusion_result(path)
    assert result.damage.startswith(f"damaged at byte {first} ('[' cannot stand there), and ")
    assert f"read the {len(independent_records(data.decode('utf-8')))} complete record(s)" in result.damage
    assert data.count(b"\x00") > 0  # NUL runs too, all inside the damaged stretch


@needs_real
@pytest.mark.parametrize("name, exit_code", [(DAMAGED, 2), ("Tany-g+yolov5_Ascend", 0)])
def test_fusion_on_a_real_file_never_contradicts_its_notes(tmp_path, capsys, name, exit_code):
    (tmp_path / "fusion").mkdir()
    (tmp_path / "fusion" / "fusion_result.json").write_bytes((REAL / name / "fusion_result.json").read_bytes())
    records = independent_records((REAL / name / "fusion_result.json").read_text(encoding="utf-8"))
    assert main(["-d", str(tmp_path), "fusion", "--no-compare"]) == exit_code
    out = capsys.readouterr().out
    effective = {key for key, (_, effect) in sums(records).items() if effect > 0}
    assert f"Fusion: {len(effective)} pass(es) took effect (fusion_result.json holds {len(records)} graph " \
           "record(s)" in out
    assert "no pass recorded" not in out
    if exit_code == 2:
        assert "fusion_result.json: damaged at byte " in out
        assert "could be read only in part" in out.splitlines()[-1]


# ------------------------------------------------------------------------------------------ hand-written
RECORD = '{"graph_fusion": {"P": {"match_times": "%d", "effect_times": "%d"}}, "session_and_graph_id": "%s"}'


def test_an_array_and_arrays_back_to_back_are_every_record_in_file_order():
    text = "[" + RECORD % (2, 1, "0_1") + ", " + RECORD % (3, 0, "0_2") + "]\n[" + RECORD % (4, 4, "0_1") + "]"
    result = parse_fusion_result(text)
    assert [(g.session_id, g.graph_id) for g in result.graphs] == [(0, 1), (0, 2), (0, 1)]
    assert [(g.passes[0].match_times, g.passes[0].effect_times) for g in result.graphs] == [(2, 1), (3, 0), (4, 4)]
    assert result.damage == ""


def test_graph_id_and_session_id_apart_keep_two_sessions_of_one_graph_apart():
    text = ('{"graphId": "1", "sessionId": "0", "ub_fusion": {"TbeX": {"match_times": "1", "effect_times": "1"}}}'
            '{"graphId": "1", "sessionId": "1", "ub_fusion": {"TbeX": {"match_times": "2", "effect_times": "0"}}}')
    result = parse_fusion_result(text)
    assert [g.key for g in result.graphs] == ["session_and_graph_id_0_1", "session_and_graph_id_1_1"]


@pytest.mark.parametrize("between, cause", [
    (",[,", "'[' cannot stand there"),               # two writers interleaved: '}[,{'
    (",\x00\x00\x00\x00\x00\x00\x00,", "7 NUL byte(s)"),  # a stretch of the file never written
    ("", "two records without a ',' between them"),  # '}{' inside an array
])
def test_damage_between_records_is_named_by_byte_offset_and_both_records_are_kept(between, cause):
    head = "[" + RECORD % (1, 1, "0_1")
    text = head + between + RECORD % (2, 2, "0_2") + "]"
    offset = len(head.encode()) + (1 if between else 0)  # the first character that cannot stand there
    result = parse_fusion_result(text)
    assert [g.graph_id for g in result.graphs] == [1, 2]
    assert result.damage == (f"damaged at byte {offset} ({cause}): read the 2 complete record(s), the damaged "
                             "parts are lost")


def test_a_record_spliced_into_another_ones_pass_map_is_kept_and_the_host_is_lost():
    """Found in the real damaged file: a second writer's whole record inside the first one's pass map --
    valid JSON, so only the shape tells."""
    inner = RECORD % (5, 5, "19_19")
    text = '[{"graph_fusion": {"P": {"match_times": "1", "effect_times": "1"}, "Q": ' + inner + \
           '}, "session_and_graph_id": "5_5"}]'
    result = parse_fusion_result(text)
    assert [(g.session_id, g.graph_id) for g in result.graphs] == [(19, 19)]
    assert result.damage.startswith("damaged at byte 1 (session_and_graph_id_5_5.graph_fusion.Q.graph_fusion: an "
                                    "object where a count should be)")


def test_a_record_cut_short_is_lost_and_the_next_one_is_found():
    cut = (RECORD % (1, 1, "0_1"))[:40]  # ends inside the pass counts
    text = "[" + cut + "\x00\x00" + RECORD % (2, 2, "0_2") + "]"
    result = parse_fusion_result(text)
    assert [g.graph_id for g in result.graphs] == [2]
    first_bad = len(("[" + cut).encode())  # json stops where the cut record goes wrong: at the NUL
    assert result.damage.startswith(f"damaged at byte {first_bad} (")
    assert "read the 1 complete record(s)" in result.damage


def test_not_one_record_is_an_error_naming_the_byte():
    with pytest.raises(FusionFormatError, match=r"^f\.json: byte 2: 3 NUL byte\(s\)$"):
        parse_fusion_result("[ \x00\x00\x00 ]", source="f.json")


def test_non_ascii_before_the_damage_counts_in_bytes():
    text = '{"graph_fusion": {"Pé": {"match_times": "1", "effect_times": "1"}}}' + "\x00"
    result = parse_fusion_result(text)
    assert result.damage.startswith(f"damaged at byte {len(text.encode()) - 1} (1 NUL byte(s))")
