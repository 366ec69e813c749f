"""Where a call's time goes (a development aid, not a benchmark): cProfile and a breakdown of a
device-array call at 64^3, cProfile of host calls on the GPU path at 384^3 and 8192^3, and the
host-memory rates the host pipeline depends on (parallel copies into pinned memory,
first-touch writes, page-locking a NumPy array in place).

Usage: python benchmarks/profile_calls.py [--out DIR] [--rates] [--pipeline N ...]
       [--pipeline-only]
(--pipeline: the sizes whose host calls are traced, default 8192; --pipeline-only: just those.)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path

import numpy as np


def profile(label: str, work, calls: int, out: Path) -> None:
    work()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(calls):
        work()
    profiler.disable()
    per_call = (time.perf_counter() - start) / calls * 1e6
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(45)
    (out / f"profile-{label}.txt").write_text(text.getvalue())
    print(f"== {label}: {per_call:.1f} us per call under the profiler")
    print("\n".join(line[:160] for line in text.getvalue().splitlines() if line.strip()))


def rates() -> None:
    import pycuda.driver as drv

    from tunedgemm import cuda, pinned, pipeline

    cuda.context()
    nbytes = 256 << 20
    src = np.random.default_rng().uniform(-1, 1, nbytes // 4).astype(np.float32).reshape(8192, -1)
    buf = pinned.take(nbytes)
    dst = buf[:nbytes].view(np.float32).reshape(src.shape)
    for workers in (1, 4, 8, 16):
        pipeline._WORKERS = workers
        pipeline._pools.clear()
        pipeline.host_copy(dst, src)
        start = time.perf_counter()
        for _ in range(3):
            pipeline.host_copy(dst, src)
        seconds = (time.perf_counter() - start) / 3
        rate = nbytes / seconds / 1e9
        print(f"host_copy pageable -> pinned, {workers:2d} threads: {rate:.1f} GB/s")
        start = time.perf_counter()
        fresh = np.empty_like(src)
        pipeline.host_copy(fresh, dst)
        seconds = time.perf_counter() - start
        print(f"host_copy pinned -> fresh np.empty, {workers:2d} threads: "
              f"{nbytes / seconds / 1e9:.1f} GB/s")  # fmt: skip
    pinned.give(buf)
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    for _ in range(2):
        arr = np.random.default_rng().uniform(-1, 1, nbytes // 4).astype(np.float32)
        start = time.perf_counter()
        ptr = ctypes.c_void_p(arr.ctypes.data)
        code = lib.cuMemHostRegister_v2(ptr, ctypes.c_size_t(nbytes), 0)
        mid = time.perf_counter()
        lib.cuMemHostUnregister(ctypes.c_void_p(arr.ctypes.data))
        end = time.perf_counter()
        print(f"register 256 MB: {(mid - start) * 1e3:.1f} ms (code {code}), "
              f"unregister {(end - mid) * 1e3:.1f} ms")  # fmt: skip
    del drv
    print(f"os.cpu_count() = {os.cpu_count()}")


def small_breakdown() -> None:
    """Per-call microseconds of the pieces of a 384^3 host call on the GPU path."""
    import pycuda.driver as drv

    from tunedgemm import pipeline
    from tunedgemm._args import normalise

    a = np.random.default_rng().uniform(-1, 1, (384, 384)).astype(np.float32)

    def timed(label: str, work) -> None:
        work()
        start = time.perf_counter()
        for _ in range(200):
            work()
        print(f"{label}: {(time.perf_counter() - start) / 200 * 1e6:.1f} us")

    timed("mem_get_info", drv.mem_get_info)
    timed("normalise", lambda: normalise(1.0, a, a, 0.0, None, 0, 0, 0, np.float32))
    timed("np.empty F + touch", lambda: np.empty((384, 384), np.float32, order="F").fill(0))
    problem = normalise(1.0, a, a, 0.0, None, 0, 0, 0, np.float32)
    from tunedgemm.gpu_backend import tile_launcher

    launcher = tile_launcher(problem.dtype)
    timed("pipeline.gemm, budget given", lambda: pipeline.gemm(problem, launcher, budget=1 << 34))
    timed("pipeline.gemm, budget queried", lambda: pipeline.gemm(problem, launcher))
    stream = drv.Stream()
    timed("stream.synchronize (idle)", stream.synchronize)
    timed("Event()+record+synchronize", lambda: drv.Event().record(stream).synchronize())


def device_breakdown(da, db, dc) -> None:
    """Per-call microseconds of the pieces of a 64^3 call on CuPy arrays, beside the whole."""
    import cupy

    import tunedgemm as tg
    from tunedgemm import cuda, gpu_backend, reference, selection
    from tunedgemm._args import normalise
    from tunedgemm._layout import blas_form

    sync = cupy.cuda.Device().synchronize

    def timed(label: str, work, calls: int = 2000) -> None:
        work()
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            work()
        sync()
        print(f"{label}: {(time.perf_counter() - start) / calls * 1e6:.2f} us")

    problem = normalise(1.0, da, db, 0.0, dc, 0, 0, 1, np.float32)
    form = blas_form(problem.a, problem.b, problem.out)  # type: ignore[arg-type]
    handle, cublas = reference._handle(), reference._cublas()
    ptrs = (da.data.ptr, db.data.ptr, dc.data.ptr)
    timed("whole sgemm into c", lambda: tg.sgemm(1.0, da, db, 0.0, dc, overwrite_c=1))
    timed("whole sgemm, new result", lambda: tg.sgemm(1.0, da, db))
    timed("cupy.empty F-ordered", lambda: cupy.empty((64, 64), np.float32, order="F"))
    timed("normalise (new result)", lambda: normalise(1.0, da, db, 0.0, None, 0, 0, 0,
                                                      np.float32))  # fmt: skip
    fresh = normalise(1.0, da, db, 0.0, None, 0, 0, 0, np.float32)
    timed("gemm_into (new result)", lambda: gpu_backend.gemm_into(fresh))
    timed("cupy __cuda_array_interface__", lambda: da.__cuda_array_interface__)
    timed("normalise (3 CuPy arrays)", lambda: normalise(1.0, da, db, 0.0, dc, 0, 0, 1,
                                                         np.float32))  # fmt: skip
    timed("cuda.context", cuda.context)
    timed("selection.choose", lambda: selection.choose("float32", 64, 64, 64))
    timed("reference.gemm", lambda: reference.gemm(form, np.dtype(np.float32), 1.0, 0.0, None))
    timed("skcuda cublasSgemm", lambda: cublas.cublasSgemm(handle, "n", "n", 64, 64, 64, 1.0,
                                                           ptrs[0], 64, ptrs[1], 64, 0.0,
                                                           ptrs[2], 64))  # fmt: skip
    timed("cupy a @ b", lambda: da @ db)


def pipeline_variants(size: int = 8192) -> None:
    """size^3 float32 host calls: the default, into a pre-touched c, other tile and thread
    counts; then a trace of host work in one default call."""
    import tunedgemm as tg
    from tunedgemm import pipeline

    print(f"# host calls at {size}^3 float32")
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    c = np.ones((size, size), np.float32, order="F")

    def timed(label: str, work) -> None:
        work()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        print(f"{label}: {sorted(times)[1] * 1e3:.1f} ms")

    import cupy

    timed("cupy plain path", lambda: cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b)))
    timed("default", lambda: tg.sgemm(1.0, a, b))
    timed("into pre-touched c", lambda: tg.sgemm(1.0, a, b, 0.0, c, overwrite_c=1))
    panel, max_panels = pipeline.PANEL, pipeline.MAX_PANELS
    for panels in (1, 4):  # C tiles per dimension (the default is MAX_PANELS)
        pipeline.PANEL, pipeline.MAX_PANELS = max(size // panels, pipeline.QUANTUM), panels
        timed(f"{panels} x {panels} tiles", lambda: tg.sgemm(1.0, a, b))
    pipeline.PANEL, pipeline.MAX_PANELS = panel, max_panels
    workers = pipeline._WORKERS
    pipeline._WORKERS = 8
    pipeline._pools.clear()
    timed("8 copy threads", lambda: tg.sgemm(1.0, a, b))
    pipeline._WORKERS = workers
    pipeline._pools.clear()
    pipeline.TRACE = []
    start = time.perf_counter()
    tg.sgemm(1.0, a, b)
    total = time.perf_counter() - start
    spans = sorted(pipeline.TRACE, key=lambda span: span[1])
    pipeline.TRACE = None
    print(f"trace of one call, {total * 1e3:.1f} ms (start ms, duration ms, what):")
    for what, t0, t1 in spans:
        print(f"  {(t0 - start) * 1e3:7.2f} {(t1 - t0) * 1e3:6.2f}  {what}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--rates", action="store_true", help="also host copy and pinning rates")
    parser.add_argument("--pipeline", type=int, nargs="+", default=[8192])
    parser.add_argument("--pipeline-only", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.pipeline_only:
        os.environ["TUNEDGEMM_BACKEND"] = "gpu"
        for size in args.pipeline:
            pipeline_variants(size)
        return 0
    import cupy

    import tunedgemm as tg

    rng = np.random.default_rng()
    da = cupy.asarray(rng.uniform(-1, 1, (64, 64)).astype(np.float32))
    db = cupy.asarray(rng.uniform(-1, 1, (64, 64)).astype(np.float32))
    dc = cupy.empty((64, 64), np.float32)
    profile("device64", lambda: tg.sgemm(1.0, da, db, 0.0, dc, overwrite_c=1), 2000, out)
    profile("device64-new", lambda: tg.sgemm(1.0, da, db), 2000, out)
    device_breakdown(da, db, dc)
    os.environ["TUNEDGEMM_BACKEND"] = "gpu"
    a = rng.uniform(-1, 1, (384, 384)).astype(np.float32)
    profile("host384", lambda: tg.sgemm(1.0, a, a), 300, out)
    big = rng.uniform(-1, 1, (8192, 8192)).astype(np.float32)
    profile("host8192", lambda: tg.sgemm(1.0, big, big), 3, out)

    small_breakdown()
    for size in args.pipeline:
        pipeline_variants(size)
    if args.rates:
        rates()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
