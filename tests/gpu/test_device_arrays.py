"""Device inputs (PyCUDA GPUArray, CuPy, PyTorch) are used in place and give device results."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_gemm

import tunedgemm as tg

pytestmark = pytest.mark.gpu


def to_kind(kind: str, x: np.ndarray):
    if kind == "pycuda":
        import pycuda.gpuarray as gpuarray

        return gpuarray.to_gpu(x)
    if kind == "cupy":
        cupy = pytest.importorskip("cupy")
        return cupy.asarray(x, order="F" if x.flags.f_contiguous else "C")
    torch = pytest.importorskip("torch")
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def to_host(kind: str, x) -> np.ndarray:
    if kind == "pycuda":
        return x.get()
    if kind == "cupy":
        return x.get()
    return x.cpu().numpy()


def _refill(kind: str, x, values: np.ndarray):
    """x with new values written into its own memory (same address, same layout)."""
    if kind == "torch":
        import torch

        x.copy_(torch.from_numpy(np.ascontiguousarray(values)))
    else:
        x.set(np.ascontiguousarray(values))
    return x


KINDS = ["pycuda", "cupy", "torch"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_on_device_arrays(kind, dtype, trans_a, trans_b):
    rng = np.random.default_rng()
    m, n, k = 70, 45, 33
    a = rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(dtype)
    da, db = to_kind(kind, a), to_kind(kind, b)
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    out = routine(1.5, da, db, trans_a=trans_a, trans_b=trans_b)
    assert type(out).__module__.split(".")[0] == type(da).__module__.split(".")[0]
    assert_gemm(
        to_host(kind, out), 1.5, a.T if trans_a else a, b.T if trans_b else b, 0.0, None, dtype
    )


@pytest.mark.parametrize("kind", KINDS)
def test_overwrite_device_c_in_place(kind):
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (40, 30)).astype(np.float32)
    b = rng.uniform(-1, 1, (30, 20)).astype(np.float32)
    c = rng.uniform(-1, 1, (40, 20)).astype(np.float32)
    da, db, dc = to_kind(kind, a), to_kind(kind, b), to_kind(kind, c)
    out = tg.sgemm(1.0, da, db, beta=2.0, c=dc, overwrite_c=1)
    assert out is dc
    assert_gemm(to_host(kind, dc), 1.0, a, b, 2.0, c, np.float32)


@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_strided_and_cast_device_inputs(kind):
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (80, 60))
    b = rng.uniform(-1, 1, (60, 50))
    da, db = to_kind(kind, a), to_kind(kind, b)
    out = tg.sgemm(1.0, da[::2, ::3], db[::3, 1::2])  # float64 in, no unit stride
    assert_gemm(
        to_host(kind, out),
        1.0,
        a[::2, ::3].astype(np.float32),
        b[::3, 1::2].astype(np.float32),
        0.0,
        None,
        np.float32,
    )


def test_device_matmul_keeps_kind():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (33, 17)).astype(np.float32)
    b = rng.uniform(-1, 1, (17, 9)).astype(np.float32)
    out = tg.matmul(cupy.asarray(a), cupy.asarray(b))
    assert isinstance(out, cupy.ndarray)
    assert_gemm(out.get(), 1.0, a, b, 0.0, None, np.float32)


def test_mixed_host_and_device_operands():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (12, 8)).astype(np.float32)
    b = rng.uniform(-1, 1, (8, 5)).astype(np.float32)
    out = tg.sgemm(1.0, a, cupy.asarray(b))
    assert isinstance(out, cupy.ndarray)
    assert_gemm(out.get(), 1.0, a, b, 0.0, None, np.float32)


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_calls_into_new_results_give_new_right_arrays(kind):
    """Calls without c on the same operands repeat their launch into a new result each time
    (their plan, tunedgemm/plans.py): each result is its own array, of the operands' kind,
    F-ordered, and holds the product of the values the operands had at that call."""
    rng = np.random.default_rng()
    for dtype in (np.float32, np.float64):
        a_host = rng.uniform(-1, 1, (96, 80)).astype(dtype)
        b_host = rng.uniform(-1, 1, (80, 72)).astype(dtype)
        a, b = to_kind(kind, a_host), to_kind(kind, b_host)
        results, expected = [], []
        for step in range(3):
            results.append(tg.gemm(0.75, a, b))
            expected.append(to_host(kind, a))
            a_host = a_host * (step + 1.5)
            a = to_kind(kind, a_host) if step % 2 else _refill(kind, a, a_host)
        assert len({id(r) for r in results}) == 3
        for result, a_then in zip(results, expected, strict=True):
            assert type(result) is type(a) and tuple(result.shape) == (96, 72)
            if kind == "torch":  # made from the operand (Tensor.new_empty_strided): only F-order
                assert result.stride() == (1, 96) and result.dtype == a.dtype
                assert result.device == a.device and not result.requires_grad
            assert_gemm(to_host(kind, result), 0.75, a_then, b_host, 0.0, None, dtype)


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_in_place_calls_follow_new_values_and_views(kind):
    """In-place calls on the same buffers repeat their launch (their plan, tunedgemm/plans.py):
    new values must be read each time, and a view of the same memory in another layout is a
    new call."""
    rng = np.random.default_rng()
    for dtype in (np.float32, np.float64):
        a_host = rng.uniform(-1, 1, (96, 80)).astype(dtype)
        b_host = rng.uniform(-1, 1, (80, 96)).astype(dtype)
        c = to_kind(kind, np.full((96, 96), np.nan, dtype))
        for step in range(3):
            a_host = a_host * (step + 1.5)
            a = to_kind(kind, a_host)
            b = to_kind(kind, b_host)
            assert tg.gemm(-0.5, a, b, 0.0, c, overwrite_c=1) is c
            assert_gemm(to_host(kind, c), -0.5, a_host, b_host, 0.0, None, dtype)
            c_before = to_host(kind, c)
            # Same memory as a and b, transposed: op(a.T) = a_host.T is 80x96.
            square_init = rng.uniform(-1, 1, (96, 96)).astype(dtype)
            square = to_kind(kind, square_init)
            tg.gemm(1.0, b, a, 2.0, square, trans_a=1, trans_b=1, overwrite_c=1)
            assert_gemm(to_host(kind, square), 1.0, b_host.T, a_host.T, 2.0, square_init, dtype)
            np.testing.assert_array_equal(to_host(kind, c), c_before)
