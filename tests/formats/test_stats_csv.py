"""Statistics dumps (issue 42): every form of ``../shared/docs/ascend-dump-trees.md`` §2, written here by hand from
the facts (headers, column orders, ``NA`` cells, appended rows), and the damage a reader must name."""
import math
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from precision_tool.formats.stats_csv import (DEFAULT_HEADER, MINDSPORE, MSPROBE, PER_OP, PER_OP_DUMP_STATS,
                                              StatsFormatError, TensorStats, read_stats_csv, stats_csv_text)
from precision_tool.formats.tensor_kind import INPUT, OUTPUT

# the facts doc's default header and example row, verbatim
FACTS_HEADER = ("Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
                "Negative Inf Count,Positive Inf Count")
FACTS_ROW = "Input,0,268435456,DT_INT64,ND,100x20x40,100,200,10.1,80000,400,500,600"


def write(tmp_path, text, name="Conv2D.conv1.3.2.1700000000000001.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_default_header_is_the_facts_one():
    assert ",".join(DEFAULT_HEADER) == FACTS_HEADER


def test_the_facts_example_row_reads_cell_by_cell(tmp_path):
    stats = read_stats_csv(write(tmp_path, f"{FACTS_HEADER}\n{FACTS_ROW}\n"))
    assert stats.form == PER_OP and stats.notes == () and stats.superseded == 0
    (row,) = stats.rows
    assert (row.kind, row.index, row.data_size, row.dtype, row.format, row.shape) == (
        INPUT, 0, 268435456, "DT_INT64", "ND", (100, 20, 40))
    assert (row.max, row.min, row.mean, row.count, row.nan, row.neg_inf, row.pos_inf) == (
        100.0, 200.0, 10.1, 80000, 400, 500, 600)  # as written (the facts' example is illustrative: max < min)
    assert row.l2norm is None and row.op_name == "" and row.tensor_id == "input:0" and row.line == 2


def test_na_and_empty_cells_are_unknown_not_zero(tmp_path):
    """Where stats are unsupported the cells are empty or NA (facts §2)."""
    text = f"{FACTS_HEADER}\nInput,0,8,DT_INT32,ND,2,NA,NA,NA,2,NA,NA,NA\nOutput,0,4,DT_BOOL,ND,-,,,,1,,,\n"
    stats = read_stats_csv(write(tmp_path, text))
    first, second = stats.rows
    assert (first.max, first.min, first.mean, first.nan, first.count) == (None, None, None, None, 2)
    assert (second.kind, second.shape, second.max, second.pos_inf, second.count) == (OUTPUT, (), None, None, 1)
    assert stats.notes == ()


def test_the_dump_stats_order_moves_count_after_shape_and_names_l2norm(tmp_path):
    """``dump_stats`` other than the default: ``...,Shape,Count,Max Value,Min Value,l2norm`` (facts §2)."""
    header = "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value,l2norm"
    text = (f"{header}\nInput,0,32,DT_FLOAT16,NC1HWC0,1x1x2x2x16,64,3.5,-2.25,7.125\n"
            "Output,0,32,DT_FLOAT16,ND,8x8,64,1,0,4\n")
    stats = read_stats_csv(write(tmp_path, text))
    assert stats.form == PER_OP_DUMP_STATS and stats.notes == ()
    first, second = stats.rows
    assert (first.count, first.max, first.min, first.l2norm, first.mean, first.nan) == (64, 3.5, -2.25, 7.125, None,
                                                                                        None)
    assert (second.shape, second.l2norm) == ((8, 8), 4.0)


def test_appended_rows_repeat_inputs_and_outputs_and_the_last_write_wins(tmp_path):
    """The header is written only the first time a file name is seen; later writes append rows (facts §2)."""
    text = (f"{FACTS_HEADER}\n"
            "Input,0,4,DT_FLOAT,ND,1,1,1,1,1,0,0,0\nOutput,0,4,DT_FLOAT,ND,1,2,2,2,1,0,0,0\n"
            "Input,0,4,DT_FLOAT,ND,1,3,3,3,1,0,0,0\nOutput,0,4,DT_FLOAT,ND,1,4,4,4,1,0,0,0\n")
    stats = read_stats_csv(write(tmp_path, text))
    assert stats.superseded == 2
    assert [(r.kind, r.max, r.line) for r in stats.rows] == [(INPUT, 3.0, 4), (OUTPUT, 4.0, 5)]
    assert stats.find(OUTPUT, 0).max == 4.0 and stats.find(INPUT, 1) is None


def test_msprobe_statistic_csv_names_each_row_s_op(tmp_path):
    """msprobe's merged file: identity columns from the per-op file names, then Slot, then any of the statistics and
    an MD5 column (facts §2)."""
    header = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,Input/Output,Slot,Data Size,Data Type,Format,Shape,"
              "Max Value,Min Value,Avg Value,L2Norm Value,NaN Count,Negative Inf Count,Positive Inf Count,MD5 Value")
    rows = ("Conv2D,conv1,3,2,1700000000000001,Input,0,32,DT_FLOAT16,NCHW,1x1x4x4,5,-5,0.5,9,0,0,0,abcd\n"
            "Conv2D,conv1,3,2,1700000000000001,Output,0,32,DT_FLOAT16,NCHW,1x1x4x4,6,-6,0.25,10,0,1,0,ef01\n"
            "Relu,relu1,4,2,1700000000000002,Input,0,32,DT_FLOAT16,NCHW,1x1x4x4,6,-6,0.25,10,0,1,0,ef01\n")
    stats = read_stats_csv(write(tmp_path, f"{header}\n{rows}", "statistic.csv"))
    assert stats.form == MSPROBE and stats.notes == () and len(stats.rows) == 3 and stats.superseded == 0
    out = stats.find(OUTPUT, 0, "conv1")
    assert (out.op_type, out.task_id, out.stream_id, out.timestamp, out.l2norm, out.neg_inf) == (
        "Conv2D", 3, 2, 1700000000000001, 10.0, 1)
    assert out.tensor_id == "conv1:output:0" and stats.find(INPUT, 0, "relu1").line == 4


