"""Keras captures under real tfdbg v2: inputs and weights under names that align, every call kept.

``scripts/keras_names_capture.py`` runs one small functional model (Input ``image`` -> Conv2D ``conv`` ->
Flatten -> Dense ``fc``) through ``model.predict``, a ``tf.function`` called twice, a GradientTape step,
``model.fit``, ``model.fit`` then ``model.predict``, and nested functions, each under
``enable_reference_dump`` with the names file a capture helper writes, in a subprocess per Keras flavour
the interpreter has: Keras 3 (``keras``, TF 2.21), Keras 2 (``tf_keras`` on TF 2.21, ``tf.keras`` in
TF 2.6). This process never imports TensorFlow: it converts each capture and checks names against what
the scheme gives by hand, values against what TF itself returned (weights before the step, inputs,
outputs). With TF 1.15 (no tfdbg v2) the tests skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.tf_reference import convert_tfdbg_run

pytestmark = pytest.mark.tf
SCRIPT = Path(__file__).resolve().parent / "scripts" / "keras_names_capture.py"
REPO = Path(__file__).resolve().parents[2]
FLAVOURS = ("keras", "tf_keras", "tf.keras")
WEIGHTS = ("conv/kernel", "conv/bias", "fc/kernel", "fc/bias")
PROBE = r"""
import importlib.util, json, sys
flavour = sys.argv[1]
import tensorflow as tf
major, minor = (int(part) for part in tf.__version__.split(".")[:2])
if not hasattr(getattr(tf.debugging, "experimental", None), "enable_dump_debug_info"):
    reason = f"TF {tf.__version__} has no tfdbg v2 (tf.debugging.experimental.enable_dump_debug_info)"
elif flavour == "keras":
    import keras
    reason = "" if int(keras.__version__.split(".")[0]) >= 3 else f"keras {keras.__version__} is not Keras 3"
elif flavour == "tf_keras":
    reason = "" if importlib.util.find_spec("tf_keras") else "tf_keras (Keras 2 for TF >= 2.16) is not installed"
else:
    reason = "" if (major, minor) < (2, 16) else f"tf.keras is Keras 3 in TF {tf.__version__}"
