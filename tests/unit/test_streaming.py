"""Host copies with streaming stores (tunedgemm/streaming.py, tunedgemm/_streamcopy.c) against
NumPy's: every layout the pipeline copies, odd widths and unaligned destinations."""

from __future__ import annotations

import numpy as np
import pytest

from tunedgemm import streaming


def fresh(rng, shape, dtype, order="C"):
    return np.asarray(rng.uniform(-1, 1, shape), dtype=dtype, order=order)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (64, 17), (130, 1000), (7, 4099)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_copy_matches_numpy(rng, dtype, shape, order):
    src = fresh(rng, shape, dtype, order)
    dst = np.full(shape, np.nan, dtype=dtype, order=order)
    streaming.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_of_larger_arrays_into_padded_lines(rng, dtype):
    """As the pipeline stages: a column block of a C-ordered operand into a buffer whose lines
    are padded, and a row block of an F-ordered one; nothing outside the block is written."""
    big = fresh(rng, (300, 257), dtype)
    buffer = np.full((100, 72), np.nan, dtype=dtype)
    streaming.copy(buffer[:, 3:67], big[100:200, 190:254])
    np.testing.assert_array_equal(buffer[:, 3:67], big[100:200, 190:254])
    assert np.isnan(buffer[:, :3]).all() and np.isnan(buffer[:, 67:]).all()
    tall = fresh(rng, (257, 300), dtype, "F")
    target = np.full((72, 100), np.nan, dtype=dtype, order="F")
    streaming.copy(target[5:69], tall[9:73, 100:200])
    np.testing.assert_array_equal(target[5:69], tall[9:73, 100:200])
    assert np.isnan(target[:5]).all() and np.isnan(target[69:]).all()


def test_mixed_layouts_and_dtypes_fall_back_to_numpy(rng):
    src = fresh(rng, (40, 30), np.float64)
    for dst in (np.full((40, 30), np.nan, order="F"), np.full((40, 30), np.nan, np.float32)):
        streaming.copy(dst, src)
        np.testing.assert_array_equal(dst, src.astype(dst.dtype))


def test_the_extension_streams_to_any_alignment(rng):
    native = pytest.importorskip("tunedgemm._streamcopy")
    src = np.frombuffer(rng.bytes(5000), np.uint8)
    for offset in (0, 1, 8, 15, 16):
        for width in (0, 1, 63, 64, 65, 1000):
            dst = np.zeros(4 * 1100 + 64, np.uint8)
            native.copy_2d(dst.ctypes.data + offset, 1100, src.ctypes.data + 3, 1200, width, 4)
            for r in range(4):
                line = dst[offset + r * 1100 : offset + r * 1100 + width]
                np.testing.assert_array_equal(line, src[3 + r * 1200 : 3 + r * 1200 + width])
            assert not dst[:offset].any() and not dst[offset + 3 * 1100 + width :].any()
    with pytest.raises(ValueError, match="negative"):
        native.copy_2d(dst.ctypes.data, 0, src.ctypes.data, 0, -1, 1)