def test_mindspore_statistic_csv_with_io_and_zero_counts(tmp_path):
    header = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
              "Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,"
              "Positive Inf Count,Zero Count")
    row = "MatMul,Default/MatMul-op1,1,0,1700000000000009,output,0,64,float32,4x4,2.5,-1.5,0.125,16,0,3,0,0,0,3"
    stats = read_stats_csv(write(tmp_path, f"{header}\n{row}\n", "statistic.csv"))
    assert stats.form == MINDSPORE and stats.notes == ()
    (found,) = stats.rows
    assert (found.kind, found.op_name, found.count, found.dtype, found.format) == (
        OUTPUT, "Default/MatMul-op1", 16, "float32", "")


def test_bad_rows_and_cells_are_one_line_notes_and_the_rest_is_read(tmp_path):
    text = (f"{FACTS_HEADER}\n"
            "Input,0,4,DT_FLOAT,ND,1,abc,1,1,1,0,0,0\n"          # a statistic that is no number: unknown
            "Sideways,0,4,DT_FLOAT,ND,1,1,1,1,1,0,0,0\n"         # neither Input nor Output: row not read
            "Output,x,4,DT_FLOAT,ND,1,1,1,1,1,0,0,0\n"           # no index: row not read
            "Output,0,4,DT_FLOAT,ND,1,1,1\n"                     # cut short: row not read
            "Output,1,4,DT_FLOAT,ND,2y3,1e999,-inf,nan,-4,0,0,0\n"  # a bad shape and count; out-of-range numbers
            "Output,2,4,DT_FLOAT,ND,1,1_0,0x10,٣,1,0,0,0")         # no newline at the end; Python-only numbers
    stats = read_stats_csv(write(tmp_path, text))
    assert [(row.kind, row.index) for row in stats.rows] == [(INPUT, 0), (OUTPUT, 1), (OUTPUT, 2)]
    assert stats.rows[0].max is None and stats.rows[0].min == 1.0
    wide = stats.rows[1]
    # 1e999 is beyond a double (no device writes it: a damaged cell, unknown); -inf and nan are values a tensor
    # holding them states
    assert wide.shape is None and wide.max is None and wide.min == -math.inf and math.isnan(wide.mean)
    assert wide.count is None
    assert (stats.rows[2].max, stats.rows[2].min, stats.rows[2].mean) == (None, None, None)
    assert stats.notes == (
        "line 2: Max Value 'abc' is not a number: taken as unknown",
        "line 3: Input/Output 'Sideways' is neither Input nor Output: row not read",
        "line 4: Index 'x' is no input/output index: row not read",
        "line 5: 8 cells where the header has 13: row not read",
        "line 6: Shape '2y3' is no shape (dimensions joined by x): taken as unknown",
        "line 6: Max Value '1e999' is beyond a double's range (no device writes it): taken as unknown",
        "line 6: Count '-4' is not a count: taken as unknown",
        "line 7: Max Value '1_0' is not a number: taken as unknown",
        "line 7: Min Value '0x10' is not a number: taken as unknown",
        "line 7: Avg Value '٣' is not a number: taken as unknown")


