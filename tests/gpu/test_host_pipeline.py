"""Host operands through the pinned, tiled pipeline (overlapped and out of core), concurrent
calls from several threads, and device calls ordered on the caller's stream."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import pipeline
from tunedgemm._args import normalise

pytestmark = pytest.mark.gpu


def run_pipeline(rng, dtype, shape, trans, order_ab, out_order, beta, budget):
    """One host problem through pipeline.gemm; returns the plan it ran."""
    m, n, k = shape
    a = uniform(rng, (k, m) if trans[0] else (m, k), dtype, order_ab)
    b = uniform(rng, (n, k) if trans[1] else (k, n), dtype, order_ab)
    c = uniform(rng, (m, n), dtype, out_order)
    c0 = c.copy()
    if beta == 0.0:
        c[...] = np.nan  # unwritten elements show; beta == 0 must never read them
    problem = normalise(0.75, a, b, beta, c, trans[0], trans[1], 1, dtype)
    assert problem.result is c
    from tunedgemm.gpu_backend import tile_launcher

    plan = pipeline.gemm(problem, tile_launcher(problem.dtype), budget=budget)
    op_a = a.T if trans[0] else a
    op_b = b.T if trans[1] else b
    assert_gemm(c, 0.75, op_a, op_b, beta, c0 if beta else None, dtype)
    return plan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("order_ab,out_order", [("C", "F"), ("F", "C"), ("C", "C")])
@pytest.mark.parametrize("beta", [0.0, -1.5])
def test_tiled_pipeline(small_tiles, rng, dtype, trans, order_ab, out_order, beta):
    plan = run_pipeline(rng, dtype, (700, 601, 333), trans, order_ab, out_order, beta, 1 << 30)
    assert plan.tiles == 4 and not plan.out_of_core  # 2 x 2 tiles of 512 (256-wide panels)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans", [(0, 0), (1, 1)])
@pytest.mark.parametrize("order_ab,out_order", [("C", "F"), ("F", "C")])
@pytest.mark.parametrize("beta", [0.0, -1.5])
def test_blocks_staged_in_segments(small_tiles, rng, monkeypatch, dtype, trans, order_ab,
                                   out_order, beta):  # fmt: skip
    """Staging buffers far smaller than a block: every block goes up, and every C tile comes
    down, in several segments through the pinned ring (large problems do so at 128 MiB)."""
    monkeypatch.setattr(pipeline, "STAGE_BYTES", 40_000)  # a few dozen lines of a block
    plan = run_pipeline(rng, dtype, (700, 601, 333), trans, order_ab, out_order, beta, 1 << 30)
    assert plan.tiles == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_out_of_core_pipeline(small_tiles, rng, dtype, beta):
    itemsize = np.dtype(dtype).itemsize
    budget = pipeline.device_bytes(900, 800, 1500, 256, 256, 512, False, itemsize)
    plan = run_pipeline(rng, dtype, (900, 800, 1500), (0, 1), "C", "F", beta, budget)
    assert plan.out_of_core and plan.device_bytes <= budget


def test_device_memory_variable_bounds_a_call(small_tiles, rng, monkeypatch):
    monkeypatch.setenv(pipeline.DEVICE_MEMORY_ENV, "6M")
    a, b = uniform(rng, (1024, 1536), np.float32), uniform(rng, (1536, 1024), np.float32)
    assert_gemm(tg.sgemm(1.0, a, b), 1.0, a, b, 0.0, None, np.float32)
    monkeypatch.setenv(pipeline.DEVICE_MEMORY_ENV, "64K")
    with pytest.raises(MemoryError, match="smallest tiles"):
        tg.sgemm(1.0, a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("out_order", ["F", "C"])
def test_unaligned_host_shapes_on_the_default_plan(rng, monkeypatch, dtype, out_order):
    """Single-tile problems (the lean path) and one multi-tile problem, beta zero or not."""
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    for m, n, k in ((1, 1, 1), (3, 5, 7), (257, 129, 65), (2049, 1023, 999), (4099, 2051, 1031)):
        a, b = uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype, "F")
        assert_gemm(tg.gemm(1.0, a, b), 1.0, a, b, 0.0, None, dtype)
        c = uniform(rng, (m, n), dtype, out_order)
        c0 = c.copy()
        assert tg.gemm(-0.5, a, b, 0.25, c, overwrite_c=1) is c
        assert_gemm(c, -0.5, a, b, 0.25, c0, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("trans", [(0, 0), (1, 1)])
def test_new_results_come_straight_down_into_pinned_memory(rng, monkeypatch, dtype, tiled, trans):
    """A new host result lies in pooled pinned memory and the product is copied straight into
    it (2-D copies from the padded device tiles). Each shape runs twice: the first result is
    filled with NaN and dropped, so the second gets its buffer back and unwritten elements
    show."""
    from tunedgemm import pinned

    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    if tiled:
        monkeypatch.setattr(pipeline, "SINGLE_TILE_BYTES", 0)
        monkeypatch.setattr(pipeline, "PANEL", 256)
    for m, n, k in ((1, 1, 1), (3, 5, 7), (4, 1, 5), (1, 6, 5), (257, 129, 65), (700, 601, 333)):
        a = uniform(rng, (k, m) if trans[0] else (m, k), dtype)
        b = uniform(rng, (n, k) if trans[1] else (k, n), dtype)
        first = tg.gemm(1.0, a, b, trans_a=trans[0], trans_b=trans[1])
        lease = pinned.lease_of(first)
        assert lease is not None, "a new host result should lie in pinned memory"
        address = first.ctypes.data
        first[...] = np.nan
        del first, lease
        again = tg.gemm(-0.5, a, b, trans_a=trans[0], trans_b=trans[1])
        assert type(again) is np.ndarray and again.flags.f_contiguous and again.shape == (m, n)
        assert again.ctypes.data == address  # the NaN-filled buffer, back from the pool
        op_a, op_b = (a.T if trans[0] else a), (b.T if trans[1] else b)
        assert_gemm(again, -0.5, op_a, op_b, 0.0, None, dtype)
        # A pinned result given back as c (overwritten) comes straight down too.
        c0 = again.copy()
        assert tg.gemm(1.0, op_a, op_b, 2.0, again, overwrite_c=1) is again
        assert_gemm(again, 1.0, op_a, op_b, 2.0, c0, dtype)
    product = tg.matmul(uniform(rng, (700, 333), dtype), uniform(rng, (333, 601), dtype))
    assert pinned.lease_of(product) is not None and product.flags.c_contiguous
    for shape_a, shape_b in (((4, 5), (5,)), ((5,), (5, 3)), ((2, 4, 5), (5, 1))):
        a, b = uniform(rng, shape_a, dtype), uniform(rng, shape_b, dtype)
        expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(tg.matmul(a, b), expected, rtol=1e-4, atol=1e-5)


def test_concurrent_calls_from_threads(rng, monkeypatch):
    """Eight threads, host and device calls at once. The float64 reference checks run on the
    main thread afterwards: NumPy's BLAS (OpenBLAS) aborts when too many threads call it at
    once, which is its limit, not tunedgemm's."""
    cupy = pytest.importorskip("cupy")
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")  # small products too: no NumPy in workers
    errors: list[str] = []
    results: list[tuple] = []
    seeds = np.random.SeedSequence().spawn(8)

    def worker(index: int) -> None:
        local = np.random.default_rng(seeds[index])
        dtype = (np.float32, np.float64)[index % 2]
        try:
            for size in (96, 700, 3000):
                a = uniform(local, (size, size + 3), dtype)
                b = uniform(local, (size + 3, 77 * (index + 1)), dtype)
                c = uniform(local, (size, b.shape[1]), dtype)
                host = tg.gemm(0.5, a, b, 2.0, c)
                stream = cupy.cuda.Stream(non_blocking=True)
                with stream:
                    da, db = cupy.asarray(a), cupy.asarray(b)
                    device = tg.gemm(0.5, da, db, stream=stream)
                    result = cupy.asnumpy(device, stream=stream)
                stream.synchronize()
                results.append((a, b, c, host, result, dtype))
        except Exception as exc:  # reported on the main thread
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    # CuPy compiles its own kernels on first use and that is not safe from several threads
    # at once: warm up the ones the workers use here first.
    for dtype in (np.float32, np.float64):
        cupy.asnumpy(cupy.asarray(np.ones((3, 2), dtype, order="F")))
        cupy.asnumpy(tg.gemm(1.0, cupy.ones((3, 2), dtype), cupy.ones((2, 4), dtype)))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, "\n".join(errors)
    assert len(results) == 8 * 3
    for a, b, c, host, device, dtype in results:
        assert_gemm(host, 0.5, a, b, 2.0, c, dtype)
        assert_gemm(device, 0.5, a, b, 0.0, None, dtype)


