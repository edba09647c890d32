"""A frozen GraphDef (or a meta graph and its checkpoint) as a model: ``graph_def()`` (issue 16).

The TensorFlow work runs once in a subprocess (scripts/graph_def_cases.py): a TF1 graph (convolution, fused
batch norm in inference, ReLU, dense head, and an ``aux`` branch with its own placeholder) is initialised in a
``tf.compat.v1`` session, frozen with ``convert_variables_to_constants`` to model.pb, saved as a meta graph and
checkpoint, and emulated through scripts/frozen_graph_model.py; the refused variants are tried. Expected op
names are derived here from the GraphDef's own nodes (as the subprocess read them from model.pb).

The contract checks that need no TensorFlow (what ``graph_def()`` returns, the entry points a script
defines) run in this process."""
import importlib.util
import json
import os
from pathlib import Path

import pytest
from emulate_helpers import assert_clean_autocheck, run_cases_script

from precision_tool.capture.emulate.emulate_errors import ModelScriptError
from precision_tool.capture.emulate.model_script import load_model_script
from precision_tool.formats.dump_names import scan_dump_folder
from precision_tool.formats.npy_dir import reference_op_name

from test_emulate_batchnorm import build_graph, run_folder

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
FETCH = "head/prob"
INSERTED = "trans_"  # the emulator's own Cast/TransData ops, named as GE names them
CONTRACT = ("(graph_def() returns (graph, feeds, fetches): a tf.compat.v1.GraphDef, a .pb path, a .meta path or "
            "(meta_path, checkpoint_prefix); placeholder names, one per inputs() array; output tensor names)")
KEEP_ONE = ("(keep one: model() for Keras or tf.function code, graph_model() for TF1 graph code, graph_def() for a "
            "frozen GraphDef or meta graph, train_graph() for a TF1 training step)")


class Cases:
    def __init__(self, root: Path):
        self.root = root
        self.summary = json.loads((root / "summary.json").read_text())
        self.script = self.summary["script"]

    def __getitem__(self, name: str) -> Path:
        return self.root / name

    def nodes(self, graph: str = "model.pb"):
        """``{name: (op, inputs)}`` of a GraphDef the subprocess wrote, in graph order."""
        return {name: (op, inputs) for name, op, inputs in self.summary["nodes"][graph]}

    def needed(self, graph: str = "model.pb"):
        """The nodes ``head/prob`` depends on (itself included), walked here from the GraphDef's inputs."""
        nodes, found, stack = self.nodes(graph), set(), [FETCH]
        while stack:
            name = stack.pop()
            if name not in found:
                found.add(name)
                stack.extend(i.lstrip("^").split(":")[0] for i in nodes[name][1])
        return found


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Cases:
    if importlib.util.find_spec("tensorflow") is None:  # looked for, not imported: TF stays out of this process
        pytest.skip("tensorflow is not installed")
    out = tmp_path_factory.mktemp("graph_def")
    run_cases_script(SCRIPTS / "graph_def_cases.py", out)
    return Cases(out)


# -------------------------------------------------------------------------------- the emulation
@pytest.mark.tf
def test_graph_def_ac_names_no_culprit_and_every_dumped_npu_tensor_is_aligned(cases):
    info = cases.summary["pb"]
    assert_clean_autocheck(info)


@pytest.mark.tf
def test_graph_def_op_names_are_its_node_names_cut_to_the_fetches(cases):
    ws = cases["pb"]
    nodes, needed = cases.nodes(), cases.needed()
    assert "aux/out" in nodes and "aux/out" not in needed  # model.pb holds a branch the fetch does not need
    kinds = {name: nodes[name][0] for name in needed}
    computed = {name for name, op in kinds.items() if op not in ("Const", "Identity", "Placeholder")}
    assert computed == {"block/conv", "block/bn", "block/relu", "head/gap", "head/logits", "head/logits_bias",
                        FETCH}
    # the float32 reference dumps every node the fetch needs, and nothing of the aux branch
    assert {name.rsplit(".", 3)[0] for name in os.listdir(ws / "tf" / "dump")
            if name.endswith(".npy")} == {reference_op_name(n)
                                                                                   for n in needed}
    unfused = build_graph(ws, 1)
    own = [op for op in unfused.ops if not op.name.startswith(INSERTED) and op.type != "NetOutput"]
    assert {op.name for op in own if op.type == "Data"} == {n for n, op in kinds.items() if op == "Placeholder"}
    assert {op.name for op in own if op.type == "Const"} == {n for n, op in kinds.items() if op == "Const"}
    assert {op.name for op in own if op.type not in ("Data", "Const")} == computed
    assert unfused.op("block/bn").type == "BNInfer"
    fused = build_graph(ws, 0)
    assert fused.op("block/conv").original_op_names == ("block/conv", "block/bn", "block/relu")
    assert {name for op in fused.ops for name in op.original_op_names} == computed
    for index in (0, 1):
        scan = scan_dump_folder(run_folder(ws, index))
        graph = build_graph(ws, index)
        tasks = [op.name for op in graph.ops if op.type not in ("Data", "Const", "NetOutput")]
        assert len(scan.ops) == len(tasks)
        assert all(scan.find(name) is not None for name in tasks)
        assert {n for n in tasks if not n.startswith(INSERTED)} <= computed


