"""fusion_result.json (both forms) and the fusion switch file (JSON and PassName:off lines)."""
import json
from pathlib import Path

import pytest

from precision_tool.errors import FusionFormatError, PrecisionToolError, WorkspaceError
from precision_tool.formats.fusion_result import (
    GRAPH_FUSION, UB_FUSION, FusionResult, FusionSwitches, GraphFusion, PassRecord,
    fusion_result_to_json, fusion_switches_to_json, parse_fusion_result, parse_fusion_switches, read_fusion_result,
    read_fusion_switches, write_fusion_result, write_fusion_switches,
)

CURRENT = {
    "session_and_graph_id_0_1": {
        "graph_fusion": {"ConvBatchnormFusionPass": {"match_times": "2", "effect_times": "2"},
                         "Conv2dToConv2dV2FusionPass": {"match_times": "4", "effect_times": "0"}},
        "ub_fusion": {"TbeConvElemwiseFusionPass": {"match_times": "3", "effect_times": "1",
                                                    "repository_hit_times": "0"}},
    },
    "session_and_graph_id_0_2": {"graph_fusion": {"ConvBatchnormFusionPass": {"match_times": "1",
                                                                              "effect_times": "0"}}},
}

OLD_CONCATENATED = (
    '{"graphId": "3", "graph_fusion": {"APass": {"match_times": "1", "effect_times": "1"}}}\n'
    '{"session_and_graph_id": "1_4", "ub_fusion": {"BPass": {"match_times": 2, "effect_times": 0}}}'
)


def test_current_form_reads_every_pass_with_its_counts():
    result = parse_fusion_result(json.dumps(CURRENT))
    first, second = result.graphs
    assert (first.key, first.session_id, first.graph_id) == ("session_and_graph_id_0_1", 0, 1)
    assert first.family(UB_FUSION) == (PassRecord("TbeConvElemwiseFusionPass", UB_FUSION, 3, 1, 0),)
    assert [p.name for p in first.family(GRAPH_FUSION)] == ["ConvBatchnormFusionPass", "Conv2dToConv2dV2FusionPass"]
    assert second.passes == (PassRecord("ConvBatchnormFusionPass", GRAPH_FUSION, 1, 0),)
    assert result.effective_passes() == ("ConvBatchnormFusionPass", "TbeConvElemwiseFusionPass")
    assert result.effective_passes(UB_FUSION) == ("TbeConvElemwiseFusionPass",)


def test_old_form_with_concatenated_objects():
    result = parse_fusion_result(OLD_CONCATENATED)
    assert [(g.key, g.session_id, g.graph_id) for g in result.graphs] == [
        ("graph_id_3", None, 3), ("session_and_graph_id_1_4", 1, 4)]
    assert result.graphs[0].passes == (PassRecord("APass", GRAPH_FUSION, 1, 1),)
    assert result.graphs[1].passes == (PassRecord("BPass", UB_FUSION, 2, 0),)
    assert result.effective_passes() == ("APass",)


def test_written_in_the_current_form_and_read_back_equal(tmp_path):
    for source in (json.dumps(CURRENT), OLD_CONCATENATED):
        result = parse_fusion_result(source)
        path = write_fusion_result(result, tmp_path / "fusion_result.json")
        assert read_fusion_result(path) == result
    assert fusion_result_to_json(parse_fusion_result(json.dumps(CURRENT))) == CURRENT


def test_an_empty_object_is_no_passes_but_an_empty_file_is_an_error():
    assert parse_fusion_result("{}") == FusionResult(())
    with pytest.raises(FusionFormatError, match="f.json: is empty"):
        parse_fusion_result("  \n", source="f.json")


@pytest.mark.parametrize("text, message", [
    ('{"a": 1}', "a: expected an object of graph_fusion/ub_fusion"),
    ('{"k": {"graph_fusion": []}}', "k.graph_fusion: expected an object of pass name -> counts"),
    ('{"k": {"ub_fusion": {"P": 3}}}', "k.ub_fusion.P: expected an object of counts"),
    ('{"k": {"graph_fusion": {"P": {"effect_times": "-1"}}}}',
     r"k.graph_fusion.P.effect_times: expected a count, got '-1'"),
    ('{"k": {"graph_fusion": {"P": {"match_times": true}}}}', "match_times: expected a count, got True"),
    ("[1]", "byte 1: stray text '1'"),
    ('{"k": ', "line 1, column 7: Expecting value"),
])
def test_bad_fusion_results_say_where(text, message):
    with pytest.raises(FusionFormatError, match=message) as caught:
        parse_fusion_result(text, source="f.json")
    assert str(caught.value).startswith("f.json: ")


def test_missing_file_is_a_workspace_error(tmp_path):
    with pytest.raises(WorkspaceError, match="no such file"):
        read_fusion_result(tmp_path / "fusion_result.json")


