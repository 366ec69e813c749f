"""The API's BLAS semantics against a float64 reference, run once per backend (NumPy and GPU)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg

DTYPES = [np.float32, np.float64]
ROUTINES = {np.float32: tg.sgemm, np.float64: tg.dgemm}
TRANS = list(itertools.product((0, 1, 2), (0, 1)))
ODD_SHAPES = [
    (1, 1, 1),
    (7, 31, 33),
    (33, 7, 1),
    (127, 129, 65),
    (129, 127, 31),
    (64, 64, 128),
    (1, 200, 70),
    (200, 1, 70),
]


def stored(rng, rows, cols, trans, dtype, order):
    """The array a caller passes so that op(x) is rows x cols."""
    shape = (cols, rows) if trans else (rows, cols)
    return uniform(rng, shape, dtype, order)


def op(x, trans):
    return x.T if trans else x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans_a,trans_b", TRANS)
@pytest.mark.parametrize("m,n,k", ODD_SHAPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_matches_reference(backend, rng, dtype, trans_a, trans_b, m, n, k, order):
    a = stored(rng, m, k, trans_a, dtype, order)
    b = stored(rng, k, n, trans_b, dtype, order)
    c = uniform(rng, (m, n), dtype, order)
    routine = ROUTINES[dtype]
    out = routine(0.75, a, b, trans_a=trans_a, trans_b=trans_b)
    assert out.dtype == dtype and out.shape == (m, n) and out.flags.f_contiguous
    assert_gemm(out, 0.75, op(a, trans_a), op(b, trans_b), 0.0, None, dtype)
    out = routine(-1.5, a, b, beta=0.5, c=c, trans_a=trans_a, trans_b=trans_b)
    assert_gemm(out, -1.5, op(a, trans_a), op(b, trans_b), 0.5, c, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "alpha,beta", [(1.0, 0.0), (0.0, 0.0), (0.0, 2.0), (2.5, 1.0), (-1.0, -3.0)]
)
@pytest.mark.parametrize("c_mode", ["none", "copy", "overwrite"])
def test_alpha_beta_and_c(backend, rng, dtype, alpha, beta, c_mode):
    m, n, k = 37, 45, 53
    a, b = uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype)
    c = None if c_mode == "none" else uniform(rng, (m, n), dtype, "F")
    if c is not None and beta == 0.0:
        c[:] = np.nan  # beta == 0: C's values must not be read
    c_before = None if c is None else c.copy()
    out = ROUTINES[dtype](alpha, a, b, beta=beta, c=c, overwrite_c=int(c_mode == "overwrite"))
    assert_gemm(out, alpha, a, b, beta, c_before, dtype)
    if c_mode == "overwrite":
        assert out is c
    elif c is not None:
        np.testing.assert_array_equal(c, c_before)


@pytest.mark.parametrize("dtype", DTYPES)
def test_alpha_zero_ignores_nan_in_inputs(backend, rng, dtype):
    a = np.full((9, 5), np.nan, dtype)
    b = uniform(rng, (5, 6), dtype)
    c = uniform(rng, (9, 6), dtype)
    out = ROUTINES[dtype](0.0, a, b, beta=2.0, c=c)
    np.testing.assert_allclose(out, 2.0 * c, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_order", ["C", "F"])
def test_overwrite_in_place_any_order(backend, rng, dtype, c_order):
    a, b = uniform(rng, (20, 30), dtype), uniform(rng, (30, 25), dtype)
    c = uniform(rng, (20, 25), dtype, c_order)
    c0 = c.copy()
    out = ROUTINES[dtype](1.0, a, b, beta=1.0, c=c, overwrite_c=1)
    assert out is c
    assert_gemm(c, 1.0, a, b, 1.0, c0, dtype)


def test_overwrite_with_other_dtype_returns_new_array(backend, rng):
    a, b = uniform(rng, (8, 4), np.float32), uniform(rng, (4, 5), np.float32)
    c = uniform(rng, (8, 5), np.float64)
    c0 = c.copy()
    out = tg.sgemm(1.0, a, b, beta=1.0, c=c, overwrite_c=1)
    assert out is not c and out.dtype == np.float32
    np.testing.assert_array_equal(c, c0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_views(backend, rng, dtype):
    big_a = uniform(rng, (90, 70), dtype)
    big_b = uniform(rng, (80, 60), dtype, "F")
    big_c = uniform(rng, (100, 100), dtype)
    views = [
        (big_a[::2, 1::3], big_b[:23, ::2], big_c[3:48, 5:35]),  # no unit stride / ld > rows
        (big_a[5:50, :23], big_b[10:33, 4:34], big_c[::2, ::3][:45, :30]),
        (big_a[::-1, ::-2][:45, :23], big_b[::-1][:23, :30], big_c[50:95, 60:90]),
    ]
    for a, b, c in views:
        c_before = c.copy()
        out = ROUTINES[dtype](1.25, a, b, beta=-0.5, c=c, overwrite_c=1)
        assert out is c
        assert_gemm(c, 1.25, a, b, -0.5, c_before, dtype)
    assert np.isfinite(big_c).all()


@pytest.mark.parametrize("m,n,k", [(0, 5, 3), (5, 0, 3), (5, 3, 0), (0, 0, 0)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_sizes(backend, rng, dtype, m, n, k):
    a, b = uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype)
    out = ROUTINES[dtype](1.0, a, b)
    assert out.shape == (m, n)
    np.testing.assert_array_equal(out, np.zeros((m, n)))
    c = uniform(rng, (m, n), dtype)
    np.testing.assert_allclose(ROUTINES[dtype](1.0, a, b, beta=3.0, c=c), 3.0 * c, rtol=1e-6)


def test_inputs_are_cast(backend, rng):
    a = rng.integers(-5, 5, (6, 7))
    b = uniform(rng, (7, 3), np.float64)
    out = tg.sgemm(1.0, a, b)
    assert out.dtype == np.float32
    assert_gemm(out, 1.0, a.astype(np.float32), b.astype(np.float32), 0.0, None, np.float32)
    assert tg.dgemm(1, a.tolist(), b).dtype == np.float64


@pytest.mark.parametrize(
    "da,db,expected",
    [
        (np.float32, np.float32, np.float32),
        (np.float32, np.float64, np.float64),
        (np.int32, np.float32, np.float64),
    ],
)
def test_gemm_takes_dtype_from_inputs(backend, rng, da, db, expected):
    a, b = uniform(rng, (4, 6), np.float64).astype(da), uniform(rng, (6, 2), db)
    assert tg.gemm(1.0, a, b).dtype == expected


def test_scalars_of_numpy_types(backend, rng):
    a, b = uniform(rng, (3, 4), np.float32), uniform(rng, (4, 2), np.float32)
    c = uniform(rng, (3, 2), np.float32)
    out = tg.sgemm(np.float64(2.0), a, b, beta=np.array(0.5), c=c, trans_a=np.int64(0))
    assert_gemm(out, 2.0, a, b, 0.5, c, np.float32)


def test_same_as_scipy(backend, rng):
    blas = pytest.importorskip("scipy.linalg.blas")
    a, b = uniform(rng, (30, 20), np.float64), uniform(rng, (30, 10), np.float64)
    c = uniform(rng, (20, 10), np.float64, "F")
    ours = tg.dgemm(0.5, a, b, 2.0, c, trans_a=1)
    theirs = blas.dgemm(0.5, a, b, 2.0, c, trans_a=1)
    assert ours.flags.f_contiguous == theirs.flags.f_contiguous
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# --- matmul ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape_a,shape_b",
    [
        ((5,), (5,)),
        ((5,), (5, 3)),
        ((4, 5), (5,)),
        ((4, 5), (5, 3)),
        ((2, 4, 5), (5, 3)),
        ((4, 5), (3, 5, 2)),
        ((2, 1, 4, 5), (3, 5, 6)),
        ((0, 4, 5), (5, 2)),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_like_numpy(backend, rng, shape_a, shape_b, dtype):
    a, b = uniform(rng, shape_a, dtype), uniform(rng, shape_b, dtype)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = tg.matmul(a, b)
    assert out.shape == expected.shape and out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol * shape_a[-1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.complex64, np.float16, bool])
def test_matmul_other_dtypes_exact_numpy(backend, rng, dtype):
    a = (uniform(rng, (4, 6), np.float64) * 10).astype(dtype)
    b = (uniform(rng, (6, 3), np.float64) * 10).astype(dtype)
    out = tg.matmul(a, b)
    np.testing.assert_array_equal(out, np.matmul(a, b))
    assert out.dtype == np.matmul(a, b).dtype


def test_matmul_out(backend, rng):
    a, b = uniform(rng, (3, 4, 5), np.float32), uniform(rng, (5, 6), np.float32)
    out = np.full((3, 4, 6), np.nan, np.float64)
    assert tg.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="out"):
        tg.matmul(a, b, out=np.empty((3, 4, 7), np.float32))
