"""GE graph files that are hostile or broken (issue 14): one line naming the file and the cause, never a
traceback, a hang or a memory blow-up -- and the line-by-line reader gives exactly what protobuf's own parser does.

Expected values come from hand-written graph bytes and from counting in the raw text of real CANN files, not from
our writer read back by our reader.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings, strategies as st

from precision_tool.cli import main as cli_main
from precision_tool.commands.ge2json import COMMAND as GE2JSON
from precision_tool.commands.command_registry import CommandRegistry, Context
from precision_tool.errors import GraphFormatError, WorkspaceError
from precision_tool.formats import ge_io
from precision_tool.formats.ge_graph import Graph, GraphModel, InputRef, OpNode, TensorDesc, tensor_desc
from precision_tool.formats.ge_graph_folders import build_files_in, scan_graph_folders
from precision_tool.formats.ge_io import (BUILD_GRAPH_NAME, ge_graph_from_json, ge_graph_to_json, iter_ge_graph_json,
                                          parse_ge_graph, read_ge_graph, root_graph_name)
from precision_tool.formats.ge_proto_codec import dtype_number, model_from_message
from precision_tool.formats.ge_schema import ge_messages
from precision_tool.formats.ge_text import parse_ge_text

REPO = Path(__file__).resolve().parents[2]
REAL_GRAPHS = REPO.parent / "shared" / "real-world" / "graph"
needs_real_graphs = pytest.mark.skipif(not REAL_GRAPHS.is_dir(), reason=f"{REAL_GRAPHS} is absent (real artifacts "
                                                                         "live beside the project, in ../shared)")
HUGE = "9" * 5000
BUILD = "ge_proto_00000001_Build.txt"
# Written by hand in GE's layout: x (Data, float16 [1, 3] ND) -> y (Relu, id 1).
GRAPH_TEXT = """\
graph {
  name: "g"
  op {
    name: "x"
    type: "Data"
    output_desc {
      dtype: DT_FLOAT16
      shape {
        dim: 1
        dim: 3
      }
      layout: "ND"
    }
  }
  op {
    name: "y"
    type: "Relu"
    input: "x:0"
    id: 1
  }
}
"""


def _write(folder, text, name=BUILD) -> Path:
    path = Path(folder) / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _error(path) -> str:
    with pytest.raises(GraphFormatError) as caught:
        read_ge_graph(path)
    return str(caught.value)


def _cli(*argv) -> subprocess.CompletedProcess:
    """``python -m precision_tool ARGV`` in a subprocess (a hang would fail the test by its timeout)."""
    return subprocess.run([sys.executable, "-m", "precision_tool", *map(str, argv)], capture_output=True, text=True,
                          timeout=120, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_the_hand_written_graph_reads_as_written(tmp_path):
    graph = read_ge_graph(_write(tmp_path, GRAPH_TEXT)).root
    assert graph.name == "g" and [(op.name, op.type, op.id) for op in graph.ops] == [("x", "Data", 0), ("y", "Relu", 1)]
    assert graph.op("y").inputs == (InputRef("x", 0),)
    assert graph.op("x").output_descs == (TensorDesc("DT_FLOAT16", "ND", (1, 3)),)


# ------------------------------------------------------------------------------------------ not a regular file
def _fifo(folder):
    path = Path(folder) / BUILD
    os.mkfifo(str(path))
    return path, "is a FIFO (named pipe), not a regular file"


def _dev_zero(folder):
    path = Path(folder) / BUILD
    os.symlink("/dev/zero", str(path))
    return path, "is a character device, not a regular file"


def _loop(folder):
    path = Path(folder) / BUILD
    os.symlink(BUILD, str(path))
    return path, "cannot open: a symlink loop"


def _dangling(folder):
    path = Path(folder) / BUILD
    os.symlink("nowhere.txt", str(path))
    return path, "does not exist (or is a dangling symlink)"


NOT_REGULAR = [_fifo, _dev_zero, _loop, _dangling]


@pytest.mark.parametrize("make", NOT_REGULAR)
def test_a_graph_that_is_not_a_regular_file_is_one_line_naming_it(tmp_path, make):
    path, cause = make(tmp_path)
    assert _error(path) == f"{path}: {cause}"
    with pytest.raises(GraphFormatError, match=re.escape(f"{path}: {cause}")):
        root_graph_name(path)  # the head is read through the same opener: a FIFO never blocks it


@pytest.mark.parametrize("make", NOT_REGULAR)
def test_ge2json_on_a_graph_that_is_not_a_regular_file_exits_2_with_one_line(tmp_path, make):
    path, cause = make(tmp_path)
    done = _cli("ge2json", path, "-o", tmp_path / "out.json")
    assert (done.returncode, done.stderr, done.stdout) == (2, f"precision_tool: error: {path}: {cause}\n", "")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("make", [_fifo, _dev_zero, _loop])
def test_ls_and_ni_skip_a_build_file_that_is_not_a_regular_file_and_say_so(tmp_path, make):
    graph_dir = tmp_path / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    path, _ = make(graph_dir)
    note = {_fifo: "a FIFO, not a regular file", _dev_zero: "a device file, not a regular file",
            _loop: "symlink loop"}[make]
    problems: list = []
    assert build_files_in(str(graph_dir), problems) == []
    assert problems == [f"{path}: skipped, {note}"]
    expected = ("precision_tool: error: no GE Build graph (ge_proto_*_Build.txt or ge_onnx_*_Build.pbtxt) in "
                f"{graph_dir} (GE writes it when DUMP_GE_GRAPH=2, DUMP_GRAPH_LEVEL=3 and DUMP_GRAPH_PATH=<folder> "
                f"are set; {path}: skipped, {note})\n")
    for command in (["ls"], ["ni", "y"]):
        done = _cli("-d", tmp_path, *command)
        assert (done.returncode, done.stderr) == (2, expected)


def test_a_folder_named_like_a_build_file_is_skipped_with_a_note(tmp_path):
    (tmp_path / BUILD).mkdir()
    good = _write(tmp_path, GRAPH_TEXT, "ge_proto_00000002_Build.txt")
    scan = scan_graph_folders(tmp_path)
    assert scan.folders[0].newest == str(good)
    assert scan.problems == (f"{tmp_path / BUILD}: skipped, a folder, not a regular file",)


def test_a_graph_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = _write(tmp_path, GRAPH_TEXT)
    monkeypatch.setattr(ge_io, "GRAPH_FILE_LIMIT", 100)
    assert _error(path) == f"{path}: is {len(GRAPH_TEXT):,} bytes, more than this reader takes (100)"


# ------------------------------------------------------------------------------------------ integers too long
def test_a_5000_digit_dim_names_file_line_and_column_without_the_digits(tmp_path):
    path = _write(tmp_path, GRAPH_TEXT.replace("        dim: 3\n", f"        dim: {HUGE}\n"))
    nines = "9" * 40
    assert _error(path) == (f"{path}: line 10, column 14: ' dim: {nines}...(5,000 characters)': Couldn't parse "
                            f"integer: {nines}...(5,000 characters) (not protobuf text of a GE ModelDef)")


@pytest.mark.parametrize("field, line", [("version", 1), ("stream_id", 20)])
def test_a_5000_digit_number_in_any_integer_field_is_a_format_error(tmp_path, field, line):
    text = GRAPH_TEXT.replace("    id: 1\n", f"    id: 1\n    {field}: {HUGE}\n") if field != "version" \
        else f"version: {HUGE}\n{GRAPH_TEXT}"
    message = _error(_write(tmp_path, text))
    assert f": line {line}, column " in message and "Couldn't parse integer: 9999" in message
    assert len(message) < 400


def test_an_integer_one_past_uint64_is_out_of_range_not_accepted(tmp_path):
    path = _write(tmp_path, f"version: {2 ** 64}\n{GRAPH_TEXT}")  # 20 digits: the line parser's last length
    assert _error(path) == (f"{path}: line 1, column 10: 'version: 18446744073709551616': Value out of range: "
                            "18446744073709551616 (not protobuf text of a GE ModelDef)")


def test_an_input_index_of_5000_digits_names_the_op(tmp_path):
    path = _write(tmp_path, GRAPH_TEXT.replace('input: "x:0"', f'input: "x:{HUGE}"'))
    assert _error(path) == f"{path}: op 'y' has input '{'x:' + '9' * 55}...', which is not 'producer:index'"


def test_a_5000_digit_json_integer_names_its_json_path(tmp_path):
    path = _write(tmp_path, '{"graph": [{"name": "g", "op": [{"name": "y", "id": %s}]}]}' % HUGE, "g.json")
    assert _error(path) == f"{path}: graph[0].op[0].id: expected an integer, got <an integer of 5,000 digits>"
    done = _cli("ge2json", path, "-o", tmp_path / "out.json")
    assert (done.returncode, done.stderr) == (2, f"precision_tool: error: {_error(path)}\n")


def test_a_5000_digit_integer_as_a_json_string_is_refused(tmp_path):
    path = _write(tmp_path, '{"graph": [{"op": [{"id": "%s"}]}]}' % HUGE, "g.json")
    message = _error(path)
    assert message.startswith(f"{path}: graph[0].op[0].id: expected an integer, got '9999")
    assert len(message) < len(str(path)) + 120


def test_a_long_json_integer_in_a_key_no_field_reads_is_ignored_like_the_key(tmp_path):
    path = _write(tmp_path, '{"graph": [{"name": "g", "not_a_field": %s, "op": [{"name": "x"}]}]}' % HUGE, "g.json")
    assert read_ge_graph(path).root.name == "g"


def test_json_integers_up_to_20_digits_still_reach_the_field(tmp_path):
    path = _write(tmp_path, '{"graph": [{"op": [{"id": %d}]}]}' % (2 ** 63 - 1), "g.json")
    assert read_ge_graph(path).root.ops[0].id == 2 ** 63 - 1
    path = _write(tmp_path, '{"graph": [{"op": [{"id": %d}]}]}' % 2 ** 63, "g.json")  # 19 digits, out of int64
    assert _error(path).startswith(f"{path}: graph[0].op[0].id: cannot be stored (")


def test_folder_names_with_long_digit_runs_are_look_alikes_not_crashes(tmp_path):
    odd = tmp_path / f"pid_{'1' * 200}_deviceid_0"
    odd.mkdir()
    _write(odd, GRAPH_TEXT)
    scan = scan_graph_folders(tmp_path)
    assert scan.folders == () and scan.problems == (
        f"{odd}: skipped, the name is not pid_<pid>_deviceid_<device> or <pid>_<device>",)


# ------------------------------------------------------------------------------------------ digits of other scripts
@pytest.mark.parametrize("digit", ["\u00b2", "\u0663", "\u0661"])  # superscript two, Arabic-Indic three and one
def test_a_digit_of_another_script_is_an_error_with_its_line_and_column(tmp_path, digit):
    path = _write(tmp_path, GRAPH_TEXT.replace("    id: 1\n", f"    id: {digit}\n"))
    assert _error(path) == (f"{path}: line 19, column 9: {digit!r} is not an ASCII digit (numbers in a GE graph are "
                            "written with 0-9)")


def test_other_scripts_in_strings_and_comments_are_text(tmp_path):
    text = "# \u0663 in a comment\n" + GRAPH_TEXT.replace('name: "y"', 'name: "y\u0663"')
    assert read_ge_graph(_write(tmp_path, text)).root.ops[1].name == "y\u0663"


def test_a_digit_of_another_script_in_an_input_index_is_not_an_index(tmp_path):
    path = _write(tmp_path, GRAPH_TEXT.replace('input: "x:0"', 'input: "x:\u0663"'))
    assert _error(path) == f"{path}: op 'y' has input 'x:\u0663', which is not 'producer:index'"
    for text in ("x:\u0663", "x:+1", "x: 1", "x:1_0"):
        with pytest.raises(ValueError):
            InputRef.parse(text)
    assert InputRef.parse("x:-1") == InputRef("x", -1)


@pytest.mark.parametrize("value, message", [
    ('"id": "\u0663"', "graph[0].op[0].id: expected an integer, got '\u0663'"),
    ('"attr": [{"key": "k", "value": {"f": "\u0663.5"}}]', "graph[0].op[0].attr[0].value.f: expected a number, "
                                                           "got '\u0663.5'"),
    ('"attr": [{"key": "k", "value": {"f": "1_0"}}]', "graph[0].op[0].attr[0].value.f: expected a number, got '1_0'"),
])
def test_json_numbers_given_as_strings_must_be_ascii(tmp_path, value, message):
    path = _write(tmp_path, '{"graph": [{"op": [{%s}]}]}' % value, "g.json")
    assert _error(path) == f"{path}: {message}"


def test_float_strings_ge_and_protobuf_write_still_read(tmp_path):
    values = ["0.001", "1e-05", "inf", "-inf", "nan", "Infinity", "-Infinity", "NaN", "3"]
    attrs = ", ".join('{"key": "k%d", "value": {"f": "%s"}}' % (k, v) for k, v in enumerate(values))
    attrs_read = read_ge_graph(_write(tmp_path, '{"graph": [{"op": [{"attr": [%s]}]}]}' % attrs, "g.json")) \
        .root.ops[0].attrs
    shown = [repr(attrs_read[f"k{k}"]) for k in range(len(values))]
    assert shown == ["0.001", "1e-05", "inf", "-inf", "nan", "inf", "-inf", "nan", "3.0"]


def test_names_and_numbers_with_other_scripts_digits_are_not_ge_names():
    assert BUILD_GRAPH_NAME.match("ge_proto_\u0660\u0660\u0660\u0660\u0661_Build.txt") is None
    assert BUILD_GRAPH_NAME.match("ge_proto_00001_Build.txt") is not None
    with pytest.raises(ValueError):
        dtype_number("DT_UNKNOWN(\u0663)")
    assert dtype_number("DT_UNKNOWN(99)") == 99


# ------------------------------------------------------------------------------------------ deep nesting
DEEP = [
    ("unknown blocks, one per line", "a {\n" * 100_000, "blocks nested too deeply to read"),
    ("unknown blocks on one line", "a { " * 100_000, "blocks nested too deeply to read"),
    ("JSON braces", "{" * 100_000, "line 1, column 2: Expecting property name enclosed in double quotes (not valid "
                                   "JSON)"),
    ("JSON lists", '{"graph": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply to read"),
    ("JSON objects", '{"a": ' * 100_000 + "1" + "}" * 100_000, "nested too deeply to read"),
    # Graphs in attrs of ops in graphs, 80,000 messages deep: C++ protobuf (Python 3.7's) crashed freeing them.
    ("graphs in attrs", "graph {\nop {\n" + 'attr {\nkey: "k"\nvalue {\ng {\nop {\n' * 20_000
     + "}\n}\n}\n}\n" * 20_000 + "}\n}\n", "blocks nested too deeply to read"),
]


@pytest.mark.parametrize("text, cause", [case[1:] for case in DEEP], ids=[case[0] for case in DEEP])
def test_deep_nesting_is_one_line(tmp_path, text, cause):
    path = _write(tmp_path, text)
    assert _error(path) == f"{path}: {cause}"


# ------------------------------------------------------------------------------------------ same result, less memory
def _reference_model(data: bytes, source):
    """The model as read before the line-by-line reader: the whole text, protobuf's message, then the model (and,
    as for every reader, a graph file with no op at all is an error: ``ge_io._with_ops``)."""
    text = ge_io._decode(data, source)
    if text.lstrip()[:1] == "{":
        return ge_io._with_ops(ge_io._parse_json_text(text, source), source)
    try:
        model = model_from_message(parse_ge_text(text, source), source)
    except RecursionError:
        raise GraphFormatError(source, "nested too deeply to read") from None
    return ge_io._with_ops(model, source)


def _outcome(read, *args):
    try:
        return read(*args)
    except GraphFormatError as error:
        return f"error: {error}"


def _real_ge_texts():
    return sorted(REAL_GRAPHS.glob("*_ge_proto_*_Build.txt")) if REAL_GRAPHS.is_dir() else []


@needs_real_graphs
@pytest.mark.parametrize("name", [path.name for path in _real_ge_texts()])
def test_real_cann_graphs_read_as_protobufs_own_parser_reads_them(name):
    path = REAL_GRAPHS / name
    text = path.read_text(encoding="utf-8")
    reference = model_from_message(text_format.Parse(text, ge_messages()["ModelDef"](), allow_unknown_field=True))
    model = read_ge_graph(path)
    assert model == reference
    # Counted in the raw text: GE indents a root graph's ops by two spaces, and names each root graph first.
    assert sum(len(graph.ops) for graph in model.graphs) == len(re.findall(r"(?m)^  op \{$", text))
    assert [graph.name for graph in model.graphs] == re.findall(r'(?m)^graph \{\n  name: "([^"]*)"$', text)


@needs_real_graphs
def test_the_real_resnet50_build_graph_holds_what_its_readme_says():
    model = read_ge_graph(REAL_GRAPHS / "oam_resnet50_ge_proto_00000062_Build.txt")
    # 170: the op count ../shared/real-world/README.md gives for this file (its own count, not this reader's)
    assert len(model.root.ops) == 170 and model.root.name == "ResNet-50_0"
    assert (model.root.ops[0].name, model.root.ops[0].type) == ("data", "Data")
    assert any(op.pass_names for op in model.root.ops)


@needs_real_graphs
def test_the_real_atc_json_reads_and_streams_back_to_the_same_json():
    path = REAL_GRAPHS / "msit_test.om.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    model = read_ge_graph(path)
    assert [[op.get("name", "") for op in graph.get("op", [])] for graph in raw["graph"]] == \
        [[op.name for op in graph.ops] for graph in model.graphs]
    assert "".join(iter_ge_graph_json(model)) == json.dumps(ge_graph_to_json(model))


@needs_real_graphs
def test_ge2json_on_a_real_graph_writes_what_json_dumps_writes(tmp_path):
    source = REAL_GRAPHS / "oam_370_0_ge_proto_00000001_Build.txt"
    assert cli_main(["ge2json", str(source), "-o", str(tmp_path / "out.json")]) == 0
    written = (tmp_path / "out.json").read_text(encoding="ascii")
    assert written == json.dumps(ge_graph_to_json(read_ge_graph(source)), ensure_ascii=True)
    assert [graph["name"] for graph in json.loads(written)["graph"]] == \
        re.findall(r'(?m)^graph \{\n  name: "([^"]*)"$', source.read_text(encoding="utf-8"))


def test_streamed_json_is_character_for_character_the_hand_written_json():
    model = GraphModel((Graph("g", (OpNode("x", "Data"), OpNode("y", "Relu", id=1, inputs=("x:0",)))),
                        Graph("sub", ())), name="m", version=2)
    expected = ('{"name": "m", "version": 2, "graph": [{"name": "g", "op": [{"name": "x", "type": "Data"}, '
                '{"name": "y", "type": "Relu", "input": ["x:0"], "id": 1}]}, {"name": "sub", "op": []}]}')
    assert "".join(iter_ge_graph_json(model)) == expected == json.dumps(ge_graph_to_json(model))
    assert "".join(iter_ge_graph_json(GraphModel(()))) == '{"graph": []}'


def test_a_conversion_error_waits_for_a_later_syntax_error(tmp_path):
    # y's input is bad (a model error) and a later line is not protobuf text: the syntax error is reported, as
    # when the whole text was parsed before any op was converted.
    text = GRAPH_TEXT.replace('input: "x:0"', 'input: "x:zz"').replace("    id: 1\n", "    id: 1\n    id: 2 3\n")
    path = _write(tmp_path, text)
    assert _error(path).startswith(f"{path}: line 20, column ")
    assert _error(_write(tmp_path, GRAPH_TEXT.replace('input: "x:0"', 'input: "x:zz"'))) == \
        f"{path}: op 'y' has input 'x:zz', which is not 'producer:index'"


def test_bad_utf8_is_named_by_line_and_file_offset_wherever_it_is(tmp_path):
    data = GRAPH_TEXT.encode().replace(b'name: "y"', b'name: "\xff"')
    offset = data.index(b"\xff")
    line = data[:offset].count(b"\n") + 1
    expected = f"{tmp_path / BUILD}: line {line}: byte {offset} is not UTF-8 (a GE graph dump is UTF-8 text)"
    assert _error(_write(tmp_path, data)) == expected
    assert _error(_write(tmp_path, b"# a comment: the full parser\n" + data)) == expected.replace(
        f"line {line}: byte {offset}", f"line {line + 1}: byte {offset + 29}")


TEXT_SYNTAX = st.sampled_from(list(b'{}:"\\ \n#[],<>-.0123456789eE_xXtf') + [0xFF, 0xC3, 0xB2, 0xD9, 0xA3])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(GRAPH_TEXT) - 1), TEXT_SYNTAX), min_size=1, max_size=5))
def test_reading_a_file_line_by_line_never_differs_from_reading_it_whole(flips):
    data = bytearray(GRAPH_TEXT.encode())
    for position, value in flips:
        data[position] = value
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, bytes(data))
        assert _outcome(read_ge_graph, path) == _outcome(_reference_model, bytes(data), path)


# ------------------------------------------------------------------------------------------ compact records
def test_op_records_have_no_instance_dict_and_still_copy_and_pickle():
    desc = tensor_desc("DT_FLOAT16", "NC1HWC0", [1, 1, 4, 4, 16], origin_format="NHWC", origin_name="x")
    op = OpNode("x", "Data", inputs=("a:0",), output_descs=(desc,), attrs={"k": [1, 2]})
    for record in (op, desc, op.inputs[0]):
        assert not hasattr(record, "__dict__")
        assert pickle.loads(pickle.dumps(record)) == record == copy.deepcopy(record)
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.name = "other"  # type: ignore[misc]
    assert dataclasses.replace(op, name="z").name == "z"


def test_equal_strings_of_a_file_are_stored_once(tmp_path):
    text = GRAPH_TEXT.replace('type: "Data"', 'type: "Relu"').replace(
        '    type: "Relu"\n    input', '    type: "Relu"\n    attr {\n      key: "k"\n      value {\n'
                                     '        s: "ND"\n      }\n    }\n    input')
    graph = read_ge_graph(_write(tmp_path, text)).root
    x, y = graph.ops
    assert x.type == y.type == "Relu" and x.type is y.type
    assert y.inputs[0].producer is x.name
    assert y.attrs["k"] is x.output_descs[0].layout


# ------------------------------------------------------------------------------------------ ge2json's output
def test_ge2json_refuses_an_output_named_like_a_build_graph(tmp_path):
    source = _write(tmp_path, GRAPH_TEXT)
    target = tmp_path / "ge_proto_00000002_Build.txt"
    with pytest.raises(WorkspaceError) as caught:
        CommandRegistry([GE2JSON]).dispatch(["ge2json", str(source), "-o", str(target)], Context(data_dir="unused"))
    assert str(caught.value) == (f"{target}: refused, a file of that name is read as a GE Build graph (write the "
                                 "JSON to a .json file)")
    assert not target.exists()


def test_parse_ge_graph_in_memory_follows_the_same_rules(tmp_path):
    with pytest.raises(GraphFormatError) as caught:
        parse_ge_graph(GRAPH_TEXT.replace("    id: 1\n", "    id: \u0663\n"), source="g.txt")
    assert str(caught.value) == ("g.txt: line 19, column 9: '\u0663' is not an ASCII digit (numbers in a GE graph are "
                                 "written with 0-9)")
    assert parse_ge_graph(GRAPH_TEXT.encode()) == read_ge_graph(_write(tmp_path, GRAPH_TEXT))


def test_ge2json_never_writes_into_a_graph_folder_or_the_workspace_inputs(tmp_path):
    """A JSON written into the folder of Build graphs (or any workspace input folder) is refused, nothing
    written; a loose graph file's folder is an input too (as for every command), a folder elsewhere is fine."""
    from precision_tool.cli import main as cli_main

    graphs = tmp_path / "ws" / "npu" / "debug_0" / "graph"
    graphs.mkdir(parents=True)
    source = graphs / "ge_proto_00000001_Build.txt"
    source.write_text('graph {\n  name: "g"\n  op {\n    name: "x"\n    type: "Data"\n  }\n}\n')
    loose = tmp_path / "loose" / "ge_proto_00000001_Build.txt"
    loose.parent.mkdir()
    loose.write_text(source.read_text())
    workspace = ["-d", str(tmp_path / "ws")]
    assert cli_main([*workspace, "ge2json", str(graphs), "-o", str(graphs / "g.json")]) == 2
    assert cli_main([*workspace, "ge2json", str(loose), "-o", str(tmp_path / "ws" / "tf" / "graph" / "g.json")]) == 2
    assert sorted(p.name for p in graphs.iterdir()) == ["ge_proto_00000001_Build.txt"]
    assert not (tmp_path / "ws" / "tf").exists()
    assert cli_main([*workspace, "ge2json", str(loose), "-o", str(tmp_path / "g.json")]) == 0


@needs_real_graphs
@pytest.mark.parametrize("name", ["oam_370_0_ge_proto_00000000_Build.txt", "oam_370_0_ge_proto_00000001_Build.txt",
                                  "oam_resnet50_ge_proto_00000062_Build.txt"])
def test_real_graphs_read_the_same_from_their_json_form(name):
    """The JSON form is read into records, without protobuf; the text form by protobuf's parser. Real Build graphs
    (every attribute kind GE wrote) give the same model both ways."""
    model = read_ge_graph(REAL_GRAPHS / name)
    assert ge_graph_from_json(json.loads(json.dumps(ge_graph_to_json(model)))) == model
