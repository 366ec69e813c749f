"""Batched device matmul plans, checked on the CPU: each launch the plan makes (strided batch,
outer loop, fold), carried out with NumPy on the operands' memory, gives np.matmul."""

from __future__ import annotations

import numpy as np
import pytest

from tunedgemm import _matmul, device_arrays
from tunedgemm.device_arrays import Kind


class FakeDeviceArray:
    """A host array behind a __cuda_array_interface__ at address 0 (addresses are offsets)."""

    def __init__(self, arr):
        self.arr = arr

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.arr.shape, "strides": self.arr.strides,
                "typestr": self.arr.dtype.str, "data": (0, False), "version": 3}  # fmt: skip


@pytest.fixture(autouse=True)
def fake_kind(monkeypatch):
    kind = Kind("fake", lambda x: (x.arr.shape,), lambda x: 0, lambda x: 0, lambda *a: None)
    monkeypatch.setitem(device_arrays._kinds, FakeDeviceArray, kind)


def _column_major(flat, offset, rows, cols, ld, trans):
    """op(X) of a column-major X at an element offset of flat memory."""
    r, c = (cols, rows) if trans else (rows, cols)
    x = np.lib.stride_tricks.as_strided(flat[offset:], (r, c), (flat.itemsize, ld * flat.itemsize))
    return x.T if trans else x


def run_plan(a, b):
    """What the plan's launches compute, on the operands' (C-contiguous) memory."""
    fa, fb = FakeDeviceArray(a), FakeDeviceArray(b)
    dtype = np.result_type(a, b)
    plan = _matmul._batched_plan(fa, fb, fa.__cuda_array_interface__, fb.__cuda_array_interface__,
                                 dtype, "ieee")  # fmt: skip
    shape = plan.new[0]
    out = np.full(int(np.prod(shape)), np.nan)
    t = plan.template
    count, (s1, s2, s3) = plan.batch
    first, second = (b, a) if plan.swap else (a, b)
    for oa, ob, oc in plan.outer or ((0, 0, 0),):
        for i in range(count):
            x = _column_major(first.reshape(-1), oa + i * s1, t.m, t.k, t.lda, t.trans_a)
            y = _column_major(second.reshape(-1), ob + i * s2, t.k, t.n, t.ldb, t.trans_b)
            c = np.lib.stride_tricks.as_strided(out[oc + i * s3:], (t.m, t.n), (8, t.ldc * 8))
            c[...] = x @ y
    return out.reshape(shape), plan


@pytest.mark.parametrize(
    "a_shape,b_shape,launches",
    [((8, 33, 17), (8, 17, 25), 1), ((8, 33, 17), (17, 25), 1), ((33, 17), (4, 17, 25), 1),
     ((2, 3, 33, 17), (3, 17, 25), 2), ((2, 1, 33, 17), (1, 5, 17, 25), 2),
     ((17,), (3, 17, 25), 1), ((3, 33, 17), (17,), 1), ((4, 1, 6, 5), (3, 5, 7), 4),
     ((1, 33, 17), (6, 17, 25), 1)],
)  # fmt: skip
def test_batched_plan_computes_np_matmul(a_shape, b_shape, launches):
    rng = np.random.default_rng()
    a, b = rng.uniform(-1, 1, a_shape), rng.uniform(-1, 1, b_shape)
    got, plan = run_plan(a, b)
    assert len(plan.outer or ((0, 0, 0),)) == launches
    want = np.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_batch_against_one_matrix_folds_into_one_taller_product():
    rng = np.random.default_rng()
    _, plan = run_plan(rng.uniform(-1, 1, (8, 33, 17)), rng.uniform(-1, 1, (17, 25)))
    assert plan.batch[0] == 1 and plan.template.m * plan.template.n == 8 * 33 * 25
