"""tfdbg v2 naming without TensorFlow: every execution kept under documented names, arguments recovered from
eager executions, weights and model inputs aliased through the capture's names file.

The folders are written by hand with :func:`write_tfdbg_v2_events` in the shapes TF 2.6.5 and 2.21 write
(``docs/capture-keras-tf2.md``: graphs, ``input_names``, placeholders first arguments then captures,
``Execution`` records with eager tensor ids); every expected name below is derived by hand from the
scheme in :mod:`precision_tool.formats.tfdbg_v2_names`.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from precision_tool.errors import ReferenceFormatError
from precision_tool.formats.capture_names import (NAMES_FILE, CaptureNames, ModelInput, ModelNames, VariableName,
                                                  read_capture_names, write_capture_names)
from precision_tool.formats.tf_reference import convert_tfdbg_run
from precision_tool.formats.tfdbg_v2_events import (EAGER_SOURCE, ExecutionSpec, GraphSpec, OpSpec,
                                                    read_v2_structure, write_tfdbg_v2_events)
from precision_tool.formats.tfdbg_v2_names import name_v2_dump

pytestmark = pytest.mark.compat  # pure readers: they must work on the users' Python 3.7 and 3.9 too

T0 = 1_700_000_000.0
EAGER = GraphSpec("g-eager", "")


def values(n, start=0.0):
    return np.arange(start, start + n, dtype=np.float32)


def nested_dump(folder):
    """outer(t) calls inner twice (TF 2.6 shape: placeholders traced); outer itself is called twice."""
    records = [EAGER, GraphSpec("g-outer", "outer", "g-eager"), OpSpec("g-outer", "t", "Placeholder"),
               GraphSpec("g-inner", "inner", "g-outer"), OpSpec("g-inner", "t", "Placeholder"),
               OpSpec("g-inner", "Relu", "Relu", ["t:0"]),
               OpSpec("g-outer", "add", "AddV2", ["StatefulPartitionedCall:0", "StatefulPartitionedCall_1:0"])]
    traces, clock = [], T0
    for _call in range(2):
        for graph, op in (("g-outer", "t"), ("g-inner", "t"), ("g-inner", "Relu"), ("g-inner", "t"),
                          ("g-inner", "Relu"), ("g-outer", "add")):
            clock += 1
            traces.append((graph, op, 0, values(2, clock - T0), clock))
    write_tfdbg_v2_events(folder, records, traces)


def test_repeated_and_nested_calls_are_all_kept_under_distinct_names(tmp_path):
    nested_dump(tmp_path / "v2")
    naming = name_v2_dump(tmp_path / "v2")
    # outer's t ran first, so it keeps "t"; inner's t is qualified by its function path. Each later
    # execution of the same op output in the same graph is name@k (k = 0, 1, 2, ... in its graph).
    assert [named.name for named in naming.tensors] == [
        "t", "outer/inner/t", "Relu", "outer/inner/t@1", "Relu@1", "add",
        "t@1", "outer/inner/t@2", "Relu@2", "outer/inner/t@3", "Relu@3", "add@1"]
    assert [named.execution for named in naming.tensors][:6] == [0, 0, 0, 1, 1, 0]
    assert naming.tensors[1].graph == ("outer", "inner") and naming.tensors[1].record.op_name == "t"
    assert naming.tensors[7].record.load().tolist() == [8.0, 9.0]  # the 8th trace holds values(2, 8)
    assert naming.aliases == () and naming.notes == ()


def test_same_function_path_twice_gets_a_numbered_prefix(tmp_path):
    """A function retraced for new shapes has two graphs of one name: the later one is f_1."""
    records = [EAGER, GraphSpec("g1", "f", "g-eager"), OpSpec("g1", "mm", "MatMul"),
               GraphSpec("g2", "f", "g-eager"), OpSpec("g2", "mm", "MatMul")]
    traces = [("g1", "mm", 0, values(1), T0), ("g2", "mm", 0, values(1, 1), T0 + 1),
              ("g2", "mm", 0, values(1, 2), T0 + 2)]
    write_tfdbg_v2_events(tmp_path / "v2", records, traces)
    assert [n.name for n in name_v2_dump(tmp_path / "v2").tensors] == ["mm", "f/mm", "f/mm@1"]
    records[3] = GraphSpec("g2", "g", "g-eager")
    write_tfdbg_v2_events(tmp_path / "v2b", records + [GraphSpec("g3", "g", "g-eager"), OpSpec("g3", "mm", "MatMul")],
                          traces + [("g3", "mm", 0, values(1, 3), T0 + 3)])
    assert [n.name for n in name_v2_dump(tmp_path / "v2b").tensors] == ["mm", "g/mm", "g/mm@1", "g_1/mm"]


def keras_like_dump(folder, *, traced_arguments, nested=False, data_value=True):
    """A Keras model ``net`` (Input ``image`` -> layer ``conv``) in function ``step(images, labels)``.

    TF 2.21 shape (``traced_arguments=False``): placeholders are not traced; the call's Execution says
    which eager tensors went in: 101 (images, from IteratorGetNext, recorded with its value), 102
    (labels: a tf.constant, no record) and the handles 11 and 12 of two VarHandleOps.
    ``nested=True``: step is called inside ``outer`` (Keras 3 fit: multi_step_on_iterator), whose two
    capture placeholders, created when step was called, take the handles.
    """
    step_outer = "g-outer" if nested else "g-eager"
    records = [EAGER]
    if nested:
        records += [GraphSpec("g-outer", "outer", "g-eager"), OpSpec("g-outer", "iterator", "Placeholder"),
                    OpSpec("g-outer", "IteratorGetNext", "IteratorGetNext", ["iterator:0"], 2)]
    records += [
        GraphSpec("g-step", "step", step_outer),
        OpSpec("g-step", "images", "Placeholder"), OpSpec("g-step", "labels", "Placeholder"),
        OpSpec("g-step", "net/conv/Conv2D/ReadVariableOp/resource", "Placeholder"),
        OpSpec("g-step", "net/conv/Conv2D/ReadVariableOp", "ReadVariableOp",
               ["net/conv/Conv2D/ReadVariableOp/resource:0"]),
        OpSpec("g-step", "net/conv/Conv2D", "Conv2D", ["images:0", "net/conv/Conv2D/ReadVariableOp:0"]),
        OpSpec("g-step", "net/conv/BiasAdd/ReadVariableOp/resource", "Placeholder"),
        OpSpec("g-step", "net/conv/BiasAdd/ReadVariableOp", "ReadVariableOp",
               ["net/conv/BiasAdd/ReadVariableOp/resource:0"]),
        OpSpec("g-step", "net/conv/BiasAdd", "BiasAdd", ["net/conv/Conv2D:0", "net/conv/BiasAdd/ReadVariableOp:0"]),
        OpSpec("g-step", "sub", "Sub", ["net/conv/BiasAdd:0", "labels:0"]),
    ]
    if nested:
        records += [OpSpec("g-outer", "390", "Placeholder"), OpSpec("g-outer", "392", "Placeholder")]
    traces = []
    if traced_arguments:
        traces += [("g-step", "images", 0, values(4), T0 + 1), ("g-step", "labels", 0, values(4, 10), T0 + 1.5)]
    if nested:
        traces += [("g-outer", "IteratorGetNext", 0, values(4, 20), T0 + 1)]
    traces += [("g-step", "net/conv/Conv2D/ReadVariableOp", 0, np.float32([2.0]), T0 + 2),
               ("g-step", "net/conv/Conv2D", 0, values(4, 100), T0 + 3),
               ("g-step", "net/conv/BiasAdd/ReadVariableOp", 0, np.float32([0.5]), T0 + 4),
               ("g-step", "net/conv/BiasAdd", 0, values(4, 200), T0 + 5)]
    executions = [ExecutionSpec("VarHandleOp", (), (11,), (None,), wall_time=T0 - 10),
                  ExecutionSpec("VarHandleOp", (), (12,), (None,), wall_time=T0 - 9),
                  ExecutionSpec("IteratorGetNext", (7,), (101,), (values(4, 50) if data_value else None,),
                                wall_time=T0 - 1)]
    if nested:
        executions.append(ExecutionSpec("__inference_outer_9", (7, 11, 12), (300,), (None,), "g-outer", T0 + 6))
    else:
        executions.append(ExecutionSpec("__inference_step_9", (101, 102, 11, 12), (300,), (None,), "g-step", T0 + 6))
    write_tfdbg_v2_events(folder, records, traces, executions)


NAMES = dict(models=[ModelNames("net", (ModelInput("image", ("conv",)),))],
             variables=[VariableName("conv/kernel", 11), VariableName("conv/bias", 12)])


def test_untraced_arguments_come_from_the_eager_op_that_made_them(tmp_path):
    keras_like_dump(tmp_path / "v2", traced_arguments=False)
    naming = name_v2_dump(tmp_path / "v2")
    first = naming.tensors[0]
    assert (first.name, first.record.op_type, first.record.source_format) == ("images", "Placeholder", EAGER_SOURCE)
    assert first.record.load().tolist() == [50.0, 51.0, 52.0, 53.0] and first.record.timestamp_us == (T0 - 1) * 1e6
    assert naming.recovered_arguments == 1
    # labels came from a tf.constant: no record; the handles are not data and not counted
    assert naming.notes[0].startswith("1 tf.function arguments have no value in the dump")
    assert naming.notes[1].startswith("No names file (precision_tool_names.json) in the capture")


def test_variables_and_model_input_get_aliases_from_the_names_file(tmp_path):
    folder = tmp_path / "v2"
    keras_like_dump(folder, traced_arguments=False)
    write_capture_names(folder, **NAMES)
    naming = name_v2_dump(folder)
    assert [(a.tensor_name, a.target, a.kind) for a in naming.aliases] == [
        ("image:0", "images:0", "model input"),
        ("conv/kernel:0", "net/conv/Conv2D/ReadVariableOp:0", "variable"),
        ("conv/bias:0", "net/conv/BiasAdd/ReadVariableOp:0", "variable")]
    assert naming.names_file and len(naming.notes) == 1  # only the labels argument without a value


def test_nested_function_variables_are_followed_through_the_outer_captures(tmp_path):
    folder = tmp_path / "v2"
    keras_like_dump(folder, traced_arguments=False, nested=True)
    write_capture_names(folder, **NAMES)
    naming = name_v2_dump(folder)
    assert [(a.tensor_name, a.target) for a in naming.aliases] == [
        ("conv/kernel:0", "net/conv/Conv2D/ReadVariableOp:0"), ("conv/bias:0", "net/conv/BiasAdd/ReadVariableOp:0")]
    (note,) = naming.notes
    assert note == ("Model input 'image' of 'net' enters as images:0 in outer/step, which the dump holds no value of "
                    "(an argument of a nested function, which TF 2.21 does not trace); name the tensor that feeds it "
                    "with --alias, e.g. --alias IteratorGetNext:0=image.")


def test_traced_arguments_tf26_are_used_as_they_are(tmp_path):
    folder = tmp_path / "v2"
    keras_like_dump(folder, traced_arguments=True)
    write_capture_names(folder, **NAMES)
    naming = name_v2_dump(folder)
    assert naming.recovered_arguments == 0 and naming.notes == ()
    assert [n.name for n in naming.tensors][:2] == ["images", "labels"]
    assert naming.tensors[0].record.load().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert naming.aliases[0].target == "images:0"


def test_conversion_writes_aliases_as_second_names_of_the_same_file(tmp_path):
    folder = tmp_path / "v2"
    keras_like_dump(folder, traced_arguments=False)
    write_capture_names(folder, **NAMES)
    conversion = convert_tfdbg_run(folder, tmp_path / "ref", aliases={"net/conv/BiasAdd": "bias_out",
                                                                      "sub:0": "nothing", "images": "net/conv/Conv2D"})
    by_name = {t.tensor_name: t for t in conversion.tensors}
    assert [(a.tensor_name, a.target, a.kind) for a in conversion.aliases] == [
        ("image:0", "images:0", "model input"), ("conv/kernel:0", "net/conv/Conv2D/ReadVariableOp:0", "variable"),
        ("conv/bias:0", "net/conv/BiasAdd/ReadVariableOp:0", "variable"),
        ("bias_out:0", "net/conv/BiasAdd:0", "--alias")]
    for alias in conversion.aliases:
        target = by_name[alias.target]
        assert os.path.samefile(alias.path, target.path)
        assert alias.file == f"{alias.name.replace('/', '_')}.0.{target.timestamp_us}.npy"
    assert np.load(conversion.aliases[1].path).tolist() == [2.0]
    assert conversion.notes[-2:] == (
        "Alias nothing:0 (--alias) not written: no reference tensor sub:0 was written.",
        "Alias net/conv/Conv2D:0 for images:0 (--alias) not written: that name is already a reference tensor or "
        "another alias.")
    assert sorted(n for n in os.listdir(tmp_path / "ref") if n.endswith(".npy")) == sorted(
        [t.file for t in conversion.tensors] + [a.file for a in conversion.aliases])


def fit_and_predict_dump(folder, *, predict_first=False):
    """Keras 3 on TF 2.21: ``model.fit`` one step and ``model.predict`` in one capture.

    fit: ``multi_step_on_iterator(iterator)`` traces ``IteratorGetNext`` (x = values(4, 20), y) and calls the
    nested ``one_step_on_data(data, data_1)``, whose ``data`` the model reads and which has no value.
    predict: ``one_step_on_data_distributed(data)``, top level, fed by an eager ``IteratorGetNext``
    (values(4, 70), tensor id 201) -- another batch. Whichever runs first keeps the bare op names.
    """
    records = [EAGER,
               GraphSpec("g-fit", "multi_step_on_iterator", "g-eager"), OpSpec("g-fit", "iterator", "Placeholder"),
               OpSpec("g-fit", "IteratorGetNext", "IteratorGetNext", ["iterator:0"], 2),
               GraphSpec("g-step", "one_step_on_data", "g-fit"),
               OpSpec("g-step", "data", "Placeholder"), OpSpec("g-step", "data_1", "Placeholder"),
               OpSpec("g-step", "net_1/conv_1/convolution", "Conv2D", ["data:0"]),
               OpSpec("g-step", "sub", "Sub", ["net_1/conv_1/convolution:0", "data_1:0"]),
               GraphSpec("g-pred", "one_step_on_data_distributed", "g-eager"),
               OpSpec("g-pred", "data", "Placeholder"),
               OpSpec("g-pred", "net_1/conv_1/convolution", "Conv2D", ["data:0"])]
    fit_at, predict_at = (T0 + 20, T0) if predict_first else (T0, T0 + 20)
    fit_traces = [("g-fit", "IteratorGetNext", 0, values(4, 20), fit_at + 1),
                  ("g-fit", "IteratorGetNext", 1, values(4, 30), fit_at + 1),
                  ("g-step", "net_1/conv_1/convolution", 0, values(4, 120), fit_at + 2)]
    predict_traces = [("g-pred", "net_1/conv_1/convolution", 0, values(4, 170), predict_at + 2)]
    fit_calls = [ExecutionSpec("__inference_multi_step_on_iterator_9", (7,), (300,), (None,), "g-fit", fit_at + 3)]
    predict_calls = [ExecutionSpec("IteratorGetNext", (8,), (201,), (values(4, 70),), wall_time=predict_at + 1),
                     ExecutionSpec("__inference_one_step_on_data_distributed_5", (201,), (301,), (None,), "g-pred",
                                   predict_at + 3)]
    traces = predict_traces + fit_traces if predict_first else fit_traces + predict_traces
    executions = predict_calls + fit_calls if predict_first else fit_calls + predict_calls
    write_tfdbg_v2_events(folder, records, traces, executions)
    write_capture_names(folder, models=[ModelNames("net", (ModelInput("image", ("conv",)),))])


def test_fit_then_predict_the_model_input_is_never_taken_from_the_other_function(tmp_path):
    """The bare net_1/conv_1/convolution is fit's (it ran first), so image must be fit's batch; fit's data
    has no value, and predict's data (recovered from its eager IteratorGetNext) is another batch: a note,
    no alias (review finding: image:0 = data:0 paired the NPU's fit conv with the predict batch)."""
    folder = tmp_path / "v2"
    fit_and_predict_dump(folder)
    naming = name_v2_dump(folder)
    assert [n.tensor_name for n in naming.tensors] == [
        "IteratorGetNext:0", "IteratorGetNext:1", "net_1/conv_1/convolution:0", "data:0",
        "one_step_on_data_distributed/net_1/conv_1/convolution:0"]
    assert naming.tensors[3].graph == ("one_step_on_data_distributed",)
    assert naming.aliases == ()
    assert naming.notes == (
        "Model input 'image' of 'net' enters as data:0 in multi_step_on_iterator/one_step_on_data, which the dump "
        "holds no value of (an argument of a nested function, which TF 2.21 does not trace); name the tensor that "
        "feeds it with --alias, e.g. --alias IteratorGetNext:0=image. The input recorded in "
        "one_step_on_data_distributed is not borrowed: it belongs to another function (another batch; the "
        "model's ops there are the prefixed copies).",)
    # the documented workaround then names fit's batch
    conversion = convert_tfdbg_run(folder, tmp_path / "ref", aliases={"IteratorGetNext:0": "image"})
    (alias,) = conversion.aliases
    assert (alias.tensor_name, alias.target, alias.kind) == ("image:0", "IteratorGetNext:0", "--alias")
    assert np.load(alias.path).tolist() == [20.0, 21.0, 22.0, 23.0]


def test_predict_then_fit_the_model_input_is_predicts_batch(tmp_path):
    """Predict ran first: its ops keep the bare names, and its recorded data is the model input."""
    folder = tmp_path / "v2"
    fit_and_predict_dump(folder, predict_first=True)
    naming = name_v2_dump(folder)
    assert [n.tensor_name for n in naming.tensors] == [
        "data:0", "net_1/conv_1/convolution:0", "IteratorGetNext:0", "IteratorGetNext:1",
        "multi_step_on_iterator/one_step_on_data/net_1/conv_1/convolution:0"]
    assert [(a.tensor_name, a.target, a.kind) for a in naming.aliases] == [("image:0", "data:0", "model input")]
    assert naming.notes == ()


def test_user_alias_replaces_an_automatic_alias_of_the_same_name(tmp_path):
    """--alias IteratorGetNext:0=image wins over the automatic image:0 = data:0 (review finding: it was
    refused as 'already another alias'); the automatic alias's file is gone, and a note says so."""
    folder = tmp_path / "v2"
    fit_and_predict_dump(folder, predict_first=True)
    out = tmp_path / "ref"
    conversion = convert_tfdbg_run(folder, out, aliases={"IteratorGetNext:0": "image"})
    by_name = {t.tensor_name: t for t in conversion.tensors}
    (alias,) = conversion.aliases
    assert (alias.tensor_name, alias.target, alias.kind) == ("image:0", "IteratorGetNext:0", "--alias")
    assert os.path.samefile(alias.path, by_name["IteratorGetNext:0"].path)
    assert conversion.notes == (
        "Alias image:0 = IteratorGetNext:0 (--alias) replaces the automatic model input alias image:0 = data:0.",)
    assert sorted(n for n in os.listdir(out) if n.endswith(".npy")) == sorted([t.file for t in conversion.tensors]
                                                                       + [alias.file])
    assert [name for name in os.listdir(out) if name.startswith("image.")] == [alias.file]
    # the same target as the automatic alias: kept, marked as the user's, nothing to say
    again = convert_tfdbg_run(folder, tmp_path / "ref2", aliases={"data": "image"})
    assert [(a.tensor_name, a.target, a.kind) for a in again.aliases] == [("image:0", "data:0", "--alias")]
    assert again.notes == ()


def test_names_file_round_trip_merge_and_errors(tmp_path):
    assert read_capture_names(tmp_path) is None
    path = write_capture_names(tmp_path, **NAMES)
    write_capture_names(tmp_path, variables=[VariableName("conv/kernel", 11), VariableName("fc/kernel", 13)])
    names = read_capture_names(tmp_path)
    assert names == CaptureNames(tuple(NAMES["models"]), tuple(NAMES["variables"]) + (VariableName("fc/kernel", 13),))
    assert names.variable_names() == {11: "conv/kernel", 12: "conv/bias", 13: "fc/kernel"}
    assert json.loads(open(path).read())["format"] == "precision_tool.capture_names/1"
    (tmp_path / NAMES_FILE).write_text('{"format": "other"}')
    with pytest.raises(ReferenceFormatError, match="not a precision_tool names file"):
        read_capture_names(tmp_path)
    (tmp_path / NAMES_FILE).write_text("{")
    with pytest.raises(ReferenceFormatError, match="not JSON"):
        read_capture_names(tmp_path)


def test_structure_reads_graphs_placeholders_and_executions(tmp_path):
    keras_like_dump(tmp_path / "v2", traced_arguments=False, nested=True)
    structure = read_v2_structure(tmp_path / "v2")
    assert structure.path("g-step") == ("outer", "step") and structure.outer_function("g-outer") is None
    assert [op.op_name for op in structure.placeholders("g-step")][:2] == ["images", "labels"]
    (call,) = structure.calls("g-outer")
    assert call.input_ids == (7, 11, 12) and call.op_type == "__inference_outer_9"
    execution, slot = structure.eager_producer(101)
    assert execution.op_type == "IteratorGetNext" and slot == 0 and execution.outputs[0].shape == (4,)
