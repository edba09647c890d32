"""A bad MODEL_SCRIPT or option is one clear line naming the script (no TensorFlow needed)."""
import os
from pathlib import Path

import pytest

from precision_tool.capture.emulate.emulate_errors import EmulationError, ModelScriptError
from precision_tool.capture.emulate.faults import Fault
from precision_tool.capture.emulate.model_script import load_model_script
from precision_tool.capture.emulate.run import EmulationOptions, check_workspace
from precision_tool.cli import main
from precision_tool.commands.emulate import parse_perturbations
from precision_tool.errors import UsageError, WorkspaceError


def script(tmp_path, text):
    path = tmp_path / "model_script.py"
    path.write_text(text)
    return str(path)


def test_missing_script(tmp_path):
    with pytest.raises(ModelScriptError, match=r"nope\.py: no such model script"):
        load_model_script(str(tmp_path / "nope.py"))


def test_script_without_model_and_inputs(tmp_path):
    path = script(tmp_path, "x = 1\n")
    with pytest.raises(ModelScriptError) as info:
        load_model_script(path)
    assert str(info.value).startswith(f"{path}: defines no model() and no inputs() function")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("body", [
    "import os\nopen(os.environ['MARK'], 'w').close()\n",  # a training script: its work at the top level
    "def model():\n    return None\nimport os\nopen(os.environ['MARK'], 'w').close()\n",
])
def test_a_script_without_model_or_inputs_is_refused_before_it_runs(tmp_path, monkeypatch, body):
    mark = tmp_path / "ran"
    monkeypatch.setenv("MARK", str(mark))
    path = script(tmp_path, body)
    with pytest.raises(ModelScriptError, match=r"defines no (model\(\) and no )?inputs\(\) function"):
        load_model_script(path)
    assert not mark.exists()


@pytest.mark.parametrize("body", [
    "from helpers import *\n",  # could bind anything: the import decides
    "globals()['model'] = lambda: None\nglobals()['inputs'] = lambda: None\n",
    "import os\nif os.environ.get('MARK'):\n    from math import floor as model, ceil as inputs\n",
])
def test_scripts_whose_names_cannot_be_read_without_running_them_are_run(tmp_path, monkeypatch, body):
    (tmp_path / "helpers.py").write_text("model = inputs = lambda: None\n")
    monkeypatch.setenv("MARK", "1")
    assert load_model_script(script(tmp_path, body)).path.endswith("model_script.py")


def test_exception_while_importing_names_the_script(tmp_path):
    path = script(tmp_path, "raise RuntimeError('boom\\nsecond line')\ndef model(): pass\ndef inputs(): pass\n")
    with pytest.raises(ModelScriptError, match=r"model_script\.py: importing it raised RuntimeError: boom$"):
        load_model_script(path)


def test_exception_inside_inputs_and_bad_batches(tmp_path):
    path = script(tmp_path, "def model():\n    return None\n\ndef inputs():\n    return {}['x']\n")
    loaded = load_model_script(path)
    with pytest.raises(ModelScriptError, match=r"model_script\.py: inputs\(\) raised KeyError: 'x'"):
        loaded.batch()
    path = script(tmp_path, "def model():\n    return None\n\ndef inputs():\n    return ['a', 'b']\n")
    with pytest.raises(ModelScriptError, match=r"inputs\(\) item 0 is str"):
        load_model_script(path).batch()


def test_bad_options():
    with pytest.raises(EmulationError, match="relative noise must be a number > 0"):
        EmulationOptions(numerics="ideal", perturb={"conv": -1.0})
    with pytest.raises(EmulationError, match="--fusion must be one of on, off, both"):
        EmulationOptions(numerics="ideal", fusion="maybe")
    with pytest.raises(UsageError, match="expected OP=FAULT"):
        parse_perturbations(["conv:0.3"])
    assert parse_perturbations(["a/b=c=0.25"]) == {"a/b=c": Fault("noise", 0.25)}


