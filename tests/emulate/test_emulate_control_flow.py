"""Control flow emulated by unrolling the path the batch takes (issue 16): tf.cond, tf.case, while loops, nested
control flow, TensorArrays, a Keras 2 LSTM and a Keras 3 GRU without ``unroll``, TF1 graph code with
``tf.compat.v1.cond``.

The emulations run once in a subprocess (scripts/control_flow_cases.py). Checked against independent sources:
TensorFlow's own output of the original model (eager, or a TF1 session running the control flow) against the
reference capture of the unrolled graph; the path and trip counts derived by hand from the models and the
naming rule of docs/emulate.md; a fault planted in one iteration found there by ``ac -c``."""
import json
from pathlib import Path

import numpy as np
import pytest
from emulate_helpers import CaseOutput, assert_clean_autocheck, run_case_output

from test_emulate_batchnorm import build_graph, reference

pytestmark = pytest.mark.tf
SCRIPTS = Path(__file__).resolve().parent / "scripts"
CASES = ("cond", "cond_else", "case", "while", "nested", "tensor_array", "lstm", "gru", "graph_cond", "print_cond",
         "dynamic_array", "counter_only")
CLEAN = CASES[:-1]  # counter_only computes nothing on the NPU: nothing to compare
LSTM = "rnn/lstm/PartitionedCall/while"
GRU = "gru_net_1/gru_1/while"


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> CaseOutput:
    modules = ("tensorflow", "tf_keras", "keras")
    return CaseOutput(run_case_output(tmp_path_factory, SCRIPTS / "control_flow_cases.py", modules))


def tf_ops(ws: Path) -> dict:
    """TF op name -> NPU op type, for every TF op an NPU op of the Build graph carries (fused ones too)."""
    found = {}
    for op in build_graph(ws).ops:
        for name in op.original_op_names or (op.name,):
            found[name] = op.type
    return found


@pytest.mark.parametrize("case", CLEAN)
def test_ac_names_no_culprit_and_every_dumped_npu_tensor_is_aligned(cases, case):
    assert_clean_autocheck(cases.summary[case])


@pytest.mark.parametrize("case", CASES)
def test_the_unrolled_reference_equals_tensorflow_running_the_original_control_flow(cases, case):
    ws = cases[case]
    (output,) = json.loads((ws / "manifest.json").read_text())["outputs"]
    expected = np.load(str(cases[f"{case}.expected.npy"]))
    captured = reference(ws, output.split(":")[0])
    assert captured.shape == expected.shape
    np.testing.assert_allclose(captured, expected, rtol=1e-5, atol=1e-6)


# the path each batch takes, and the names docs/emulate.md gives its ops: (present {TF op: NPU type}, absent prefixes);
# an activation right after a MatMul is fused into it (so its NPU op is the MatMulV2)
PATHS = {
    "cond": ({"Greater": "Greater", "branch/then/up": "MatMulV2", "branch/then/relu": "MatMulV2"},  # relu: fused
             ("branch/else/",)),
    "cond_else": ({"branch/else/down": "MatMulV2", "branch/else/tanh": "MatMulV2"}, ("branch/then/",)),
    "case": ({"add": "Add", "switch/indexed_case/branch_2/third": "MatMulV2"},
             ("switch/indexed_case/branch_0/", "switch/indexed_case/branch_1/")),
    "while": ({f"loop/iteration_{k}/step": "Relu" for k in range(3)}, ("loop/iteration_3/",)),
    "nested": (dict({f"outer/iteration_{k}/mix": "MatMulV2" for k in range(4)},
                    **{f"outer/iteration_{k}/parity/{'then/even' if k % 2 == 0 else 'else/odd'}": "MatMulV2"
                       for k in range(4)}),
               ("outer/iteration_4/", "outer/iteration_0/parity/else/", "outer/iteration_1/parity/then/")),
    "tensor_array": ({"while/iteration_0/row_matmul": "MatMulV2", "while/iteration_1/row_matmul": "MatMulV2",
                      "TensorArrayV2Stack/TensorListStack": "Pack"}, ("while/iteration_2/",)),
    "lstm": (dict({f"{LSTM}/iteration_{k}/MatMul": "MatMulV2" for k in range(5)},
                  **{f"{LSTM}/iteration_{k}/TensorArrayV2Read/TensorListGetItem": "StridedSlice" for k in range(5)}),
             (f"{LSTM}/iteration_5/",)),
    "gru": ({f"{GRU}/iteration_{k}/gru_cell_1/MatMul": "MatMulV2" for k in range(4)}, (f"{GRU}/iteration_4/",)),
    "graph_cond": ({"Mean": "ReduceMeanD", "gate/then/MatMul": "MatMulV2"}, ("gate/else/",)),
}


