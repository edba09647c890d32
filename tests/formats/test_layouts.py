"""Device layouts <-> origin layouts: element positions from the facts, exact round trips, error texts,
and a cross-check against msaccucmp's own converters (``peer`` marker)."""
from __future__ import annotations

import os
import subprocess
from precision_tool.compat import prod
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from precision_tool.errors import LayoutError, PrecisionToolError
from precision_tool.formats.layouts import (
    ORIGINS_OF_DEVICE, PLAIN_FORMATS, device_shape, format_of, supported_conversions, to_device, to_origin,
)

DTYPES = ["float16", "float32", "int8", "int32"]
DEVICE_PAIRS = [(device, origin) for device, origins in ORIGINS_OF_DEVICE.items() for origin in origins]


def c0_of(dtype) -> int:
    """C0 as real devices use it: 32 for 1-byte types, 16 otherwise."""
    return 32 if np.dtype(dtype).itemsize == 1 else 16


def numbered(shape, dtype="int32") -> np.ndarray:
    """1, 2, 3, ... so that every element is distinct and no element is a padding zero."""
    return (np.arange(prod(shape), dtype=np.int64) + 1).reshape(shape).astype(dtype)


def random_tensor(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


def stored_index(device, origin, shape, c0, idx):
    """The stored position of origin element ``idx`` (a tuple of index arrays), written from the facts
    (docs/ascend-formats.md §2 and the FRACTAL_Z formula checked against msaccucmp), not from the code."""
    if device == "FRACTAL_NZ":
        if len(idx) == 1:  # [N] is the matrix [1, N]
            idx = (np.zeros_like(idx[0]), idx[0])
        *batch, m, n = idx
        return (*batch, n // c0, m // 16, m % 16, n % c0)
    a = dict(zip(origin, idx))
    if device == "NC1HWC0":
        return a["N"], a["C"] // c0, a["H"], a["W"], a["C"] % c0
    if device == "NDC1HWC0":
        return a["N"], a["D"], a["C"] // c0, a["H"], a["W"], a["C"] % c0
    assert device == "FRACTAL_Z"
    height, width = shape[origin.index("H")], shape[origin.index("W")]
    return ((a["C"] // c0) * height * width + a["H"] * width + a["W"], a["N"] // 16, a["N"] % 16, a["C"] % c0)


def assert_positions(device, origin, x, stored, c0):
    """Every element of ``x`` sits where the facts say, at distinct places, and everything else is zero."""
    target = stored_index(device, origin, x.shape, c0, tuple(np.indices(x.shape)))
    np.testing.assert_array_equal(stored[target], x)
    hit = np.zeros(stored.shape, dtype=bool)
    hit[target] = True
    assert hit.sum() == x.size
    assert not stored[~hit].any(), "padding must be zeros"


# --- element positions -------------------------------------------------------------------------------------

POSITION_CASES = [
    ("NC1HWC0", "NHWC", (2, 3, 5, 19), (2, 2, 3, 5, 16)),
    ("NC1HWC0", "NCHW", (2, 33, 1, 3), (2, 3, 1, 3, 16)),
    ("NC1HWC0", "HWCN", (3, 1, 17, 2), (2, 2, 3, 1, 16)),
    ("NDC1HWC0", "NDHWC", (2, 3, 1, 5, 19), (2, 3, 2, 1, 5, 16)),
    ("NDC1HWC0", "NCDHW", (1, 17, 2, 3, 1), (1, 2, 2, 3, 1, 16)),
    ("FRACTAL_Z", "NCHW", (17, 19, 3, 2), (2 * 3 * 2, 2, 16, 16)),
    ("FRACTAL_Z", "HWCN", (1, 3, 33, 1), (3 * 1 * 3, 1, 16, 16)),
    ("FRACTAL_Z", "NHWC", (33, 3, 3, 16), (1 * 3 * 3, 3, 16, 16)),
    ("FRACTAL_NZ", "ND", (33, 17), (2, 3, 16, 16)),
    ("FRACTAL_NZ", "ND", (2, 3, 33, 17), (2, 3, 2, 3, 16, 16)),
    ("FRACTAL_NZ", "ND", (17,), (2, 1, 16, 16)),
    ("FRACTAL_NZ", "NHWC", (1, 2, 16, 1), (1, 2, 1, 1, 16, 16)),
]


@pytest.mark.parametrize("device, origin, shape, stored_shape", POSITION_CASES)
def test_elements_sit_where_the_facts_say(device, origin, shape, stored_shape):
    x = numbered(shape)
    stored = to_device(x, origin, device)
    assert stored.shape == stored_shape == device_shape(shape, origin, device)
    assert_positions(device, origin, x, stored, 16)


@pytest.mark.parametrize("device, origin, shape, stored_shape", [
    ("NC1HWC0", "NHWC", (1, 2, 2, 33), (1, 2, 2, 2, 32)),
    ("FRACTAL_Z", "NCHW", (17, 40, 1, 2), (2 * 1 * 2, 2, 16, 32)),
    ("FRACTAL_NZ", "ND", (3, 17, 40), (3, 2, 2, 16, 32)),
])
def test_int8_blocks_of_32_channels(device, origin, shape, stored_shape):
    x = numbered(shape, "int32").astype(np.int8) | 1  # int8 wraps; keep every element non-zero
    stored = to_device(x, origin, device, c0=32)
    assert stored.shape == stored_shape and stored.dtype == np.int8
    assert_positions(device, origin, x, stored, 32)
    np.testing.assert_array_equal(to_origin(stored, device, origin, shape), x)


def test_single_elements_quoted_from_the_facts():
    x = numbered((2, 3, 4, 19))  # NHWC
    nc1hwc0 = to_device(x, "NHWC", "NC1HWC0")
    assert nc1hwc0[1, 18 // 16, 2, 3, 18 % 16] == x[1, 2, 3, 18]
    m = numbered((33, 17))
    nz = to_device(m, "ND", "FRACTAL_NZ")
    assert nz[16 // 16, 32 // 16, 32 % 16, 16 % 16] == m[32, 16]
    w = numbered((17, 19, 3, 2))  # NCHW weights, H*W = 6
    fz = to_device(w, "NCHW", "FRACTAL_Z")
    assert fz[(18 // 16) * 6 + 2 * 2 + 1, 16 // 16, 16 % 16, 18 % 16] == w[16, 18, 2, 1]


# --- exact round trips -------------------------------------------------------------------------------------

def _round_trip_shapes():
    for c in (1, 16, 17, 19, 33):
        yield "NC1HWC0", "NCHW", (2, c, 1, 3)
        yield "NC1HWC0", "NHWC", (1, 5, 1, c)
        yield "NC1HWC0", "HWCN", (3, 1, c, 2)
        yield "NDC1HWC0", "NCDHW", (1, c, 2, 1, 3)
        yield "NDC1HWC0", "NDHWC", (2, 1, 3, 1, c)
        yield "FRACTAL_Z", "NCHW", (c, 17, 3, 1)
        yield "FRACTAL_Z", "NHWC", (1, 1, 3, c)
        yield "FRACTAL_Z", "HWCN", (3, 3, c, 16)
    for shape in [(33, 17), (1, 1), (16, 16), (1, 33), (17,), (1,), (2, 33, 17), (3, 1, 16), (2, 3, 17, 33)]:
        yield "FRACTAL_NZ", "ND", shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device, origin, shape", list(_round_trip_shapes()))
def test_round_trip_is_exact(device, origin, shape, dtype):
    x = random_tensor(shape, dtype)
    stored = to_device(x, origin, device, c0=c0_of(dtype))
    assert stored.dtype == x.dtype and stored.flags.c_contiguous
    assert np.count_nonzero(stored) == np.count_nonzero(x), "padding must be zeros"
    back = to_origin(stored, device, origin, shape)
    assert back.dtype == x.dtype and back.shape == x.shape and back.flags.c_contiguous
    np.testing.assert_array_equal(back, x)


_MAX_DIM = {"N": 40, "C": 40, "H": 4, "W": 4, "D": 3}


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_shapes_follow_the_formulas_and_round_trip(data):
    device, origin = data.draw(st.sampled_from(DEVICE_PAIRS), label="pair")
    if device == "FRACTAL_NZ":
        rank = data.draw(st.integers(1, 4), label="rank")
        limits = [3] * max(rank - 2, 0) + [40] * min(rank, 2)
    else:
        limits = [_MAX_DIM[axis] for axis in origin]
    shape = tuple(data.draw(st.integers(1, limit)) for limit in limits)
    c0 = data.draw(st.sampled_from([8, 16, 32]), label="c0")
    x = numbered(shape)
    stored = to_device(x, origin, device, c0)
    assert stored.shape == device_shape(shape, origin, device, c0)
    assert_positions(device, origin, x, stored, c0)
    np.testing.assert_array_equal(to_origin(stored, device, origin, shape), x)


@pytest.mark.parametrize("src, dst", [pair for pair in supported_conversions() if pair[0] in PLAIN_FORMATS])
def test_plain_formats_transpose_by_their_letters(src, dst):
    sizes = dict(zip("NCDHW", (2, 3, 5, 7, 11)))
    at = dict(zip("NCDHW", (1, 2, 4, 3, 9)))  # one element, named by its (n, c, d, h, w)
    x = numbered(tuple(sizes[axis] for axis in src))
    y = to_device(x, src, dst)
    assert y.shape == tuple(sizes[axis] for axis in dst)
    assert y[tuple(at[axis] for axis in dst)] == x[tuple(at[axis] for axis in src)]
    np.testing.assert_array_equal(to_origin(y, dst, src, x.shape), x)


def test_empty_tensors_convert():
    for device, origin, shape in [("NC1HWC0", "NHWC", (2, 0, 3, 19)), ("NC1HWC0", "NCHW", (2, 0, 3, 3)),
                                  ("FRACTAL_Z", "HWCN", (3, 3, 0, 5)), ("FRACTAL_NZ", "ND", (0, 5))]:
        x = np.zeros(shape, np.float16)
        stored = to_device(x, origin, device)
        assert stored.shape == device_shape(shape, origin, device)
        assert to_origin(stored, device, origin, shape).shape == shape


# --- the target is the origin format, padding stripped after reordering --------------------------------------

def test_padding_is_stripped_after_reordering_to_the_origin_format():
    # msaccucmp's single-tensor conversion returns channels 0..7 of an NCHW view here (5/8 of them padding).
    x = numbered((1, 8, 8, 3), "float32")
    stored = to_device(x, "NHWC", "NC1HWC0")
    np.testing.assert_array_equal(to_origin(stored, "NC1HWC0", "NHWC", [1, 8, 8, 3]), x)
    np.testing.assert_array_equal(to_origin(stored, "NC1HWC0", "NCHW", [1, 3, 8, 8]), x.transpose(0, 3, 1, 2))
    x = numbered((1, 4, 4, 19), "float32")  # msaccucmp returns [1, 4, 4, 4] here
    np.testing.assert_array_equal(to_origin(to_device(x, "NHWC", "NC1HWC0"), "NC1HWC0", "NHWC", (1, 4, 4, 19)), x)


def test_nonzero_padding_on_the_device_is_ignored():
    x = random_tensor((2, 3, 3, 19), "float16")
    stored = to_device(x, "NHWC", "NC1HWC0")
    stored[:, 1, :, :, 3:] = 7  # garbage in the padded channels 19..31
    np.testing.assert_array_equal(to_origin(stored, "NC1HWC0", "NHWC", x.shape), x)


def test_same_format_and_nd_are_reshapes():
    x = numbered((2, 3, 4))
    np.testing.assert_array_equal(to_origin(x, "FRACTAL_Z", "FRACTAL_Z", (6, 4)), x.reshape(6, 4))
    np.testing.assert_array_equal(to_origin(x, "ND", "NHWC", [24]), x.reshape(24))
    np.testing.assert_array_equal(to_origin(x, "NCHW", "ND", (2, 12)), x.reshape(2, 12))
    scalar = np.float32(5)
    assert to_origin(scalar, "ND", "ND", []).shape == to_origin(scalar, "NCHW", "NHWC", ()).shape == ()
    assert to_device(scalar, "ND", "NHWC").shape == ()


def test_plain_formats_of_another_rank_are_only_labels():
    x = numbered((5, 7))  # GE labels 2-D tensors NCHW/NHWC too
    np.testing.assert_array_equal(to_origin(x, "NCHW", "NHWC", (5, 7)), x)


def test_formats_by_name_or_number():
    assert format_of(3) == format_of("nc1hwc0") == format_of(" FORMAT_NC1HWC0") == "NC1HWC0"
    assert format_of(np.int32(29)) == "FRACTAL_NZ"
    x = numbered((33, 17))
    np.testing.assert_array_equal(to_origin(to_device(x, 2, 29), 29, 2, x.shape), x)


def test_device_shape_needs_no_data():
    with pytest.raises(LayoutError, match=r"^cannot lay out NCHW \[2, -1, 3, 3\] as FRACTAL_Z: the origin shape"):
        device_shape([2, -1, 3, 3], "NCHW", "FRACTAL_Z")
    assert device_shape([4096, 4096, 3, 3], "NCHW", "FRACTAL_Z") == (256 * 9, 256, 16, 16)
    assert device_shape((1, 4, 4, 19), 1, 3) == (1, 2, 4, 4, 16)
    assert device_shape((7,), "ND", "FRACTAL_NZ", c0=32) == (1, 1, 16, 32)


# --- errors: one line naming formats and shapes --------------------------------------------------------------

@pytest.mark.parametrize("stored_shape, stored_format, origin_format, origin_shape, message", [
    ((1, 2, 4, 4, 16), "NC1HWC0", "NHWC", (1, 4, 4, 40),
     "cannot convert NC1HWC0 [1, 2, 4, 4, 16] to NHWC [1, 4, 4, 40]: C1=2 holds at most 32 channels, not 40"),
    ((1, 3, 4, 4, 16), "NC1HWC0", "NHWC", (1, 4, 4, 19),
     "cannot convert NC1HWC0 [1, 3, 4, 4, 16] to NHWC [1, 4, 4, 19]: C1=3 is more than the 2 needed for 19 channels"),
    ((1, 2, 4, 4, 16), "NC1HWC0", "NCHW", (1, 19, 5, 4),
     "cannot convert NC1HWC0 [1, 2, 4, 4, 16] to NCHW [1, 19, 5, 4]: H=4 but the origin shape has H=5"),
    ((2, 16), "NC1HWC0", "NCHW", (1, 2, 1, 1),
     "cannot convert NC1HWC0 [2, 16] to NCHW [1, 2, 1, 1]: NC1HWC0 for this origin is 5-D, got 2-D"),
    ((1, 2, 4, 4, 16), "NC1HWC0", "NHWC", (4, 19),
     "cannot convert NC1HWC0 [1, 2, 4, 4, 16] to NHWC [4, 19]: the NHWC origin shape must be 4-D"),
    ((12, 2, 16, 16), "FRACTAL_Z", "NCHW", (17, 19, 3, 3),
     "cannot convert FRACTAL_Z [12, 2, 16, 16] to NCHW [17, 19, 3, 3]: C1*H*W=12 but C=19, H=3, W=3 give 2*3*3=18"),
    ((18, 2, 8, 16), "FRACTAL_Z", "NCHW", (17, 19, 3, 3),
     "cannot convert FRACTAL_Z [18, 2, 8, 16] to NCHW [17, 19, 3, 3]: N0=8 but this layout's N0 is 16"),
    ((2, 2, 16, 16), "FRACTAL_NZ", "ND", (33, 17),
     "cannot convert FRACTAL_NZ [2, 2, 16, 16] to ND [33, 17]: M1=2 holds at most 32 rows (M), not 33"),
    ((3, 2, 3, 16, 16), "FRACTAL_NZ", "ND", (2, 33, 17),
     "cannot convert FRACTAL_NZ [3, 2, 3, 16, 16] to ND [2, 33, 17]: batch[0]=3 but the origin shape has batch[0]=2"),
    ((2, 3), "ND", "ND", (7,), "cannot convert ND [2, 3] to ND [7]: 6 stored elements, the origin shape has 7"),
    ((1, 3, 4, 5), "NCHW", "NHWC", (1, 4, 5, 2),
     "cannot convert NCHW [1, 3, 4, 5] to NHWC [1, 4, 5, 2]: as NHWC it is [1, 4, 5, 3]"),
    ((1, 3, 4, 5), "NCHW", "NHWC", (-1, 4, 5, 3),
     "cannot convert NCHW [1, 3, 4, 5] to NHWC (-1, 4, 5, 3): the origin shape must be a list of sizes >= 0"),
])
def test_shape_mismatches_name_formats_shapes_and_the_axis(stored_shape, stored_format, origin_format,
                                                            origin_shape, message):
    with pytest.raises(LayoutError) as caught:
        to_origin(np.zeros(stored_shape, np.float16), stored_format, origin_format, origin_shape)
    assert str(caught.value) == message


def test_an_expected_c0_is_checked():
    stored = to_device(np.ones((1, 2, 2, 3), np.int8), "NHWC", "NC1HWC0")  # C0 = 16
    with pytest.raises(LayoutError, match=r"C0=16 but C0=32 was expected$"):
        to_origin(stored, "NC1HWC0", "NHWC", (1, 2, 2, 3), c0=32)


def test_unsupported_pairs_and_unknown_formats_list_what_is_supported():
    with pytest.raises(LayoutError) as caught:
        to_origin(np.zeros((9, 1, 16, 16)), "FRACTAL_Z", "NCDHW", (1, 1, 1, 3, 3))
    text = str(caught.value)
    assert text.startswith("cannot convert FRACTAL_Z [9, 1, 16, 16] to NCDHW [1, 1, 1, 3, 3]: no conversion from "
                           "FRACTAL_Z to NCDHW; supported: NC1HWC0 <-> NCHW|NHWC|HWCN; FRACTAL_Z <-> NCHW|NHWC|HWCN;")
    assert "\n" not in text and isinstance(caught.value, PrecisionToolError)
    with pytest.raises(LayoutError, match=r"^unknown format 'NC1HWC9'; supported: NC1HWC0 <-> "):
        to_origin(np.zeros(3), "NC1HWC9", "ND", (3,))
    with pytest.raises(LayoutError, match=r"^unknown format 999; "):
        to_device(np.zeros(3), "ND", 999)
    with pytest.raises(LayoutError, match=r"^unknown format True; "):
        format_of(True)


@pytest.mark.parametrize("call, message", [
    (lambda: to_device(np.zeros((2, 3)), "NHWC", "NC1HWC0"),
     "cannot convert NHWC [2, 3] to NC1HWC0: NHWC is 4-D, got 2-D"),
    (lambda: to_device(np.zeros((2, 3, 4, 5)), "NHWC", "NC1HWC0", c0=0),
     "cannot convert NHWC [2, 3, 4, 5] to NC1HWC0: C0 must be a positive integer, got 0"),
    (lambda: to_device(np.float32(1), "ND", "FRACTAL_NZ"),
     "cannot convert ND [] to FRACTAL_NZ: FRACTAL_NZ needs rank >= 1"),
    (lambda: to_device(np.zeros((2, 3, 4, 5)), "NCHW", "NDC1HWC0"),
     "cannot convert NCHW [2, 3, 4, 5] to NDC1HWC0: no conversion from NCHW to NDC1HWC0; supported: "),
])
def test_to_device_errors(call, message):
    with pytest.raises(LayoutError) as caught:
        call()
    assert str(caught.value).startswith(message)


# --- cross-check with CANN's msaccucmp (its builtin convert functions, run in the peer venv) ------------------

PEER_SCRIPT = r'''
import importlib, importlib.util, os, sys
import numpy as np
root = os.path.join(importlib.util.find_spec("msprobe").submodule_search_locations[0], "msaccucmp")
sys.path.insert(0, root)
cases = np.load(sys.argv[1], allow_pickle=False)
out = {}
for key in cases.files:
    if key.endswith(".data"):
        name = key[:-len(".data")]
        module = str(cases[name + ".module"])
        shape_from = [int(d) for d in cases[name + ".shape_from"]]
        shape_to = [int(d) for d in cases[name + ".shape_to"]]
        convert = importlib.import_module("format_manager.builtin_format_convert." + module).convert
        out[name] = np.asarray(convert(shape_from, shape_to, cases[key].reshape(-1)))
np.savez(sys.argv[2], **out)
'''


def _peer_cases():
    """(name, peer module, shape_from, shape_to, peer input, our expected output) for every pair msaccucmp has."""
    for dtype in ("float16", "int8", "int32"):
        c0 = c0_of(dtype)
        for c in (1, 16, 17, 33):
            for origin in ("NCHW", "NHWC", "HWCN"):
                shape = {"NCHW": (2, c, 3, 1), "NHWC": (2, 1, 3, c), "HWCN": (3, 1, c, 2)}[origin]
                x = random_tensor(shape, dtype, seed=c)
                stored = to_device(x, origin, "NC1HWC0", c0)
                yield f"{dtype}_NC1HWC0_{origin}_{c}", f"convert_NC1HWC0_to_{origin}", stored.shape, shape, stored, x
                for n in (1, 17):
                    wshape = {"NCHW": (n, c, 3, 2), "NHWC": (n, 3, 2, c), "HWCN": (3, 2, c, n)}[origin]
                    w = random_tensor(wshape, dtype, seed=n)
                    fz = to_device(w, origin, "FRACTAL_Z", c0)
                    if c0 == 16:  # msaccucmp packs FRACTAL_Z with C0 = 16 only
                        yield (f"{dtype}_{origin}_FRACTAL_Z_{c}_{n}", f"convert_{origin}_to_FRACTAL_Z", wshape,
                               fz.shape, w, fz)
                    if origin != "NHWC":  # msaccucmp has no FRACTAL_Z -> NHWC
                        yield (f"{dtype}_FRACTAL_Z_{origin}_{c}_{n}", f"convert_FRACTAL_Z_to_{origin}", fz.shape,
                               wshape, fz, w)
            for origin in ("NCDHW",):
                shape = (2, c, 3, 1, 2)
                x = random_tensor(shape, dtype, seed=c)
                stored = to_device(x, origin, "NDC1HWC0", c0)
                for module in ("convert_NDC1HWC0_to_NCDHW", "convert_NDC1HWC0_to_ND"):
                    yield f"{dtype}_{module}_{c}", module, stored.shape, shape, stored, x
        for shape in [(33, 17), (1, 1), (2, 33, 17), (2, 3, 5, 40), (17,)]:
            x = random_tensor(shape, dtype)
            nz = to_device(x, "ND", "FRACTAL_NZ", c0)
            for origin in ("ND", "NCHW", "NHWC"):
                yield (f"{dtype}_NZ_{origin}_{'x'.join(map(str, shape))}", f"convert_FRACTAL_NZ_to_{origin}",
                       nz.shape, shape, nz, x)
        for src, dst in [("NCHW", "NHWC"), ("NHWC", "NCHW"), ("HWCN", "NCHW"), ("HWCN", "NHWC"), ("NHWC", "HWCN")]:
            x = random_tensor((2, 3, 5, 7), dtype)
            yield f"{dtype}_{src}_{dst}", f"convert_{src}_to_{dst}", x.shape, to_device(x, src, dst).shape, x, \
                to_device(x, src, dst)


@pytest.mark.peer
def test_msaccucmp_converters_agree(tmp_path):
    python = Path(os.environ.get("PEER_VENV", "/tmp/peer-venv")) / "bin" / "python"
    if not python.exists():
        pytest.skip(f"msaccucmp peer venv not set up ({python} missing)")
    cases, expected = {}, {}
    for name, module, shape_from, shape_to, data, ours in _peer_cases():
        cases.update({f"{name}.module": np.array(module), f"{name}.shape_from": np.array(shape_from, np.int64),
                      f"{name}.shape_to": np.array(shape_to, np.int64), f"{name}.data": data})
        expected[name] = ours
    np.savez(tmp_path / "cases.npz", **cases)
    run = subprocess.run([str(python), "-c", PEER_SCRIPT, str(tmp_path / "cases.npz"), str(tmp_path / "out.npz")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    with np.load(tmp_path / "out.npz", allow_pickle=False) as peer:
        for name, ours in expected.items():
            theirs = peer[name]
            # msaccucmp leaves NC1HWC0 channel padding in (its caller slices later): strip it in the origin's
            # own axis order, which is what to_origin does. Its FRACTAL_NZ converters return [N] as [1, N] and
            # [..., M, N] as [prod(...), M, N]: same elements in the same order, so reshape.
            if theirs.shape != ours.shape and theirs.ndim == ours.ndim:
                theirs = theirs[tuple(slice(0, size) for size in ours.shape)]
            nz_shape = (prod(ours.shape[:-2]),) + ours.shape[-2:] if ours.ndim >= 2 else (1,) + ours.shape
            if "_NZ_" in name and theirs.shape == nz_shape:
                theirs = theirs.reshape(ours.shape)
            assert theirs.dtype == ours.dtype and theirs.shape == ours.shape, name
            assert np.array_equal(theirs, ours), name
    assert len(expected) > 150