def _slow_fill(cupy, x, value):
    """Work that keeps a stream busy long enough that unordered reads would see old values."""
    for _ in range(20):
        x *= 1.0000001
    x[...] = value


@pytest.mark.parametrize("kind", ["cupy", "torch", "pycuda"])
def test_result_is_ordered_on_the_callers_stream(rng, kind):
    cupy = pytest.importorskip("cupy")
    m, n, k = 1024, 768, 2048
    a, b = uniform(rng, (m, k), np.float32), uniform(rng, (k, n), np.float32)
    if kind == "cupy":
        stream = cupy.cuda.Stream(non_blocking=True)
        handle = stream.ptr
    elif kind == "torch":
        torch = pytest.importorskip("torch")
        stream = torch.cuda.Stream()
        handle = stream.cuda_stream
    else:
        import pycuda.driver as drv

        tg.info()
        stream = drv.Stream(flags=1)  # non-blocking: nothing orders it but the call
        handle = stream.handle
    with warnings.catch_warnings():  # CuPy 14 deprecates it; the raw handle is the point here
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = cupy.cuda.ExternalStream(handle)
    with theirs:
        da = cupy.full((m, k), np.nan, np.float32)
        db = cupy.asarray(b)
        dc = cupy.full((m, n), np.nan, np.float32)
        _slow_fill(cupy, da, 0.0)
        da[...] = cupy.asarray(a)  # queued on their stream, after slow work
        out = tg.sgemm(1.0, da, db, 0.0, dc, overwrite_c=1, stream=stream)
        result = cupy.asnumpy(out, stream=theirs)  # also queued on their stream
    theirs.synchronize()
    assert out is dc
    assert_gemm(result, 1.0, a, b, 0.0, None, np.float32)