@pytest.mark.parametrize("case", sorted(PATHS))
def test_the_path_taken_is_unrolled_under_the_documented_names(cases, case):
    present, absent = PATHS[case]
    ops = tf_ops(cases[case])
    assert {name: ops.get(name) for name in present} == present
    assert not [name for name in ops for prefix in absent if name.startswith(prefix)]
    assert not [name for name, kind in ops.items() if kind.startswith("TensorList") or kind in ("If", "While", "Case")]


def test_a_fault_in_one_iteration_of_an_lstm_is_found_in_that_iteration(cases):
    info = cases.summary["lstm_bias"]
    assert info["exit"] == 1 and info["cli_no_replay_exit"] == 1
    assert info["culprit"] == f"{LSTM}/iteration_2/MatMul"
    assert info["methods"][f"{LSTM}/iteration_2/MatMul"] == "replay"
    assert info["coverage"]["aligned_count"] == info["coverage"]["npu_tensors"]


def test_a_frozen_graph_def_with_functional_control_flow_is_unrolled_as_the_traced_model(cases):
    assert_clean_autocheck(cases.summary["functional_graph_def"])
    assert tf_ops(cases["functional_graph_def"]) == tf_ops(cases["nested"])


def test_a_loop_returning_only_its_counter_leaves_no_npu_op_and_ac_says_nothing_was_compared(cases):
    info = cases.summary["counter_only"]
    assert info["coverage"]["npu_tensors"] == 0 and info["exit"] == 2 and info["cli_no_replay_exit"] == 2
    assert ("nothing was compared: no NPU tensor has a reference counterpart (the NPU dumps hold no tensor); "
            "exit 2") in info["also"]
    # the count, by hand: halvings of the batch (control_flow.py's inputs()) until its largest |x| is <= 0.1
    peak, count = float(np.abs(np.random.default_rng(1).uniform(-1.0, 1.0, (2, 8)).astype("float32")).max()), 0
    while peak > 0.1:
        peak, count = peak * 0.5, count + 1
    assert reference(cases["counter_only"], "Identity") == count == 4


def test_a_print_in_a_branch_is_no_npu_op(cases):
    ops = tf_ops(cases["print_cond"])
    assert ops["branch/then/up"] == "MatMulV2" and not [t for t in ops.values() if t in ("PrintV2", "StringFormat")]


def test_nested_loops_over_50000_unrolled_ops_are_refused_in_one_line(cases):
    refused = cases.summary["nested_big"]
    assert refused["type"] == "EmulationError" and not refused["left_folder"]
    assert refused["error"].startswith(f"{SCRIPTS / 'control_flow.py'}: unrolling the control flow at outer/iteration_")
    assert refused["error"].endswith("takes more than 50000 ops (nested loops multiply); the emulator unrolls loops "
                                     "(shorten the loops for the emulation)")


def test_a_loop_of_more_than_1000_iterations_is_refused_in_one_line(cases):
    refused = cases.summary["long_loop"]
    assert refused["type"] == "EmulationError" and not refused["left_folder"]
    assert refused["error"] == (f"{SCRIPTS / 'control_flow.py'}: op long (StatelessWhile) runs 1001 iterations; the "
                                "emulator unrolls loops and takes at most 1000 (shorten it for the emulation, e.g. a "
                                "shorter sequence)")


@pytest.mark.parametrize("case", ["lowered", "tf1_cond"])
def test_tf1_conditionals_in_a_frozen_graph_are_resolved_along_the_batchs_path(cases, case):
    assert_clean_autocheck(cases.summary[case])
    ops = tf_ops(cases[case])
    assert not [name for name, kind in ops.items() if kind in ("Switch", "Merge", "RefSwitch", "RefMerge")]
    if case == "lowered":  # TensorFlow 2's lowering of the cond's then branch (a positive batch)
        assert ops["branch/then/_0/branch/up"] == "MatMulV2" and not [n for n in ops if "/else/" in n]
    else:  # TF1's cond: outer taken (positive sum), inner not (max <= 100): its ops keep their TF1 names
        assert ops["outer/up"] == "MatMulV2" and ops["outer/inner/small"] == "Tanh"
        assert "outer/down" not in ops and "outer/inner/big" not in ops


def test_a_tf1_while_loop_is_refused_in_one_line(cases):
    refused = cases.summary["tf1_while"]
    assert refused["type"] == "EmulationError" and not refused["left_folder"]
    assert refused["error"] == (
        f"{SCRIPTS / 'control_flow.py'}: op loop/LoopCond (LoopCond) belongs to a TF1 while loop (Enter/Exit/"
        "NextIteration/LoopCond), which the emulator does not run (it unrolls TensorFlow 2's functional While: give "
        "the model as model() or graph_model(), or freeze it in TensorFlow 2 with lower_control_flow=False)")
