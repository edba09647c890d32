"""``dc``: dump files to npy in origin layout, bad files reported and skipped, inputs never written to."""
import os

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.layouts import to_device

TS = 1700000000000000


def _write_conv_dump(folder, name="conv1/Conv2D", ts=TS + 1, origin="NHWC", shape=(1, 4, 4, 19), seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float16)
    stored = to_device(x, origin, "NC1HWC0")
    file_name = f"Conv2D.{name.replace('/', '_')}.3.2.{ts}"
    write_dump(os.path.join(folder, file_name), name, inputs=[x],
               outputs=[TensorSpec(stored, format="NC1HWC0", original_shape=shape)])
    return file_name, x


def test_converts_to_origin_layout_and_keeps_layout_on_request(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    name, x = _write_conv_dump(src)
    assert main(["dc", str(src), "-o", str(tmp_path / "out")]) == 0
    out = np.load(tmp_path / "out" / f"{name}.output.0.npy", allow_pickle=False)
    assert out.dtype == np.float16 and np.array_equal(out, x)
    assert np.array_equal(np.load(tmp_path / "out" / f"{name}.input.0.npy"), x)
    assert "NC1HWC0 [1, 2, 4, 4, 16]  NHWC [1, 4, 4, 19]" in capsys.readouterr().out

    assert main(["dc", str(src / name), "--keep-layout", "-o", str(tmp_path / "kept")]) == 0
    kept = np.load(tmp_path / "kept" / f"{name}.output.0.npy")
    assert kept.shape == (1, 2, 4, 4, 16) and np.array_equal(kept, to_device(x, "NHWC", "NC1HWC0"))


def test_ambiguous_origin_layout_is_noted_and_overridable(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    name, x = _write_conv_dump(src, shape=(1, 16, 16, 16), origin="NCHW")  # fits NHWC and NCHW alike
    assert main(["dc", str(src), "-o", str(tmp_path / "a")]) == 0
    assert "assumed NHWC (inferred from the shapes; another layout fits too)" in capsys.readouterr().out
    assert not np.array_equal(np.load(tmp_path / "a" / f"{name}.output.0.npy"), x)
    assert main(["dc", str(src), "--origin-format", "NCHW", "-o", str(tmp_path / "b")]) == 0
    assert np.array_equal(np.load(tmp_path / "b" / f"{name}.output.0.npy"), x)


def test_header_original_format_decides(tmp_path, capsys):
    x = np.arange(16 ** 4, dtype=np.float32).reshape(16, 16, 16, 16)
    src = tmp_path / "dump"
    src.mkdir()
    for origin in ("HWCN", "NCHW"):
        path = src / f"Conv2D.{origin}.1.1.1700000000000001"
        write_dump(path, origin, outputs=[TensorSpec(to_device(x, origin, "NC1HWC0"), format="NC1HWC0",
                                                     original_shape=x.shape, original_format=origin)])
    assert main(["dc", str(src / "Conv2D.HWCN.1.1.1700000000000001"), "-o", str(tmp_path / "h")]) == 0
    assert np.array_equal(np.load(tmp_path / "h" / "Conv2D.HWCN.1.1.1700000000000001.output.0.npy"), x)
    # NCHW is enum value 0, the proto3 default: indistinguishable from "not written", so it is inferred
    assert main(["dc", str(src / "Conv2D.NCHW.1.1.1700000000000001"), "-o", str(tmp_path / "n")]) == 0
    assert "assumed NHWC" in capsys.readouterr().out


def test_bad_files_are_one_line_each_and_the_rest_converts(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    good, _ = _write_conv_dump(src)
    (src / "Add.truncated.4.2.1700000000000009").write_bytes(b"\x10\0\0\0\0\0\0\0abc")
    (src / "Mul.lying.5.2.1700000000000010").write_bytes((2 ** 62).to_bytes(8, "little") + b"xyz")
    (src / "notes.txt").write_text("not a dump")
    assert main(["dc", str(src), "-o", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert "Failed (2):" in out
    failed = [line for line in out.splitlines() if line.startswith(str(src))]
    assert len(failed) == 2 and all("Add.truncated" in line or "Mul.lying" in line for line in failed)
    assert sorted(os.listdir(tmp_path / "out")) == [f"{good}.input.0.npy", f"{good}.output.0.npy"]


def test_output_inside_input_folder_is_refused_before_writing(tmp_path, capsys):
    src = tmp_path / "dump"
    src.mkdir()
    _write_conv_dump(src)
    before = sorted(os.listdir(src))
    assert main(["dc", str(src), "-o", str(src / "decoded")]) == 2
    assert "output folder would be inside the input" in capsys.readouterr().err
    assert sorted(os.listdir(src)) == before


def test_missing_path_and_empty_folder(tmp_path, capsys):
    assert main(["dc", str(tmp_path / "nope"), "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith("nope: no such file or folder")
    (tmp_path / "empty").mkdir()
    assert main(["dc", str(tmp_path / "empty"), "-o", str(tmp_path / "o")]) == 2
    assert "no Ascend dump files in this folder" in capsys.readouterr().err


def test_single_file_must_have_a_dump_name(tmp_path, capsys):
    odd = tmp_path / "weird_name.bin"
    odd.write_bytes(b"\0" * 16)
    assert main(["dc", str(odd), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weird_name.bin" in err


def test_default_output_goes_to_the_workspace_temp(tmp_path):
    src = tmp_path / "dump"
    src.mkdir()
    name, _ = _write_conv_dump(src)
    workspace = tmp_path / "precision_data"
    assert main(["-d", str(workspace), "dc", str(src)]) == 0
    (stamp,) = os.listdir(workspace / "temp" / "dump_convert")
    assert (workspace / "temp" / "dump_convert" / stamp / f"{name}.output.0.npy").is_file()


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int32", "uint8", "int64", "float64", "bool"])
def test_plain_dtypes_round_trip(tmp_path, dtype):
    values = (np.random.default_rng(1).standard_normal((3, 5)) * 50).astype(dtype)
    (tmp_path / "dump").mkdir()
    path = tmp_path / "dump" / "Cast.op.1.1.1700000000000001"
    write_dump(path, "op", inputs=[values], outputs=[values])
    assert main(["dc", str(path), "-o", str(tmp_path / "o")]) == 0
    back = np.load(tmp_path / "o" / f"{path.name}.output.0.npy")
    assert back.dtype == np.dtype(dtype) and np.array_equal(back, values)


def test_keep_layout_says_so_once_and_json_lists_every_tensor(tmp_path, capsys):
    import json

    src = tmp_path / "dump"
    src.mkdir()
    name, x = _write_conv_dump(src)
    capsys.readouterr()
    assert main(["dc", str(src / name), "--keep-layout", "-o", str(tmp_path / "kept")]) == 0
    out = capsys.readouterr().out
    assert "Converted 2 tensors from 1 dump file to" in out and "as stored (--keep-layout)" in out
    assert out.count("as stored") == 1 and "Notes:" not in out  # no note per tensor: the title says it once
    assert main(["--json", "dc", str(src), "-o", str(tmp_path / "json")]) == 0
    tensors = json.loads(capsys.readouterr().out)["data"]["tensors"]
    assert [(t["tensor"], t["format"], t["shape"]) for t in tensors] == [("input 0", "ND", [1, 4, 4, 19]),
                                                                           ("output 0", "NHWC", [1, 4, 4, 19])]
    output = tensors[1]
    assert output["min"] == float(x.min()) and output["max"] == float(x.max())  # the array's own figures
    assert np.array_equal(np.load(output["file"]), x)
