"""Our overflow decoding against msaccucmp's ``overflow`` on the same records: order, op, ids, unit, status.

The peer wants one flat folder holding the Opdebug files beside the op dumps, and details at most 5 records.
The folder mixes the sample's planted record (old layout, AI Core) with new-layout AIC/AIV records, L2 and DHA
atomic codes, and a record whose task id has no dump.
"""
import glob
import re
import shutil

import numpy as np
import pytest

from checks_builders import CNN, CONV3, write_op_dump, write_record
from precision_tool.checks.overflow_records import check_overflow_records
from precision_tool.formats.opdebug import OverflowUnit, new_layout_record, old_layout_record

pytestmark = pytest.mark.peer
TS = 1700000000000000
_BLOCK = re.compile(r"=+\[(\d+)\]=+\n")
_IDS = re.compile(r" \[([^\]]+)\]\[TaskId:(\d+)\]\[StreamId:(\d+)\]\[Status:([^\]]+\]?)\]")
_STATS = re.compile(r"-\[Format: (\w+)\] \[Shape: [^\]]*\] \[Dtype: \w+\] \[Max: (\S+)\] \[Min: (\S+)\] "
                    r"\[Mean: (\S+)\]")


def build_flat_folder(folder):
    for path in glob.glob(str(CNN / "overflow" / "dump" / "**" / "*.*"), recursive=True):
        shutil.copy(path, folder)
    x = np.linspace(-3, 5, 12, dtype=np.float16).reshape(3, 4)
    write_op_dump(folder, "Mul", "n/mul", 4, 1, TS + 10, inputs=[x], outputs=[x * 3])
    write_op_dump(folder, "ReduceSum", "n/sum", 5, 1, TS + 20, inputs=[x], outputs=[x.sum(axis=0)])
    write_op_dump(folder, "Relu", "n/relu", 6, 1, TS + 30, inputs=[x], outputs=[np.maximum(x, 0)])
    write_record(folder, new_layout_record(OverflowUnit("AIC", model_id=1, stream_id=1, task_id=4,
                                                        status=(0x120,))), TS + 11)
    write_record(folder, old_layout_record(l2=OverflowUnit("L2 Atomic Add", stream_id=1, task_id=5,
                                                           status=(0b011 << 16,))), TS + 21)
    write_record(folder, old_layout_record(dha=OverflowUnit("DHA Atomic Add", stream_id=1, task_id=6,
                                                            status=(0xA,))), TS + 31)
    write_record(folder, new_layout_record(OverflowUnit("AIV", stream_id=1, task_id=9, status=(0x8,)), version=1),
                 TS + 41)


def parse_peer_summary(text):
    """``[(position, op_type, op_name, unit, task, stream, status words, timestamp, [(format, max, min, mean)])]``."""
    parsed = []
    pieces = _BLOCK.split(text)
    for position, body in zip(pieces[1::2], pieces[2::2]):
        lines = body.splitlines()
        op = re.match(r"\[(\w+)\] (\S+)", lines[0])
        unit, task, stream, status = _IDS.search(body).groups()
        words = tuple(int(w) for w in status.strip("[]").split(","))
        timestamp = int(re.search(r"\[timestamp:(\d+)\]", body).group(1))
        stats = [(fmt, float(hi), float(lo), float(mean)) for fmt, hi, lo, mean in _STATS.findall(body)]
        parsed.append((int(position), op.group(1) if op else "", op.group(2) if op else "", unit, int(task),
                       int(stream), words, timestamp, stats))
    return parsed


def test_overflow_decoding_matches_msaccucmp(peer, tmp_path):
    flat, out = tmp_path / "flat", tmp_path / "out"
    flat.mkdir()
    out.mkdir()
    build_flat_folder(flat)
    peer.run("overflow", "-d", flat, "-out", out, "-n", 5)
    (summary,) = glob.glob(str(out / "overflow_summary_*.txt"))
    theirs = parse_peer_summary(open(summary, encoding="utf-8").read())
    check = check_overflow_records(str(flat))
    ours = [(f.position, f.op_type, f.op_name, f.unit, f.task_id, f.stream_id, f.status, f.timestamp)
            for f in check.findings]
    assert len(theirs) == 5
    assert ours == [row[:8] for row in theirs]
    assert ours[0][3] == "AIC" and ours[3][1:4] == ("", "", "AIV")  # new layout; the record without a dump
    assert ours[4][2] == CONV3  # the sample's planted overflow, latest
    compared = 0
    for finding, row in zip(check.findings, theirs):
        assert len(finding.tensors) == len(row[8])
        for tensor, (fmt, high, low, mean) in zip(finding.tensors, row[8]):
            if fmt == "ND":  # same layout on both sides (we leave device padding out): statistics must agree
                assert (tensor.max, tensor.min) == pytest.approx((high, low), rel=1e-3)
                assert tensor.mean == pytest.approx(mean, rel=1e-3, abs=1e-3)
                compared += 1
    # n/mul, n/sum and n/relu: input and output, written ND above; conv3: its bias (input 2; its activations are
    # NC1HWC0, its filter FRACTAL_Z); the AIV record has no dump
    assert compared == 3 * 2 + 1
