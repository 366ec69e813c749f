"""NumPy in, NumPy out: what a user of tunedgemm feels, against NumPy and CuPy in the same run.

Usage: python benchmarks/bench_host.py [--sizes 1024 2048 4096 8192] [--out DIR] [--quick]

1. Host-to-host sgemm/dgemm on square C-ordered NumPy arrays: tunedgemm, NumPy (`a @ b`) and
   CuPy's plain path (`cp.asnumpy(cp.asarray(a) @ cp.asarray(b))`), wall-clock medians (the
   host copies are part of what is measured). Beside them, the floor of the overlapped
   pipeline: max(pinned transfer time, kernel time), the transfers timed with CUDA events
   on pinned buffers and the kernel with CUDA events on device operands, in this run.
2. Small squares (1 to 512): tunedgemm (whose crossover sends small calls to NumPy) against
   NumPy, median per-call time over loops of calls timed in turns (see small_sweep).
3. Per-call overhead on device arrays at 64^3: tunedgemm on CuPy arrays against
   cublasSgemm through scikit-cuda on the same pointers: calls queued back to back, wall
   time per call (median over rounds timed in turns); at this size the host side is the
   whole cost.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tunedgemm.timing import wall_median_ms

SMALL = (1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 320, 384, 448, 512)


def pinned_bandwidth(nbytes: int = 256 << 20) -> tuple[float, float]:
    """(host-to-device, device-to-host) GB/s from pinned memory, CUDA-event medians."""
    import pycuda.driver as drv

    from tunedgemm import cuda, pinned

    cuda.context()
    host = pinned.take(nbytes)
    dev = cuda.allocate(nbytes)
    start, stop = drv.Event(), drv.Event()
    rates = []
    for copy in (lambda: drv.memcpy_htod_async(int(dev), host[:nbytes]),
                 lambda: drv.memcpy_dtoh_async(host[:nbytes], int(dev))):  # fmt: skip
        times = []
        for _ in range(6):
            start.record()
            copy()
            stop.record()
            stop.synchronize()
            times.append(stop.time_since(start))
        rates.append(nbytes / statistics.median(times[1:]) / 1e6)
    pinned.give(host)
    return rates[0], rates[1]


def kernel_ms(size: int, dtype: Any) -> tuple[float, float]:
    """(tunedgemm's choice, cuBLAS) CUDA-event median ms on device operands of size^3."""
    from tunedgemm import gpu_backend, gpu_problem, reference
    from tunedgemm.timing import gpu_median_ms

    problem = gpu_problem.make(size, size, size, dtype)
    ours = gpu_median_ms(lambda: gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0))
    theirs = gpu_median_ms(lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0))
    return ours, theirs


def settle(seconds: float = 0.3) -> None:
    """Let BLAS threads go idle. OpenBLAS's threads spin for a while after each product; on
    the 16 cores they share, a host call timed right after a NumPy product (or a SciPy one:
    SciPy brings its own OpenBLAS and threads) found its copy threads starved: 4096^2 sgemm
    took 19.6 ms in bench_host against 9.9 ms in profile_calls on the same machine
    (2026-11-23), and small products timed beside SciPy's took 16 ms instead of 0.1."""
    time.sleep(seconds)


def squares(sizes: Any, rng: np.random.Generator) -> Any:
    """(dtype, sgemm or dgemm, n, a, b) for float32 then float64 and every n: fresh operands."""
    import tunedgemm as tg

    for dtype in (np.float32, np.float64):
        routine = tg.sgemm if dtype == np.float32 else tg.dgemm
        for size in sizes:
            a = rng.uniform(-1, 1, (size, size)).astype(dtype)
            b = rng.uniform(-1, 1, (size, size)).astype(dtype)
            yield dtype, routine, size, a, b