@pytest.mark.tf
def test_meta_graph_and_checkpoint_and_graph_def_object_freeze_to_the_same_graph(cases):
    meta = cases.summary["meta"]
    assert meta["source"] == "ckpt/model.meta"  # relative to the script's folder; checkpoint prefix ckpt/model
    assert meta["same_nodes"] and meta["max_difference"] == 0
    assert {name for name, _ in meta["nodes"]} == cases.needed()
    assert meta["inputs"] == ["image:0"] and meta["outputs"] == [f"{FETCH}:0"]
    assert meta["object_same"]  # a GraphDef object, not a path: the same frozen model


@pytest.mark.tf
def test_graph_def_model_called_as_a_function_of_tf_ops_gives_the_graph_outputs(cases):
    called = cases.summary["called"]
    assert called["shape"] == [2, 10] and called["max_difference"] <= 1e-6


# ------------------------------------------------------------------------------------ refusals
FREEZE = ("(freeze it first: tf.compat.v1.graph_util.convert_variables_to_constants(session, graph_def, "
          "output_names) in the session holding the values, or return the meta graph and its checkpoint)")


@pytest.mark.tf
@pytest.mark.parametrize("case", ["unfrozen", "wrong_feed", "unfed", "shape", "dtype", "text", "two"])
def test_graph_def_refusals_are_one_line_and_leave_nothing(cases, case):
    refused = cases.summary["refused"][case]
    script = cases.script
    unfrozen = cases.nodes("unfrozen.pb")
    first_variable = next(name for name in unfrozen if name in cases.needed("unfrozen.pb")
                          and unfrozen[name][0] == "VariableV2")
    placeholders = [name for name, (op, _) in cases.nodes().items() if op == "Placeholder"]
    expected = {
        "unfrozen": f"graph_def(): node {first_variable} (VariableV2) is an unfrozen variable {FREEZE}",
        "wrong_feed": f"graph_def(): feed images:0 is not a placeholder of the graph (its placeholders: "
                      f"{', '.join(placeholders)})",
        "unfed": "graph_def(): the fetches need placeholder aux/input, which is not fed (add it to the feeds and "
                 "its array to inputs())",
        "shape": "graph_def(): placeholder image has shape (None, 16, 16, 3) but inputs() item 0 has shape "
                 "(2, 16, 16, 4) (give inputs() arrays of the placeholders' shapes, in the order of the feeds)",
        "dtype": "graph_def(): placeholder image is float32 but inputs() item 0 is float64 (give inputs() the "
                 "placeholder's dtype)",
        "text": f"graph_def(): {Path(script).parent / 'model.pbtxt'} is not a binary GraphDef (DecodeError) "
                "(write it with tf.io.write_graph(graph_def, folder, name, as_text=False))",
        "two": f"defines both model() and graph_def() {KEEP_ONE}",
    }[case]
    assert first_variable == "block/conv/kernel" and placeholders == ["image", "aux/input"]
    assert refused["type"] == "ModelScriptError"
    assert refused["error"] == f"{script}: {expected}"
    assert not refused["left_folder"] and refused["leftovers"] == []


# ------------------------------------------------------------- the contract, without TensorFlow
def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model_script.py"
    path.write_text(text + "\n\ndef inputs():\n    return 1.0\n")
    return path


def test_scripts_defining_several_entry_points_are_refused_in_one_line(tmp_path):
    path = script(tmp_path, "def model():\n    pass\n\ndef graph_model(x):\n    pass\n\ndef graph_def():\n    pass")
    with pytest.raises(ModelScriptError) as info:
        load_model_script(path)
    assert str(info.value) == f"{path}: defines model(), graph_model() and graph_def() {KEEP_ONE}"
    path = script(tmp_path, "def graph_model(x):\n    pass\n\ndef graph_def():\n    pass")
    with pytest.raises(ModelScriptError, match=r": defines both graph_model\(\) and graph_def\(\) \(keep one"):
        load_model_script(path)
    path = script(tmp_path, "def graph_def():\n    pass")
    assert load_model_script(path).graph_def_fn is not None  # not called while loading


@pytest.mark.parametrize("returned, message", [
    ("None", "graph_def() returned NoneType " + CONTRACT),
    ("'model.pb', ['image']", "graph_def() returned tuple " + CONTRACT),
    ("'model.pb', [], ['prob:0']", "graph_def() gave feeds []; expected a name or a list of names " + CONTRACT),
    ("'model.pb', 'image', [3]", "graph_def() gave fetches [3]; expected a name or a list of names " + CONTRACT),
    ("42, 'image', 'prob:0'", "graph_def() gave a graph of type int " + CONTRACT),
])
def test_graph_def_return_values_of_another_shape_are_refused(tmp_path, returned, message):
    """Refused before TensorFlow is needed."""
    path = script(tmp_path, f"def graph_def():\n    return {returned}")
    with pytest.raises(ModelScriptError) as info:
        load_model_script(path).build_model()
    assert str(info.value) == f"{path}: {message}"


def test_graph_def_paths_are_relative_to_the_script_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)
    path = script(tmp_path, "def graph_def():\n    return 'frozen/model.pb', 'image', 'prob:0'")
    with pytest.raises(ModelScriptError) as info:
        load_model_script(path).build_model()
    assert str(info.value) == f"{path}: graph_def(): no such file {tmp_path / 'frozen' / 'model.pb'} {CONTRACT}"
    path = script(tmp_path, "def graph_def():\n    return ('model.meta', 'ckpt/model'), 'image', 'prob:0'")
    with pytest.raises(ModelScriptError, match=r"graph_def\(\): no such meta graph .*model\.meta \(graph_def"):
        load_model_script(path).build_model()
