"""Slabs of a device-layout tensor (issue 17: any tensor size in fixed memory): converted one at a time, they give
the whole tensor's origin order exactly -- for every layout that has slabs, every origin it converts to, padded
and unpadded block axes, and limits from one element to more than the tensor; FRACTAL_Z has none."""
import numpy as np
import pytest

from precision_tool.formats.layouts import to_device, to_origin
from precision_tool.formats.origin_slabs import origin_slabs

CASES = [("NHWC", "NC1HWC0", (2, 5, 3, 19)), ("NCHW", "NC1HWC0", (2, 19, 5, 3)), ("HWCN", "NC1HWC0", (5, 3, 19, 2)),
         ("NHWC", "NC1HWC0", (1, 4, 4, 32)), ("NDHWC", "NDC1HWC0", (2, 3, 4, 5, 17)),
         ("NCDHW", "NDC1HWC0", (2, 17, 3, 4, 5)), ("ND", "FRACTAL_NZ", (37, 21)),
         ("ND", "FRACTAL_NZ", (3, 2, 37, 21)), ("NHWC", "FRACTAL_NZ", (2, 3, 37, 21)), ("ND", "FRACTAL_NZ", (32, 16))]


@pytest.mark.parametrize("origin, device, shape", CASES)
@pytest.mark.parametrize("limit", [1, 7, 16, 100, 1000, 10 ** 9])
def test_slabs_give_the_origin_order_piece_by_piece(origin, device, shape, limit):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)  # every element its own flat index
    stored = to_device(x, origin, device)
    slabs = origin_slabs(stored.shape, device, origin, shape, limit)
    pieces = [to_origin(stored[slab.stored_index], device, origin, slab.origin_shape).ravel() for slab in slabs]
    assert np.array_equal(np.concatenate(pieces), np.arange(x.size, dtype=np.float32))
    assert sum(slab.size for slab in slabs) == x.size
    if limit >= 1000:  # above every case's smallest slab (one block of the split axis and all after it: <= 960)
        assert all(slab.size <= limit for slab in slabs)
    assert (len(slabs) == 1) == (x.size <= limit)


def test_a_slab_is_rows_of_an_nhwc_tensor_and_channel_blocks_of_an_nchw_one():
    nhwc = origin_slabs((1, 4, 1024, 1024, 16), "NC1HWC0", "NHWC", (1, 1024, 1024, 64), 1 << 19)
    assert len(nhwc) == 128 and nhwc[1].origin_shape == (1, 8, 1024, 64)
    assert nhwc[1].stored_index == (slice(0, 1), slice(None), slice(8, 16), slice(None), slice(None))
    nchw = origin_slabs((1, 4, 1024, 1024, 16), "NC1HWC0", "NCHW", (1, 64, 1024, 1024), 1 << 19)
    assert [slab.origin_shape for slab in nchw] == [(1, 16, 1024, 1024)] * 4  # one C0 block: at least 16 channels


def test_layouts_without_slabs():
    assert origin_slabs((3, 3, 16, 16), "FRACTAL_Z", "NCHW", (16, 48, 1, 3), 10) is None
    assert origin_slabs((1, 1, 16, 16), "FRACTAL_NZ", "ND", (5,), 10) is None  # [N] read as [1, N]
    assert origin_slabs((1, 0, 4, 4, 16), "NC1HWC0", "NHWC", (1, 4, 4, 0), 10) is None