def test_operands_wait_for_their_producer_stream(rng):
    cupy = pytest.importorskip("cupy")
    m, n, k = 1024, 512, 1536
    a, b = uniform(rng, (m, k), np.float64), uniform(rng, (k, n), np.float64)
    producer = cupy.cuda.Stream(non_blocking=True)
    with producer:
        da = cupy.full((m, k), np.nan)
        _slow_fill(cupy, da, 0.0)
        da[...] = cupy.asarray(a)
        db = cupy.asarray(b)
        assert da.__cuda_array_interface__.get("stream") == producer.ptr
    out = tg.dgemm(1.0, da, db)  # default stream; must wait for the producer's work
    assert_gemm(cupy.asnumpy(out), 1.0, a, b, 0.0, None, np.float64)


def test_small_host_calls_run_on_numpy_in_auto_mode(rng, monkeypatch):
    from tunedgemm import gpu_backend

    monkeypatch.setenv("TUNEDGEMM_BACKEND", "auto")

    def refuse(*args, **kwargs):
        raise AssertionError("a call below the crossover reached the GPU")

    monkeypatch.setattr(gpu_backend, "gemm_into", refuse)
    a, b = uniform(rng, (64, 64), np.float32), uniform(rng, (64, 64), np.float32)
    assert_gemm(tg.sgemm(1.0, a, b), 1.0, a, b, 0.0, None, np.float32)
    assert_gemm(tg.matmul(a, b), 1.0, a, b, 0.0, None, np.float32)
    big = uniform(rng, (2048, 2048), np.float32)
    with pytest.raises(AssertionError, match="crossover"):
        tg.sgemm(1.0, big, big)
