"""A bad MODEL_SCRIPT or option is one clear line naming the script (no TensorFlow needed)."""
import pytest

from precision_tool.capture.emulate.errors import EmulationError, ModelScriptError
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


def test_exception_while_importing_names_the_script(tmp_path):
    path = script(tmp_path, "raise RuntimeError('boom\\nsecond line')\n")
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
        EmulationOptions(perturb={"conv": -1.0})
    with pytest.raises(EmulationError, match="--fusion must be one of on, off, both"):
        EmulationOptions(fusion="maybe")
    with pytest.raises(UsageError, match="expected OP=REL"):
        parse_perturbations(["conv:0.3"])
    assert parse_perturbations(["a/b=c=0.25"]) == {"a/b=c": 0.25}


def test_workspace_is_never_replaced_unless_it_is_an_emulation(tmp_path):
    (tmp_path / "data.txt").write_text("mine")
    with pytest.raises(WorkspaceError, match="not empty"):
        check_workspace(str(tmp_path))
    with pytest.raises(WorkspaceError, match="holds no manifest.json"):
        check_workspace(str(tmp_path), force=True)


def test_cli_error_is_one_line_exit_2(tmp_path, capsys):
    assert main(["emulate", str(tmp_path / "missing.py"), "-o", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.py: no such model script" in err


def test_model_that_is_not_callable(tmp_path):
    from precision_tool.capture.emulate.run import emulate_model

    with pytest.raises(ModelScriptError, match=r"cnn\.py: model\(\) returned int; expected a Keras model"):
        emulate_model(3, [], str(tmp_path / "ws"), script="cnn.py")
    assert not (tmp_path / "ws").exists()