def host_to_host(sizes: list[int], bandwidth: tuple[float, float]) -> list[dict[str, Any]]:
    import cupy

    rows = []
    rng = np.random.default_rng()
    for dtype, routine, size, a, b in squares(sizes, rng):
        reps = 5 if size <= 4096 else 3
        check = routine(1.0, a, b)
        rows_checked = rng.choice(size, 32, replace=False)
        error = float(np.abs(check[rows_checked] - a[rows_checked].astype(np.float64) @ b)
                      .max())  # fmt: skip
        del check  # (its pinned buffer goes back for the timed calls)
        numpy_ms = wall_median_ms(lambda: a @ b, reps=reps)  # noqa: B023
        settle()
        ours = wall_median_ms(lambda: routine(1.0, a, b), reps=reps)  # noqa: B023
        plain = lambda: cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b))  # noqa: B023, E731
        cupy_ms = wall_median_ms(plain, reps=reps)
        kernel, cublas = kernel_ms(size, dtype)
        nbytes = a.nbytes
        transfer = 2 * nbytes / bandwidth[0] / 1e6 + nbytes / bandwidth[1] / 1e6
        floor = max(transfer, kernel)
        rows.append({"dtype": np.dtype(dtype).name, "n": size, "tunedgemm_ms": ours,
                     "numpy_ms": numpy_ms, "cupy_ms": cupy_ms, "kernel_ms": kernel,
                     "cublas_kernel_ms": cublas, "pinned_transfer_ms": transfer,
                     "floor_ms": floor, "max_abs_error_rows": error})  # fmt: skip
        r = rows[-1]
        print(f"{r['dtype']:8} {size:6d} {ours:10.2f} {numpy_ms:10.2f} {cupy_ms:10.2f} "
              f"{ours / cupy_ms:9.2f} {transfer:9.2f} {kernel:9.2f} {ours / floor:9.2f}",
              flush=True)  # fmt: skip
    return rows


