"""Dump scan without Opdebug records: inf/NaN and fp16 saturation, where they first appear, introduced or not."""
import json

import numpy as np

from checks_builders import CNN, SINGLE_OPS, write_op_dump
from precision_tool.checks.nonfinite import INHERITED, INTRODUCED, scan_dumps_for_overflow

TS = 1700000000000000


def chain(tmp_path):
    clean = np.ones((2, 4), dtype=np.float16)
    blown = clean.copy()
    blown[1, 3] = np.inf
    saturated = clean.copy()
    saturated[0, 1] = 65504
    write_op_dump(tmp_path, "Add", "a/add", 1, 1, TS + 1, inputs=[clean], outputs=[clean])
    write_op_dump(tmp_path, "Exp", "b/exp", 2, 1, TS + 2, inputs=[clean], outputs=[blown])
    write_op_dump(tmp_path, "Mul", "c/mul", 3, 1, TS + 3, inputs=[blown], outputs=[blown])
    write_op_dump(tmp_path, "Square", "d/square", 4, 1, TS + 4, inputs=[saturated], outputs=[saturated])
    write_op_dump(tmp_path, "Cast", "e/cast", 5, 1, TS + 5, inputs=[np.array([1e6], np.float32)],
                  outputs=[np.array([65504], np.float16)])


def test_first_appearance_is_the_op_that_introduces_it(tmp_path):
    chain(tmp_path)
    scan = scan_dumps_for_overflow(str(tmp_path))
    assert scan.ops_scanned == 5
    assert [(op.op_name, op.origin) for op in scan.ops] == [
        ("b/exp", INTRODUCED), ("c/mul", INHERITED), ("d/square", INHERITED), ("e/cast", INTRODUCED)]
    first = scan.first_introduced
    assert first.op_name == "b/exp" and first.worst.inf == 1 and first.worst.first_non_finite == (1, 3)
    assert scan.ops[1].bad_inputs == (0,)


def test_saturation_alone_is_found_and_an_input_at_65504_does_not_explain_inf(tmp_path):
    saturated = np.array([65504, 1], dtype=np.float16)
    write_op_dump(tmp_path, "Mul", "m", 1, 1, TS, inputs=[saturated], outputs=[np.array([np.inf, 1], np.float16)])
    write_op_dump(tmp_path, "Relu", "r", 2, 1, TS + 1, inputs=[np.array([1.0, 2.0], np.float16)],
                  outputs=[saturated])
    mul, relu = scan_dumps_for_overflow(str(tmp_path)).ops
    assert (mul.origin, mul.worst.inf) == (INTRODUCED, 1)
    assert (relu.origin, relu.worst.saturated, relu.worst.inf) == (INTRODUCED, 1, 0)


def test_sample_runs_scan_as_expected():
    clean = scan_dumps_for_overflow(str(CNN / "npu" / "debug_0" / "dump"))
    executed = json.loads((CNN / "manifest.json").read_text())["runs"][0]["executed_ops"]
    assert clean.ops_scanned == executed and clean.ops == () and clean.first_introduced is None
    single = scan_dumps_for_overflow(str(SINGLE_OPS))
    assert [(op.op_name, op.origin, op.worst.inf) for op in single.ops] == [("scale/Mul", INTRODUCED, 2)]


def test_unreadable_dump_is_listed_and_the_scan_goes_on(tmp_path):
    chain(tmp_path)
    (tmp_path / "Add.broken.9.1.1700000000000009").write_bytes(b"\x00" * 4)
    scan = scan_dumps_for_overflow(str(tmp_path))
    assert len(scan.unreadable) == 1 and "broken" in scan.unreadable[0]
    assert scan.first_introduced.op_name == "b/exp"