def test_workspace_is_never_replaced_unless_it_is_an_emulation(tmp_path):
    """One rule, said once (issue 39): a folder that is no emulation is refused with or without --force, and the
    message does not offer --force; an earlier emulation offers it."""
    (tmp_path / "data.txt").write_text("mine")
    for force in (False, True):
        with pytest.raises(WorkspaceError) as refused:
            check_workspace(str(tmp_path), force=force)
        assert str(refused.value) == (f"{tmp_path}: folder exists, is not empty and holds no earlier emulation (no "
                                      "manifest.json) (choose a new folder)")
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(WorkspaceError) as refused:
        check_workspace(str(tmp_path))
    assert str(refused.value) == f"{tmp_path}: holds an earlier emulation (pass --force to replace it, or choose a " \
                                 "new folder)"
    assert check_workspace(str(tmp_path), force=True) == str(tmp_path)


def test_cli_error_is_one_line_exit_2(tmp_path, capsys):
    assert main(["emulate", str(tmp_path / "missing.py"), "-o", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.py: no such model script" in err


def test_model_that_is_not_callable(tmp_path):
    from precision_tool.capture.emulate.run import emulate_model

    with pytest.raises(ModelScriptError, match=r"cnn\.py: model\(\) returned int; expected a Keras model"):
        emulate_model(3, [], str(tmp_path / "ws"), script="cnn.py")
    assert not (tmp_path / "ws").exists()


def test_graph_model_script_and_scripts_defining_both_or_neither(tmp_path):
    from precision_tool.capture.emulate.tf_freeze import GraphFunction

    path = script(tmp_path, "def graph_model(image):\n    return image\n\ndef inputs():\n    return 1.0\n")
    built = load_model_script(path).build_model()
    assert isinstance(built, GraphFunction) and built.function(7) == 7  # not called while loading
    path = script(tmp_path, "def graph_model(x):\n    return x\n\ndef model():\n    return None\n\n"
                            "def inputs():\n    return 1.0\n")
    with pytest.raises(ModelScriptError, match=r"model_script\.py: defines both model\(\) and graph_model\(\) "
                                               r"\(keep one: model\(\) for Keras"):
        load_model_script(path)
    path = script(tmp_path, "def graph_model(x):\n    return x\n")
    with pytest.raises(ModelScriptError, match=r"model_script\.py: defines no inputs\(\) function \("):
        load_model_script(path)


def test_graph_model_placeholders_take_its_parameter_names():
    from precision_tool.capture.emulate.tf_freeze import _input_names
    from precision_tool.capture.emulate.train_step import _placeholder_names

    def two(image, mask):
        return image

    def bad(_x):
        return _x

    assert _placeholder_names(two, 2) == ["image", "mask"]
    assert _placeholder_names(two, 1) == ["input"]  # a batch of another arity: generic names
    assert _placeholder_names(bad, 1) == ["input"]  # "_x" is no valid TensorFlow op name
    assert _input_names(lambda *tensors: tensors, 2) == ("input_0", "input_1")


def test_tracing_hints_point_to_the_right_fix():
    from precision_tool.capture.emulate.tf_freeze import KERAS2_HINT, TF1_HINT, _trace_hint, graph_code_hint

    keras3 = "AttributeError: `conv2d` is not available with Keras 3."
    assert _trace_hint(keras3) == TF1_HINT  # model(): use graph_model()
    assert graph_code_hint(keras3) == KERAS2_HINT  # graph_model(): Keras 2 was not loaded
    assert "graph_model(inputs)" in TF1_HINT and "TF_USE_LEGACY_KERAS=1" in KERAS2_HINT
    assert graph_code_hint("ValueError: shapes (2, 3) and (4, 5) are incompatible") is None


@pytest.mark.parametrize("ops, named", [
    ([("x", "Placeholder"), ("w/enter/_1", "Enter"), ("w/merge/_2", "Merge"), ("w/LoopCond/_3", "LoopCond"),
      ("w/switch/_4", "Switch"), ("w/exit/_5", "Exit")], "op w/LoopCond/_3 (LoopCond) belongs to a TF1 while loop"),
    ([("c/input/_5", "Switch"), ("w/exit/_5", "Exit")], "op c/input/_5 (Switch) belongs to a TF1 while loop"),
    ([("x", "Placeholder"), ("c/indexed_case/input/_7", "_SwitchN")], "op c/indexed_case/input/_7 (_SwitchN, from "
                                                                        "tf.cond / tf.case) is TF1 control flow"),
])
def test_tf1_control_flow_left_is_refused_naming_the_loop_before_any_switch(ops, named):
    from precision_tool.capture.emulate.tf_freeze import check_control_flow

    with pytest.raises(EmulationError) as info:
        check_control_flow(ops, "m.py")
    assert str(info.value).startswith(f"m.py: {named}") and "\n" not in str(info.value)
    check_control_flow([("x", "Placeholder"), ("y", "Relu")], "m.py")  # none: no error


def test_staged_workspace_replaces_only_when_committed(tmp_path):
    from precision_tool.capture.emulate.run import StagedWorkspace

    target = tmp_path / "new" / "deeper" / "ws"
    staged = StagedWorkspace(str(target), force=False)
    assert Path(staged.path).parent == target.parent and not target.exists()
    staged.discard()
    assert not (tmp_path / "new").exists()  # the parents it created go too
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "manifest.json").write_text("old")
    staged = StagedWorkspace(str(earlier), force=True)
    (Path(staged.path) / "manifest.json").write_text("new")
    assert (earlier / "manifest.json").read_text() == "old"  # untouched until the commit
    assert staged.commit() == str(earlier)
    assert (earlier / "manifest.json").read_text() == "new" and sorted(os.listdir(tmp_path)) == ["earlier"]
    staged = StagedWorkspace(str(earlier), force=False)  # not forced: the finished emulation stays
    with pytest.raises(WorkspaceError, match="holds an earlier emulation"):
        staged.commit()
    staged.discard()
    assert sorted(os.listdir(tmp_path)) == ["earlier"]


def test_a_folder_without_manifest_is_never_replaced_and_the_message_says_why(tmp_path):
    (tmp_path / "tf").mkdir()
    with pytest.raises(WorkspaceError) as info:
        check_workspace(str(tmp_path), force=True)
    assert "holds no earlier emulation (no manifest.json)" in str(info.value)


@pytest.mark.parametrize("text, kind, expected", [
    # TensorFlow's "in user code:" traceback, Keras's wrapping, terminal colours and argument lists
    ("in user code:\n\n    File \"/x/tf_graph.py\", line 150, in call  *\n        return model(x)\n"
     "    File \"/m.py\", line 15, in call\n        if tf.reduce_sum(h) > 0:\n\n"
     "    OperatorNotAllowedInGraphError: Exception encountered when calling Net.call().\n    \n"
     "    \x1b[1mUsing a symbolic `tf.Tensor` as a Python `bool` is not allowed. You can attempt the following "
     "resolutions to the problem: If you are running in Graph mode, use Eager execution mode or decorate this "
     "function with @tf.function.\x1b[0m\n    \n    Arguments received by Net.call():\n      \u2022 x=tf.Tensor\n",
     "OperatorNotAllowedInGraphError",
     "OperatorNotAllowedInGraphError: Using a symbolic `tf.Tensor` as a Python `bool` is not allowed."),
    ("Exception encountered when calling Gate.call().\n\n\x1b[1mCould not automatically infer the output shape / "
     "dtype of 'gate' (of type Gate). Error encountered:\n\nboom happened\x1b[0m\n", "ValueError",
     "ValueError: boom happened"),
    ("MLIR Graph Optimizer failed: ", "InvalidArgumentError",
     "InvalidArgumentError: MLIR Graph Optimizer failed: (TensorFlow logged the details above)"),
    ("boom in train_graph", "ValueError", "ValueError: boom in train_graph"),
    ("", "KeyError", "KeyError"),
])
def test_a_wrapped_tensorflow_or_keras_error_is_told_by_its_cause_in_one_line(text, kind, expected):
    from precision_tool.capture.emulate.emulate_errors import cause_line

    error = type(kind, (Exception,), {})(text)
    assert cause_line(error) == expected