# ------------------------------------------------------------------------------------------ switch file
def test_json_switches_all_sets_the_default_and_named_passes_override():
    switches = parse_fusion_switches(json.dumps(
        {"Switch": {"GraphFusion": {"ALL": "off", "APass": "on"}, "UBFusion": {"BPass": "OFF"}}}))
    assert switches.is_enabled("APass", GRAPH_FUSION) and not switches.is_enabled("Other", GRAPH_FUSION)
    assert not switches.is_enabled("BPass", UB_FUSION) and switches.is_enabled("Other", UB_FUSION)
    assert not switches.fusion_off  # UB fusion is still on by default


def test_old_lines_apply_to_both_families():
    switches = parse_fusion_switches("# comment\nAPass:off\n  BPass : on \n\n")
    assert switches.graph_fusion == switches.ub_fusion == {"APass": False, "BPass": True}
    assert not switches.is_enabled("APass", UB_FUSION) and switches.is_enabled("CPass", GRAPH_FUSION)


def test_fusion_off_round_trips_through_the_json_form(tmp_path):
    off = FusionSwitches.all_off()
    assert off.fusion_off and not off.is_enabled("AnyPass", UB_FUSION)
    assert fusion_switches_to_json(off) == {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
    path = write_fusion_switches(off, tmp_path / "fusion_switch.cfg")
    assert read_fusion_switches(path) == off


@pytest.mark.parametrize("text, message", [
    ("APass=off", "line 1: expected 'PassName:on' or 'PassName:off', got 'APass=off'"),
    ("APass:maybe", "line 1: expected 'on' or 'off', got 'maybe'"),
    ('{"Switch": []}', 'expected {"Switch"'),
    ('{"Switch": {"UBFusion": {"P": true}}}', "Switch.UBFusion.P: expected 'on' or 'off', got True"),
    ('{"Switch": {}}{"Switch": {}}', "holds 2 JSON objects"),
])
def test_bad_switch_files_say_where(text, message):
    with pytest.raises(PrecisionToolError, match=message):
        parse_fusion_switches(text, source="switch.cfg")


def test_graph_fusion_family_filter():
    graph = GraphFusion("k", (PassRecord("A", GRAPH_FUSION), PassRecord("B", UB_FUSION)))
    assert graph.family(UB_FUSION) == (PassRecord("B", UB_FUSION),)


@pytest.mark.compat
@pytest.mark.parametrize("text, key", [
    ('{"Switch": {"GrapFusion": {"ConvBiasaddFusionPass": "off"}}}', "Switch.GrapFusion"),
    ('{"Switch": {"GraphFusion": {}}, "UBfusion": {}}', "UBfusion"),
])
def test_a_misspelt_switch_key_is_an_error_not_a_switch_that_does_nothing(tmp_path, text, key):
    path = tmp_path / "fusion_switch.cfg"
    path.write_text(text)
    with pytest.raises(FusionFormatError, match=f"unknown key '{key}': a switch file holds only Switch.GraphFusion"):
        read_fusion_switches(path)


REAL_SWITCHES = Path(__file__).resolve().parents[3] / "shared" / "real-world" / "switch"


@pytest.mark.compat
@pytest.mark.skipif(not REAL_SWITCHES.is_dir(), reason="no ../shared/real-world/switch beside the checkout")
def test_every_real_world_switch_file_still_reads():
    files = sorted(REAL_SWITCHES.glob("*.cfg"))
    assert len(files) >= 5
    read = {path.name: read_fusion_switches(path) for path in files}  # the key check must accept them all
    off = read["tools_fusion_off.cfg"]  # the original tool's all-off file
    assert off.graph_fusion == {"ALL": False} and off.ub_fusion == {"ALL": False}


@pytest.mark.compat
@pytest.mark.skipif(not REAL_SWITCHES.is_dir(), reason="no ../shared/real-world/switch beside the checkout")
@pytest.mark.parametrize("name", sorted(p.name for p in REAL_SWITCHES.glob("*.cfg")) if REAL_SWITCHES.is_dir()
                         else [])
def test_each_real_switch_file_reads_as_its_raw_text_says(name):
    """Every switch of each real file, derived here from the raw text: ``json.loads`` for the JSON form,
    ``Pass:state`` lines for the old form (which apply to both families)."""
    text = (REAL_SWITCHES / name).read_text(encoding="utf-8")
    switches = read_fusion_switches(REAL_SWITCHES / name)
    if text.lstrip().startswith("{"):
        raw = json.loads(text)["Switch"]
        expected = {family: {k: v.strip().lower() == "on" for k, v in raw.get(key, {}).items()}
                    for family, key in ((GRAPH_FUSION, "GraphFusion"), (UB_FUSION, "UBFusion"))}
        assert (switches.graph_fusion, switches.ub_fusion) == (expected[GRAPH_FUSION], expected[UB_FUSION])
    else:
        lines = [line.split(":") for line in text.splitlines() if line.strip() and not line.startswith("#")]
        expected = {k.strip(): v.strip().lower() == "on" for k, v in lines}
        assert switches.graph_fusion == switches.ub_fusion == expected
