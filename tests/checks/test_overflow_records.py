"""Overflow records: the planted overflow, ordering, both layouts, DHA/L2 codes, missing dumps, corrupt records."""
import os

import numpy as np
import pytest

from checks_builders import CNN, CONV3, write_op_dump, write_record
from precision_tool.checks.overflow_records import check_overflow_records, locate_dump
from precision_tool.formats.dump_names import parse_dump_name, DumpFileRef
from precision_tool.formats.opdebug import OverflowUnit, new_layout_record, old_layout_record

TS = 1700000000000000
X = np.arange(-6, 6, dtype=np.float16).reshape(3, 4)


def test_planted_overflow_is_first_with_its_status_decoded():
    check = check_overflow_records(str(CNN / "overflow" / "dump"))
    assert check.folder_exists and check.records == 1 and not check.failures
    first = check.first
    assert (first.op_name, first.op_type, first.unit, first.task_id, first.stream_id) == (
        CONV3, "Conv2D", "AI Core", 15, 2)
    assert first.status == (0x100,)
    assert first.status_lines == ("AI Core: overflow converting fp32→fp16 or int32→fp16 (0x100)",)
    assert first.timestamp == 1732007200000131
    labels = [t.label for t in first.tensors]
    assert labels == ["input 0", "input 1", "input 2", "output 0"]
    output = first.tensors[-1]
    assert (output.dtype, output.layout, output.shape, output.max, output.min) == (
        "float16", "NHWC", (2, 8, 8, 24), 6.0, 0.0)


def test_missing_overflow_folder_is_not_an_error(tmp_path):
    check = check_overflow_records(str(tmp_path / "nothing"))
    assert not check.folder_exists and check.records == 0 and check.first is None


def test_records_are_ordered_by_timestamp_not_by_name(tmp_path):
    write_op_dump(tmp_path, "Mul", "late/mul", 2, 1, TS + 200, inputs=[X], outputs=[X])
    write_op_dump(tmp_path, "Add", "early/add", 9, 1, TS + 100, inputs=[X], outputs=[X])
    write_record(tmp_path, old_layout_record(ai_core=OverflowUnit("AI Core", stream_id=1, task_id=2,
                                                                  status=(0x20,))), TS + 201)
    write_record(tmp_path, old_layout_record(ai_core=OverflowUnit("AI Core", stream_id=1, task_id=9,
                                                                  status=(0x20,))), TS + 101)
    check = check_overflow_records(str(tmp_path))
    assert [f.op_name for f in check.findings] == ["early/add", "late/mul"]
    assert [f.position for f in check.findings] == [1, 2] and check.first.op_name == "early/add"


def test_new_layout_and_atomic_units_are_decoded_and_located(tmp_path):
    write_op_dump(tmp_path, "Mul", "n/mul", 4, 1, TS + 10, inputs=[X], outputs=[X])
    write_op_dump(tmp_path, "ReduceSum", "n/sum", 5, 1, TS + 20, inputs=[X], outputs=[X])
    write_op_dump(tmp_path, "Relu", "n/relu", 6, 1, TS + 30, inputs=[X], outputs=[X])
    write_record(tmp_path, new_layout_record(OverflowUnit("AIC", stream_id=1, task_id=4, status=(0x120,))), TS + 11)
    write_record(tmp_path, old_layout_record(l2=OverflowUnit("L2 Atomic Add", stream_id=1, task_id=5,
                                                              status=(0b011 << 16,))), TS + 21)
    write_record(tmp_path, old_layout_record(dha=OverflowUnit("DHA Atomic Add", stream_id=1, task_id=6,
                                                               status=(0xA,))), TS + 31)
    aic, l2, dha = check_overflow_records(str(tmp_path)).findings
    assert (aic.layout, aic.unit, aic.op_name) == ("new", "AIC", "n/mul")
    assert aic.status_lines == ("AIC: floating-point overflow (0x20)",
                                "AIC: overflow converting fp32→fp16 or int32→fp16 (0x100)")
    assert (l2.unit, l2.op_name, l2.status_lines) == ("L2 Atomic Add", "n/sum",
                                                      ("L2 Atomic Add: src NaN (bits 16-18 = 011)",))
    assert (dha.unit, dha.op_name, dha.status_lines) == ("DHA Atomic Add", "n/relu",
                                                         ("DHA Atomic Add: underflow (code 0xa)",))