print(json.dumps(reason))
"""


class _Run:
    def __init__(self, flavour: str, out: Path):
        self.flavour, self.out = flavour, out
        env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        env.pop("TF_ENABLE_ONEDNN_OPTS", None)
        command = (f"import subprocess, sys\nreason = subprocess.run([sys.executable, '-c', {PROBE!r}, {flavour!r}], "
                   f"capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]\n"
                   f"if reason != '\"\"':\n    print('SKIP', reason); sys.exit(0)\n"
                   f"sys.argv = [{str(SCRIPT)!r}, {str(out)!r}, {flavour!r}]\n"
                   f"exec(compile(open({str(SCRIPT)!r}).read(), {str(SCRIPT)!r}, 'exec'), {{'__name__': '__main__'}})")
        self.process = subprocess.Popen([sys.executable, "-c", command], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env=env)

    def result(self) -> dict:
        output, _ = self.process.communicate(timeout=300)
        for line in output.splitlines():
            if line.startswith("SKIP "):
                pytest.skip(json.loads(line[5:]))
        assert self.process.returncode == 0, f"{self.flavour} capture failed:\n{output[-4000:]}"
        return json.loads((self.out / "result.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    started = {flavour: _Run(flavour, tmp_path_factory.mktemp(flavour.replace(".", "_"))) for flavour in FLAVOURS}
    yield started
    for run in started.values():
        if run.process.poll() is None:
            run.process.kill()
            run.process.communicate()


@pytest.fixture(params=FLAVOURS)
def capture(request, runs):
    run = runs[request.param]
    return run.result(), run.out


def convert(result, case, out, **kwargs):
    conversion = convert_tfdbg_run(result[case]["root"], out / f"ref_{case}", clean=True, **kwargs)
    assert conversion, [failure.message for failure in conversion.failures]
    return conversion


def value(conversion, tensor_name):
    """The array stored under a written name or an alias (``name:slot``)."""
    files = {t.tensor_name: t.path for t in conversion.tensors}
    files.update({a.tensor_name: a.path for a in conversion.aliases})
    return np.load(files[tensor_name], allow_pickle=False)


def check_weights(conversion, expected):
    aliases = {alias.tensor_name: alias for alias in conversion.aliases}
    for name in WEIGHTS:
        alias = aliases[f"{name}:0"]
        assert alias.kind == "variable" and alias.target.endswith("/ReadVariableOp:0"), alias
        assert os.path.samefile(alias.path, {t.tensor_name: t.path for t in conversion.tensors}[alias.target])
        np.testing.assert_array_equal(value(conversion, f"{name}:0"), np.float32(expected[name]), err_msg=name)


@pytest.mark.compat
def test_predict_input_and_weights_align(capture, tmp_path):
    result, out = capture
    conversion = convert(result, "predict", out)
    check_weights(conversion, result["predict"]["weights"])
    aliases = {alias.tensor_name: alias for alias in conversion.aliases}
    # Keras 3 feeds the function argument `data` (recovered from the eager IteratorGetNext on TF 2.21);
    # Keras 2 reads the batch with IteratorGetNext inside predict_function.
    assert aliases["image:0"].kind == "model input"
    assert aliases["image:0"].target == ("data:0" if result["flavour"] == "keras" else "IteratorGetNext:0")
    np.testing.assert_array_equal(value(conversion, "image:0"), np.float32(result["x"]))
    outputs = [t for t in conversion.tensors if t.op_type == "BiasAdd" and "/fc" in t.op_name]
    np.testing.assert_allclose(value(conversion, outputs[0].tensor_name), result["predict"]["output"], rtol=1e-6)


@pytest.mark.compat
def test_function_called_twice_keeps_both_calls(capture):
    result, out = capture
    conversion = convert(result, "forward", out)
    written = {t.tensor_name: t for t in conversion.tensors}
    # the argument `images`: traced by TF 2.6, taken from the eager IteratorGetNext by TF 2.21
    np.testing.assert_array_equal(value(conversion, "images:0"), np.float32(result["x"]))
    np.testing.assert_array_equal(value(conversion, "images@1:0"), np.float32(result["x2"]))
    assert (written["images@1:0"].tf_op_name, written["images@1:0"].execution) == ("images", 1)
    assert written["images:0"].graph == written["images@1:0"].graph == ("forward",)
    fc = [t for t in conversion.tensors if t.op_type == "BiasAdd" and "/fc" in t.op_name]
    assert [t.op_name.endswith("@1") for t in fc] == [False, True]
    for tensor, expected in zip(fc, result["forward"]["outputs"]):
        np.testing.assert_allclose(value(conversion, tensor.tensor_name), expected, rtol=1e-6)
    assert dict(conversion.repeated)["images:0"] == 2
    check_weights(conversion, result["forward"]["weights"])
    assert {a.tensor_name: a.target for a in conversion.aliases}["image:0"] == "images:0"


@pytest.mark.compat
def test_gradient_tape_step_weights_are_the_values_before_the_update(capture):
    result, out = capture
    conversion = convert(result, "tape", out)
    check_weights(conversion, result["tape"]["weights"])
    assert not np.array_equal(result["tape"]["weights"]["fc/kernel"], result["tape"]["after"]["fc/kernel"])
    np.testing.assert_array_equal(value(conversion, "image:0"), np.float32(result["x"]))
    scalars = [value(conversion, t.tensor_name) for t in conversion.tensors if t.shape == () and t.dtype == "DT_FLOAT"]
    assert any(np.float32(s) == np.float32(result["tape"]["loss"]) for s in scalars)


@pytest.mark.compat
def test_fit_step_weights_align_and_the_input_is_aliased_where_the_dump_holds_it(capture):
    result, out = capture
    conversion = convert(result, "fit", out)
    check_weights(conversion, result["fit"]["weights"])
    aliases = {alias.tensor_name: alias.target for alias in conversion.aliases}
    if result["flavour"] == "keras":
        # Keras 3 runs one_step_on_data nested in multi_step_on_iterator: its argument `data` is not
        # traced by TF 2.21, so no alias; the note says how to name the batch by hand.
        assert "image:0" not in aliases
        assert any(note.startswith("Model input 'image' of 'net' enters as data:0 in "
                                   "multi_step_on_iterator/one_step_on_data") for note in conversion.notes)
        conversion = convert(result, "fit", out, aliases={"IteratorGetNext:0": "image"})
        aliases = {alias.tensor_name: alias.target for alias in conversion.aliases}
    assert aliases["image:0"] == "IteratorGetNext:0"
    np.testing.assert_array_equal(value(conversion, "image:0"), np.float32(result["x"]))


@pytest.mark.compat
def test_fit_then_predict_the_model_input_is_fits_batch(capture):
    """fit ran first, so the bare op names are fit's: the model input must be fit's batch x, never the
    predict batch x2 (review finding: Keras 3 aliased image to predict's data)."""
    result, out = capture
    conversion = convert(result, "fit_predict", out)
    aliases = {alias.tensor_name: alias.target for alias in conversion.aliases}
    if result["flavour"] == "keras":
        assert "image:0" not in aliases  # fit's data has no value; predict's is not borrowed
        assert any(note.startswith("Model input 'image' of 'net' enters as data:0 in "
                                   "multi_step_on_iterator/one_step_on_data") and
                   "one_step_on_data_distributed is not borrowed" in note for note in conversion.notes)
        np.testing.assert_array_equal(value(conversion, "data:0"), np.float32(result["x2"]))  # predict's, kept
        conversion = convert(result, "fit_predict", out, aliases={"IteratorGetNext:0": "image"})
        aliases = {alias.tensor_name: alias.target for alias in conversion.aliases}
    assert aliases["image:0"] == "IteratorGetNext:0"
    np.testing.assert_array_equal(value(conversion, "image:0"), np.float32(result["x"]))
    fc = [t for t in conversion.tensors if t.op_type == "BiasAdd" and "/fc" in t.op_name]
    np.testing.assert_allclose(value(conversion, fc[-1].tensor_name), result["fit_predict"]["output"], rtol=1e-6)
    assert fc[-1].op_name.startswith("predict_function/" if result["flavour"] != "keras"
                                     else "one_step_on_data_distributed/")


@pytest.mark.compat
def test_nested_and_repeated_functions_are_all_kept(capture):
    result, out = capture
    conversion = convert(result, "nested", out)
    written = {t.op_name: t for t in conversion.tensors}
    relu = [t for t in conversion.tensors if t.op_type == "Relu"]
    # inner runs twice per outer call, outer is called twice: relu, relu@1, relu@2, relu@3
    assert [t.op_name for t in relu] == ["relu", "relu@1", "relu@2", "relu@3"]
    assert all(t.graph == ("outer", "inner") and t.tf_op_name == "relu" for t in relu)
    # By hand: outer([-1, 2]): relu = [0, 2], first = [0, 4]; inner([-3, 1]): relu = [0, 1] -> [0, 2];
    # sum [0, 6]. outer([3, -4]): relu = [3, 0], first = [6, 0]; inner([3, -3]): relu = [3, 0] -> [6, 0];
    # sum [12, 0].
    assert [value(conversion, f"{t.op_name}:0").tolist() for t in relu] == [[0, 2], [0, 1], [3, 0], [3, 0]]
    assert result["nested"]["outputs"] == [[0.0, 6.0], [12.0, 0.0]]
    np.testing.assert_array_equal(value(conversion, "add:0"), [0.0, 6.0])
    np.testing.assert_array_equal(value(conversion, "add@1:0"), [12.0, 0.0])
    if "t" in written:  # TF 2.6 traces the argument t of both functions: outer's ran first
        assert written["t"].graph == ("outer",) and written["outer/inner/t"].graph == ("outer", "inner")
        assert [value(conversion, f"{name}:0").tolist() for name in ("t", "outer/inner/t", "outer/inner/t@1")] == [
            [-1.0, 2.0], [-1.0, 2.0], [-3.0, 1.0]]