def test_a_bom_a_repeated_header_and_an_unknown_column(tmp_path):
    text = "\ufeff" + FACTS_HEADER + ",Vendor Column\n" + FACTS_ROW + ",x\n" + FACTS_HEADER + ",Vendor Column\n"
    stats = read_stats_csv(write(tmp_path, text))
    assert len(stats.rows) == 1 and stats.notes == ("columns not read: 'Vendor Column'",)


@pytest.mark.parametrize("text, cause", [
    ("", "is empty: no header, no rows"),
    ("\n\n", "is empty: no header, no rows"),
    ("a,b,c\n1,2,3\n", "is no statistics CSV"),
    ("Input/Output,Index,Data Type\nInput,0,DT_FLOAT\n", "is no statistics CSV"),  # no statistic at all
])
def test_a_file_that_is_no_statistics_csv_is_refused_naming_it(tmp_path, text, cause):
    path = write(tmp_path, text)
    with pytest.raises(StatsFormatError) as raised:
        read_stats_csv(path)
    assert str(raised.value).startswith(f"{path}: {cause}")


def test_not_text_a_folder_and_a_fifo_are_refused(tmp_path):
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(StatsFormatError, match="is not utf-8 text"):
        read_stats_csv(binary)
    with pytest.raises(StatsFormatError, match=str(tmp_path)):
        read_stats_csv(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(StatsFormatError, match="pipe.csv"):
        read_stats_csv(fifo)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=400))
@example(FACTS_HEADER + "\n" + "Input,0," + "9" * 400 + ",x,y,1x1,1,1,1,1,1,1,1")
@example(FACTS_HEADER + '\n"Input\n",0,1,a,b,1,1,1,1,1,1,1,1')
@example("\r0")
@example(FACTS_HEADER + "\nInput,0," + "a" * 200000)
def test_any_text_gives_rows_and_notes_or_one_typed_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "f.csv"
    path.write_text(FACTS_HEADER + "\n" + text if text.startswith(("Input", "Output")) else text, encoding="utf-8")
    try:
        stats = read_stats_csv(path)
    except StatsFormatError as error:
        assert "\n" not in str(error) and str(error).startswith(str(path))  # one line, naming the file
        return
    assert all(row.kind in (INPUT, OUTPUT) and row.index >= 0 for row in stats.rows)
    assert all("\n" not in note for note in stats.notes)  # one line each


def test_the_writer_writes_the_facts_example_row_exactly():
    row = TensorStats(INPUT, 0, "DT_INT64", "ND", (100, 20, 40), 80000, 100.0, 200.0, 10.1, nan=400, neg_inf=500,
                      pos_inf=600, data_size=268435456)
    assert stats_csv_text([row]) == f"{FACTS_HEADER}\n{FACTS_ROW}\n"
    assert stats_csv_text([row], header=False) == f"{FACTS_ROW}\n"  # an appended write: rows only


def test_the_writer_s_dump_stats_form_and_unknown_cells():
    columns = ("Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape", "Count", "Max Value",
               "Min Value", "l2norm")
    row = TensorStats(OUTPUT, 1, "DT_FLOAT16", "NC1HWC0", (), 1, math.inf, -0.5, l2norm=None, data_size=2)
    expected = ",".join(columns) + "\n" + "Output,1,2,DT_FLOAT16,NC1HWC0,-,1,inf,-0.5,NA\n"
    assert stats_csv_text([row], columns) == expected