def test_new_layout_context_and_thread_ids_pick_the_ffts_dump(tmp_path):
    base = TS + 50
    for context in (3, 7):
        name = f"Conv2D.ffts_conv.8.1.{base + context:016d}.4.{context}.0"
        write_op_dump(tmp_path, "Conv2D", "ffts/conv", 8, 1, base + context, outputs=[X])
        os.rename(os.path.join(tmp_path, f"Conv2D.ffts_conv.8.1.{base + context:016d}"),
                  os.path.join(tmp_path, name))
    record = new_layout_record(OverflowUnit("AIC", stream_id=1, task_id=8, context_id=3, thread_id=0,
                                            status=(0x20,)))
    write_record(tmp_path, record, base + 100)
    (finding,) = check_overflow_records(str(tmp_path)).findings
    assert finding.context_id == 3 and finding.dump_path.endswith(".4.3.0") and finding.candidates == 2


def test_record_without_dump_is_reported_not_dropped(tmp_path):
    write_record(tmp_path, new_layout_record(OverflowUnit("AIV", stream_id=1, task_id=9, status=(0x8,)),
                                             version=1), TS)
    check = check_overflow_records(str(tmp_path))
    (finding,) = check.findings
    assert not finding.located and finding.op_name == ""
    assert finding.problem == f"no dump file with task id 9 and stream id 1 under {tmp_path}"
    assert finding.status == (0x8, 0, 0, 0) and check.overflowed


def test_corrupt_record_is_one_line_and_the_others_go_on(tmp_path):
    write_op_dump(tmp_path, "Add", "ok/add", 3, 1, TS, inputs=[X], outputs=[X])
    bad = write_record(tmp_path, b"\x01" * 100, TS + 1, task_id=4, stream_id=1)
    write_record(tmp_path, old_layout_record(ai_core=OverflowUnit("AI Core", stream_id=1, task_id=3,
                                                                  status=(0x20,))), TS + 2)
    check = check_overflow_records(str(tmp_path))
    assert [f.op_name for f in check.findings] == ["ok/add"] and check.records == 2
    (failure,) = check.failures
    assert failure.startswith(bad) and "100 bytes" in failure


def test_limit_details_only_the_first_records(tmp_path):
    for k in range(3):
        write_op_dump(tmp_path, "Add", f"op{k}", k + 1, 1, TS + 10 * k, inputs=[X], outputs=[X])
        write_record(tmp_path, old_layout_record(ai_core=OverflowUnit("AI Core", stream_id=1, task_id=k + 1,
                                                                      status=(0x20,))), TS + 10 * k + 1)
    check = check_overflow_records(str(tmp_path), limit=2)
    assert [len(f.tensors) for f in check.findings] == [2, 2, 0]
    assert [f.op_name for f in check.shown] == ["op0", "op1"]
    assert check.findings[2].op_name == "op2"  # located and named, only not detailed


@pytest.mark.parametrize("record_ts, expected", [(TS + 250, TS + 200), (TS + 150, TS + 100), (TS + 50, TS + 100)])
def test_locate_dump_takes_the_latest_execution_before_the_record(record_ts, expected):
    refs = [DumpFileRef(f"/run/0/Add.a.3.1.{ts:016d}", parse_dump_name(f"Add.a.3.1.{ts:016d}"))
            for ts in (TS + 100, TS + 200)]
    record = DumpFileRef(f"/run/0/Opdebug.Node_OpDebug.3.1.{record_ts:016d}",
                         parse_dump_name(f"Opdebug.Node_OpDebug.3.1.{record_ts:016d}"))
    assert locate_dump(refs, record).name.timestamp == expected


def test_locate_dump_prefers_the_record_own_step_folder():
    other = DumpFileRef(f"/run/1/Add.a.3.1.{TS + 5:016d}", parse_dump_name(f"Add.a.3.1.{TS + 5:016d}"))
    own = DumpFileRef(f"/run/0/Add.a.3.1.{TS + 1:016d}", parse_dump_name(f"Add.a.3.1.{TS + 1:016d}"))
    record = DumpFileRef(f"/run/0/Opdebug.Node_OpDebug.3.1.{TS + 9:016d}",
                         parse_dump_name(f"Opdebug.Node_OpDebug.3.1.{TS + 9:016d}"))
    assert locate_dump([other, own], record) is own
