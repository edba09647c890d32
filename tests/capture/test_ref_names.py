"""record_reference_names: the public way to leave Keras names beside a tfdbg v2 capture (no TF needed here)."""
import json

import pytest

from precision_tool.capture import reference_names
from precision_tool.errors import CaptureError


class _Handle:
    def __init__(self, handle_id):
        self._id = handle_id


class _Variable:  # a Keras 2 variable: the tf.Variable itself
    def __init__(self, name, handle_id):
        self.name, self.handle = name, _Handle(handle_id)


class _Keras3Variable:  # Keras 3 wraps the tf.Variable in .value
    def __init__(self, name, handle_id):
        self.value = _Variable(name, handle_id)


class _Layer:
    def __init__(self, name, kind="Dense", consumers=()):
        self.name = name
        self._outbound_nodes = [type("Node", (), {"operation": _Layer(c)})() for c in consumers]


class InputLayer(_Layer):
    pass


class _Model:
    name = "net"
    layers = [InputLayer("image", consumers=("conv",)), _Layer("conv")]
    variables = [_Variable("conv/kernel:0", 17), _Keras3Variable("conv/bias:0", 19), object()]


@pytest.mark.compat
def test_names_of_inputs_and_variables_go_into_the_capture_folder(tmp_path):
    path = reference_names.record_reference_names(_Model(), dump_root=str(tmp_path))
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["models"] == [{"name": "net", "inputs": [{"name": "image", "consumers": ["conv"]}]}]
    # the third "variable" has no handle (graph mode): tfdbg v2 never sees it, so it is left out
    assert data["variables"] == [{"name": "conv/kernel", "handle_id": 17}, {"name": "conv/bias", "handle_id": 19}]


@pytest.mark.compat
def test_without_a_running_capture_or_a_model_the_error_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(reference_names, "_current_root", None)
    with pytest.raises(CaptureError, match="enable_reference_dump"):
        reference_names.record_reference_names(_Model())
    with pytest.raises(CaptureError, match="expects a Keras model, got int"):
        reference_names.record_reference_names(3, dump_root=str(tmp_path))
