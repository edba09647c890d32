"""A truncated NPU dump is named with its cause in compare's and ac's output, not only counted as 'no dump'.

Regression: truncating the planted culprit's dump made `compare` say only "1 graph ops have no dump file"
and `ac` blame another op without a word about the skipped one.
"""
from checks_builders import copy_cnn_workspace, dump_file_of
from precision_tool.cli import main

PLANTED = "small_cnn_1_res_conv_1_convolution"


def _truncate(path, keep=300):
    with open(path, "rb") as handle:
        head = handle.read(keep)
    with open(path, "wb") as handle:
        handle.write(head)


def test_compare_and_ac_name_the_unreadable_dump(tmp_path, capsys):
    workspace = copy_cnn_workspace(tmp_path)
    truncated = dump_file_of(workspace, 0, PLANTED)
    _truncate(truncated)

    assert main(["-d", str(workspace), "compare", "-out", str(tmp_path / "cmp")]) == 1
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "unreadable, not compared" in line]
    assert truncated in line and "truncated file" in line

    main(["-d", str(workspace), "ac", "-c", "-o", str(tmp_path / "ac")])
    verdict = capsys.readouterr().out.split("Verdict:", 1)[1]
    assert f"1 NPU dump file(s) could not be read and were not compared (first: {PLANTED})" in verdict
    # the Add's input the planted op feeds still fails: that is not "drift" while the op that adds it is unread
    assert "accumulated rounding (drift)" not in verdict
    if "op(s) replayed" in verdict:  # replay needs TensorFlow (not in every test environment)
        assert ("could not be read: the op that adds the error may be among them, so this is not shown to be "
                "drift") in verdict
