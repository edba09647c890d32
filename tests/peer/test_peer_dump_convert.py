"""Our dump files and ``dc`` against CANN's own converter (``msaccucmp.sh convert``), tensor for tensor.

One peer run per layout family; every tensor the peer writes must equal ours exactly (dtype, shape, bits).
Where the peer is wrong (NC1HWC0 with an NHWC original shape) the test shows our verdict instead.
"""
import glob
import os

import numpy as np
import pytest

from precision_tool.cli import main
from precision_tool.formats.dtypes import float32_to_bf16_bits
from precision_tool.formats.dump_writer import TensorSpec, write_dump
from precision_tool.formats.layouts import to_device

pytestmark = pytest.mark.peer
TS = 1700000000000000
RNG = np.random.default_rng(7)


def _values(shape, dtype):
    values = RNG.standard_normal(shape) * 40
    return values.astype(dtype) if dtype != "bool" else values > 0


def _peer_arrays(out_dir):
    """``{dump}.{kind}.{i}`` -> array, from the peer's names (``...output.0.npy`` or ``...output.0.2x3.npy``)."""
    arrays = {}
    for path in glob.glob(os.path.join(out_dir, "*.npy")):
        stem = os.path.basename(path)[: -len(".npy")]
        for kind in (".input.", ".output."):
            if kind in stem:
                head, tail = stem.rsplit(kind, 1)
                arrays[f"{head}{kind}{tail.split('.')[0]}"] = np.load(path, allow_pickle=False)
    return arrays


def _ours(src, out_dir):
    assert main(["dc", str(src), "-o", str(out_dir)]) == 0
    return {os.path.basename(p)[: -len(".npy")]: np.load(p, allow_pickle=False)
            for p in glob.glob(os.path.join(out_dir, "*.npy"))}


def _assert_same(peer_arrays, our_arrays, expected_count, collapsed_batch_ok=False):
    """Same dtype, shape and bytes. ``collapsed_batch_ok``: the peer writes FRACTAL_NZ with several batch
    dims as ``[prod(batch), M, N]``; we keep the original shape, so only the bytes are compared then."""
    assert len(peer_arrays) == expected_count, sorted(peer_arrays)
    for key, theirs in peer_arrays.items():
        ours = our_arrays[key]
        assert ours.dtype == theirs.dtype, key
        if collapsed_batch_ok and ours.ndim > 3:
            assert theirs.shape == (int(np.prod(ours.shape[:-2])), *ours.shape[-2:]), key
        else:
            assert ours.shape == theirs.shape, key
        assert ours.tobytes() == theirs.tobytes(), key


PLAIN_DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                "int64", "uint64", "bool", "complex64", "complex128"]


def test_every_dtype_decodes_bit_exactly_in_the_peer(peer, tmp_path):
    src = tmp_path / "plain"
    src.mkdir()
    for i, dtype in enumerate(PLAIN_DTYPES):
        values = _values((3, 7), dtype)
        if dtype.startswith("complex"):
            values = values + 1j * _values((3, 7), "float32")
            values = values.astype(dtype)
        write_dump(src / f"Op.{dtype}.{i}.1.{TS + i}", dtype, inputs=[values], outputs=[values, values[:1]])
    bits = float32_to_bf16_bits(_values((4, 5), "float32"))
    write_dump(src / f"Op.bf16.99.1.{TS + 99}", "bf16", outputs=[TensorSpec(bits, dtype_code=27)])
    peer.run("convert", "-d", src, "-out", tmp_path / "peer")
    _assert_same(_peer_arrays(tmp_path / "peer"), _ours(src, tmp_path / "ours"), 3 * len(PLAIN_DTYPES) + 1)


@pytest.mark.parametrize("family, origin, device, shapes", [
    ("NCHW", "NCHW", "NC1HWC0", [(2, 19, 3, 5), (1, 1, 4, 4), (1, 16, 2, 3), (1, 33, 1, 7)]),
    ("ND", "ND", "FRACTAL_NZ", [(33, 17), (3, 33, 17), (2, 2, 16, 1), (1, 5)]),
    ("HWCN", "HWCN", "FRACTAL_Z", [(3, 3, 19, 17), (1, 1, 16, 16), (5, 1, 3, 33)]),
    ("NCDHW", "NCDHW", "NDC1HWC0", [(1, 19, 2, 3, 4), (2, 16, 1, 1, 1)]),
])
def test_device_layouts_match_the_peers_conversion(peer, tmp_path, family, origin, device, shapes):
    src = tmp_path / family
    src.mkdir()
    count = 0
    for i, shape in enumerate(shapes):
        for dtype in ("float16", "float32"):
            values = _values(shape, dtype)
            spec = TensorSpec(to_device(values, origin, device), format=device, original_shape=shape)
            write_dump(src / f"Op.{family}{i}{dtype}.{i}.1.{TS + count}", f"op{i}", outputs=[spec])
            count += 1
    peer.run("convert", "-d", src, "-out", tmp_path / "peer", "-f", family)
    _assert_same(_peer_arrays(tmp_path / "peer"), _ours(src, tmp_path / "ours"), count,
                 collapsed_batch_ok=device == "FRACTAL_NZ")


def test_nc1hwc0_with_nhwc_original_shape_peer_is_wrong_we_are_right(peer, tmp_path):
    """Asked for NCHW, msaccucmp unpacks to padded NCHW and then slices with the NHWC original shape:
    wrong data in the NHWC shape, no warning. ``dc`` returns the tensor exactly, in NHWC."""
    src = tmp_path / "nhwc"
    src.mkdir()
    x = _values((1, 8, 8, 3), "float16")
    name = f"Conv2D.conv.1.1.{TS}"
    write_dump(src / name, "conv", outputs=[TensorSpec(to_device(x, "NHWC", "NC1HWC0"), format="NC1HWC0",
                                                       original_shape=x.shape)])
    peer.run("convert", "-d", src, "-out", tmp_path / "peer", "-f", "NCHW")
    theirs = _peer_arrays(tmp_path / "peer")[f"{name}.output.0"]
    ours = _ours(src, tmp_path / "ours")[f"{name}.output.0"]
    assert theirs.shape == x.shape  # looks right ...
    assert not np.array_equal(theirs, x) and not np.array_equal(theirs.ravel(), x.transpose(0, 3, 1, 2).ravel())
    assert np.mean(theirs == 0) > 0.5  # ... but is mostly channel padding
    assert np.array_equal(ours, x)