def interleaved_us(works: dict[str, Callable[[], Any]], sync: Callable[[], Any] = lambda: None,
                   rounds: int = 9, target_s: float = 0.005) -> dict[str, float]:  # fmt: skip
    """Median microseconds per call of each work, in loops of calls sized to last about
    target_s, timed in turns (one loop of each per round, the order rotated every round) so
    that a drift of the machine's speed falls on all of them alike and no work always follows
    the same one. `sync` waits for queued device work after each loop."""
    counts = {}
    for name, work in works.items():
        work()
        sync()
        start = time.perf_counter()
        work()
        sync()
        counts[name] = max(1, min(20000, int(target_s / max(time.perf_counter() - start, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in works}
    names = list(works)
    for turn in range(rounds):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            work, count = works[name], counts[name]
            start = time.perf_counter()
            for _ in range(count):
                work()
            sync()
            samples[name].append((time.perf_counter() - start) / count * 1e6)
    return {name: statistics.median(times) for name, times in samples.items()}


def small_sweep() -> list[dict[str, Any]]:
    """tunedgemm's routines on small squares against NumPy computing the same: `matmul`
    against `a @ b` (both C-ordered), sgemm/dgemm against `a @ b` and against NumPy making
    sgemm's Fortran-ordered result (`(b.T @ a.T).T`), and against SciPy's BLAS wrapper (the
    routine sgemm stands in for) where SciPy is installed."""
    import tunedgemm as tg
    from tunedgemm import crossover

    try:
        from scipy.linalg import blas as scipy_blas
    except ImportError:
        scipy_blas = None
    rows = []
    rng = np.random.default_rng()
    for dtype, routine, size, a, b in squares(SMALL, rng):
        works = {
            "tunedgemm": lambda: routine(1.0, a, b),  # noqa: B023
            "tunedgemm_matmul": lambda: tg.matmul(a, b),  # noqa: B023
            "numpy": lambda: a @ b,  # noqa: B023
            "numpy_f_order": lambda: (b.T @ a.T).T,  # noqa: B023
        }
        # Many short turns: with 9 rounds of 5 ms loops, the medians from n = 64 up (products
        # on 16 OpenBLAS threads) moved 10-20% from run to run, more than the floor judged.
        us = interleaved_us(works, rounds=200, target_s=0.0005)
        if scipy_blas is not None:  # timed apart, then left to settle (see settle())
            scipy_routine = scipy_blas.sgemm if dtype == np.float32 else scipy_blas.dgemm
            us.update(interleaved_us({"scipy": lambda: scipy_routine(1.0, a, b)}))  # noqa: B023
            settle()
        ran = "numpy" if crossover.for_call(np.dtype(dtype), size, size, size) else "gpu"
        row: dict[str, Any] = {"dtype": np.dtype(dtype).name, "n": size, "ran_on": ran}
        row.update({f"{name}_us": value for name, value in us.items()})
        row["ratio"] = us["tunedgemm"] / us["numpy"]
        row["matmul_ratio"] = us["tunedgemm_matmul"] / us["numpy"]
        row["ratio_same_layout"] = us["tunedgemm"] / us["numpy_f_order"]
        if "scipy" in us:
            row["ratio_scipy"] = us["tunedgemm"] / us["scipy"]
        rows.append(row)
        scipy_text = f"{row['ratio_scipy']:9.2f}" if "scipy" in us else f"{'-':>9}"
        print(f"{row['dtype']:8} {size:6d} {us['tunedgemm']:9.2f} {us['tunedgemm_matmul']:9.2f} "
              f"{us['numpy']:9.2f} {us['numpy_f_order']:9.2f} {row['matmul_ratio']:9.2f} "
              f"{row['ratio']:9.2f} {row['ratio_same_layout']:9.2f} {scipy_text} {ran:>6}",
              flush=True)  # fmt: skip
    return rows


def device_overhead(size: int = 64) -> dict[str, Any]:
    import cupy

    import tunedgemm as tg
    from tunedgemm import autotune, reference, selection

    rng = np.random.default_rng()
    da = cupy.asarray(rng.uniform(-1, 1, (size, size)).astype(np.float32), order="F")
    db = cupy.asarray(rng.uniform(-1, 1, (size, size)).astype(np.float32), order="F")
    dc = cupy.empty((size, size), np.float32, order="F")
    cublas, handle = reference._cublas(), reference._handle()
    reference.set_stream(None)
    ptrs = (da.data.ptr, db.data.ptr, dc.data.ptr)
    sync = cupy.cuda.Device().synchronize

    def skcuda_call() -> None:
        cublas.cublasSgemm(handle, "n", "n", size, size, size, 1.0, ptrs[0], size, ptrs[1],
                           size, 0.0, ptrs[2], size)  # fmt: skip

    def into_c() -> None:
        tg.sgemm(1.0, da, db, 0.0, dc, overwrite_c=1)

    # In turns: on the lent machines a call's host cost drifts by 2x within a minute.
    works = {"skcuda_cublas_us": skcuda_call, "tunedgemm_into_c_us": into_c,
             "tunedgemm_new_out_us": lambda: tg.sgemm(1.0, da, db)}  # fmt: skip
    timed = interleaved_us(works, sync)
    result: dict[str, Any] = {
        **timed,
        "choice": str(selection.choose("float32", size, size, size).config),
        # What refinement timed at this shape (per call: GPU, or queueing where longer) and
        # what runs: the table's choice above is only its starting point.
        "refined": [r for r in autotune.history() if r["shape"][1:4] == (size, size, size)],
    }
    import os

    os.environ[selection.CUBLAS_ENV] = "0"
    result["tunedgemm_own_kernel_into_c_us"] = interleaved_us({"own": into_c}, sync)["own"]
    del os.environ[selection.CUBLAS_ENV]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    from tunedgemm import cuda

    if not cuda.status()[0]:
        print(f"bench_host: needs a GPU ({cuda.status()[1]})")
        return 1
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {cuda.device().name()}, {date}")
    bandwidth = pinned_bandwidth()
    print(f"pinned copies: {bandwidth[0]:.1f} GB/s to the device, {bandwidth[1]:.1f} back")
    print(f"{'dtype':8} {'n':>6} {'tg ms':>10} {'NumPy ms':>10} {'CuPy ms':>10} {'tg/CuPy':>9} "
          f"{'xfer ms':>9} {'kern ms':>9} {'tg/floor':>9}")  # fmt: skip
    record: dict[str, Any] = {"device": cuda.device().name(), "date": date,
                              "command": " ".join(sys.argv), "pinned_gb_s": bandwidth}  # fmt: skip
    record["host_to_host"] = host_to_host(args.sizes, bandwidth)
    from tunedgemm import _small_host

    record["small_host_route"] = "C" if _small_host.NATIVE else "Python"
    print(
        f"small squares (short route in {record['small_host_route']}), us per call; ratios: "
        "matmul / a@b, sgemm / a@b, sgemm / NumPy's F-ordered a@b, sgemm / SciPy's sgemm"
    )
    print(f"{'dtype':8} {'n':>6} {'sgemm':>9} {'matmul':>9} {'a@b':>9} {'a@b F':>9} "
          f"{'mm/np':>9} {'sg/np':>9} {'sg/npF':>9} {'sg/scipy':>9} {'ran':>6}")  # fmt: skip
    record["small"] = small_sweep()
    record["device_overhead_64"] = overhead = device_overhead()
    shown = (f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in overhead.items()
             if k != "refined")  # fmt: skip
    print("per call on CuPy arrays at 64^3 (us): " + ", ".join(shown))
    for refined in overhead["refined"]:
        pairs = zip(refined["candidates"], refined["ms"], strict=True)
        timed = ", ".join(f"{c[:40]} {ms * 1e3:.1f}" for c, ms in pairs)
        print(f"  refined {refined['shape']}: chose {refined['chosen'][:40]}; us per call: "
              f"{timed}; retimed {refined['confirm']}")  # fmt: skip
    print(f"ratio tunedgemm (into c) / scikit-cuda cuBLAS: "
          f"{overhead['tunedgemm_into_c_us'] / overhead['skcuda_cublas_us']:.2f}")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_host.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
