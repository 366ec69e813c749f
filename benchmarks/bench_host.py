"""NumPy in, NumPy out: what a user of tunedgemm feels, against NumPy and CuPy in the same run.

Usage: python benchmarks/bench_host.py [--sizes 1024 2048 4096 8192] [--out DIR]
       python benchmarks/bench_host.py --small-only [--out DIR]   (parts 2 and 4; no GPU needed)

1. Host-to-host sgemm/dgemm on square C-ordered NumPy arrays: tunedgemm, NumPy (`a @ b`) and
   CuPy's plain path (`cp.asnumpy(cp.asarray(a) @ cp.asarray(b))`), wall-clock medians (the
   host copies are part of what is measured). Beside them, the floor of the overlapped
   pipeline: max(pinned transfer time, kernel time), the transfers timed with CUDA events
   on pinned buffers and the kernel with CUDA events on device operands, in this run.
2. Small squares (1 to 512): tunedgemm (whose crossover sends small calls to NumPy) against
   NumPy, median per-call time over loops of calls timed in turns (see small_sweep).
4. The other small host forms (sgemm/dgemm into c, matmul with vectors, with out=, on
   batches), n = 8 to 256, each against its NumPy or SciPy counterpart called with the same
   arguments, timed in turns: ratios per form and n (see FORMS). Their floor is judged with
   BLAS on one thread (OPENBLAS_NUM_THREADS=1), which --small-only sets where the caller has
   not (it must be set before NumPy loads OpenBLAS).
3. Per-call overhead on device arrays at 64^3: tunedgemm on CuPy arrays against
   cublasSgemm through scikit-cuda on the same pointers: calls queued back to back, wall
   time per call (median over rounds timed in turns); at this size the host side is the
   whole cost.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "--small-only" in sys.argv:  # (before NumPy loads OpenBLAS, which reads it once)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from tunedgemm.timing import wall_median_ms

SMALL = (1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 320, 384, 448, 512)
FORM_SIZES = (8, 32, 64, 128, 256)
FORM_BATCH = 4  # products in a batched form
# form -> what it calls (n x n operands; v, w vectors of n; A a batch of FORM_BATCH): each is
# timed against its counterpart, the same call to NumPy or SciPy.
FORMS = {
    "gemm_c": "sgemm/dgemm(1.0, a, b, beta=1.0, c=c, overwrite_c=1), C-ordered a, b, "
    "F-ordered c; vs scipy.linalg.blas",
    "gemm_c_f": "the same with F-ordered a, b; vs scipy.linalg.blas",
    "matvec": "matmul(a, v) vs a @ v",
    "vecmat": "matmul(v, a) vs v @ a",
    "vecvec": "matmul(v, w) vs v @ w",
    "out": "matmul(a, b, out=out) vs np.matmul(a, b, out=out), C-ordered out",
    "batched": "matmul(A, B) vs A @ B, A and B batches",
    "broadcast": "matmul(A, b) vs A @ b, A a batch, b 2-D",
}


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
    from tunedgemm import gpu_backend, reference
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    problem = problems.make(size, size, size, dtype)
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


def ran_on(dtype: np.dtype, size: int) -> str:
    """Where the crossover sends a host call of size^3: numpy or gpu (numpy with no GPU)."""
    from tunedgemm import crossover, cuda

    if not cuda.status()[0]:
        return "numpy"
    return "numpy" if crossover.for_call(dtype, size, size, size) else "gpu"


Pair = tuple[Callable[[], Any], Callable[[], Any]]  # (tunedgemm's call, its counterpart's)


def form_calls(dtype: Any, size: int, rng: np.random.Generator,
               scipy_blas: Any) -> dict[str, Pair]:  # fmt: skip
    """FORMS at this dtype and size: form -> (tunedgemm's call, its counterpart's), each
    writing into arrays of its own."""
    import tunedgemm as tg

    def operand(*shape: int, order: str = "C") -> np.ndarray:
        return np.asarray(rng.uniform(-1, 1, shape), dtype, order=order)

    a, b, v, w = operand(size, size), operand(size, size), operand(size), operand(size)
    batch, batch_b = operand(FORM_BATCH, size, size), operand(FORM_BATCH, size, size)
    calls: dict[str, Pair] = {}

    def into_c(routine: Any, a: np.ndarray, b: np.ndarray) -> Callable[[], Any]:
        c = operand(size, size, order="F")  # (each side accumulates into a c of its own)
        return lambda: routine(1.0, a, b, beta=1.0, c=c, overwrite_c=1)

    if scipy_blas is not None:
        name = "sgemm" if np.dtype(dtype) == np.float32 else "dgemm"
        for form, order in (("gemm_c", "C"), ("gemm_c_f", "F")):
            a_o, b_o = np.asarray(a, order=order), np.asarray(b, order=order)
            calls[form] = (into_c(getattr(tg, name), a_o, b_o),
                           into_c(getattr(scipy_blas, name), a_o, b_o))  # fmt: skip
    out_ours, out_theirs = operand(size, size), operand(size, size)
    calls.update({
        "matvec": (lambda: tg.matmul(a, v), lambda: a @ v),
        "vecmat": (lambda: tg.matmul(v, a), lambda: v @ a),
        "vecvec": (lambda: tg.matmul(v, w), lambda: v @ w),
        "out": (lambda: tg.matmul(a, b, out=out_ours),
                lambda: np.matmul(a, b, out=out_theirs)),
        "batched": (lambda: tg.matmul(batch, batch_b), lambda: batch @ batch_b),
        "broadcast": (lambda: tg.matmul(batch, b), lambda: batch @ b),
    })  # fmt: skip
    return calls


def forms_sweep(rounds: int = 100) -> list[dict[str, Any]]:
    """FORMS against their counterparts: median us per call of each, timed in turns in pairs
    (interleaved_us), and their ratio."""
    try:
        from scipy.linalg import blas as scipy_blas
    except ImportError:
        scipy_blas = None
        print("(SciPy not installed: the gemm_c forms are left out)")
    rows = []
    rng = np.random.default_rng()
    warm_up = time.perf_counter() + 0.5  # (the first pairs timed ran 1.2-1.3x slow without it)
    while time.perf_counter() < warm_up:
        for ours, theirs in form_calls(np.float32, FORM_SIZES[0], rng, scipy_blas).values():
            ours(), theirs()
    for dtype in (np.float32, np.float64):
        for size in FORM_SIZES:
            for form, (ours, theirs) in form_calls(dtype, size, rng, scipy_blas).items():
                us = interleaved_us({"tunedgemm": ours, "counterpart": theirs}, rounds=rounds,
                                    target_s=0.0005)  # fmt: skip
                rows.append({"dtype": np.dtype(dtype).name, "n": size, "form": form,
                             "ran_on": ran_on(np.dtype(dtype), size),
                             "tunedgemm_us": us["tunedgemm"], "counterpart_us": us["counterpart"],
                             "ratio": us["tunedgemm"] / us["counterpart"]})  # fmt: skip
        print_forms(rows, np.dtype(dtype).name)
    return rows


def print_forms(rows: list[dict[str, Any]], dtype: str) -> None:
    """The ratio table of one dtype: a row per form, a column per n."""
    print(f"{dtype}: tunedgemm / counterpart, us per call (median of calls timed in turns)")
    columns = " ".join(f"{'n=' + str(n):>7}" for n in FORM_SIZES)
    print(f"{'form':10} {columns}   counterpart us")
    for form in FORMS:
        found = {r["n"]: r for r in rows if r["dtype"] == dtype and r["form"] == form}
        if found:
            ratios = " ".join(f"{found[n]['ratio']:7.2f}" if n in found else f"{'-':>7}"
                              for n in FORM_SIZES)  # fmt: skip
            times = " ".join(f"{found[n]['counterpart_us']:.3g}" for n in FORM_SIZES
                             if n in found)  # fmt: skip
            print(f"{form:10} {ratios}   {times}", flush=True)


def small_sweep() -> list[dict[str, Any]]:
    """tunedgemm's routines on small squares against NumPy computing the same: `matmul`
    against `a @ b` (both C-ordered), sgemm/dgemm against `a @ b` and against NumPy making
    sgemm's Fortran-ordered result (`(b.T @ a.T).T`), and against SciPy's BLAS wrapper (the
    routine sgemm stands in for) where SciPy is installed."""
    import tunedgemm as tg

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
        ran = ran_on(np.dtype(dtype), size)
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


def small_part(record: dict[str, Any], forms_only: bool = False) -> None:
    """Parts 2 and 4 (host calls below the crossover) into record, printed as they come."""
    import warnings

    from tunedgemm import _small_host

    warnings.filterwarnings("ignore", "tunedgemm: computing with NumPy", RuntimeWarning)
    record["small_host_route"] = "C" if _small_host.NATIVE else "Python"
    record["openblas_num_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    if not forms_only:
        print(f"small squares (short route in {record['small_host_route']}), us per call; "
              "ratios: matmul / a@b, sgemm / a@b, sgemm / NumPy's F-ordered a@b, "
              "sgemm / SciPy's sgemm")  # fmt: skip
        print(f"{'dtype':8} {'n':>6} {'sgemm':>9} {'matmul':>9} {'a@b':>9} {'a@b F':>9} "
              f"{'mm/np':>9} {'sg/np':>9} {'sg/npF':>9} {'sg/scipy':>9} {'ran':>6}")  # fmt: skip
        record["small"] = small_sweep()
    print(f"other small forms (short route in {record['small_host_route']}, "
          f"OPENBLAS_NUM_THREADS={record['openblas_num_threads']}):")
    for form, text in FORMS.items():
        print(f"  {form:10} {text}")
    record["small_forms"] = forms_sweep()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--small-only", action="store_true",
                        help="only the host calls below the crossover (parts 2 and 4), BLAS on "
                        "one thread unless OPENBLAS_NUM_THREADS says otherwise; needs no GPU")
    parser.add_argument("--forms-only", action="store_true",
                        help="with --small-only: part 4 alone")
    parser.add_argument("--skip-small", action="store_true",
                        help="leave out the small calls (run them apart with --small-only: "
                        "with all BLAS threads, NumPy's own 192^2-448^2 products took 16 ms "
                        "each on the H100 machine, and the sweep outran its time limit)")
    args = parser.parse_args()
    from tunedgemm import cuda

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = Path(args.out)
    if args.small_only:
        gpu = cuda.device().name() if cuda.status()[0] else f"no GPU ({cuda.status()[1]})"
        print(f"# small host calls only; {gpu}; {date}")
        record: dict[str, Any] = {"device": gpu, "date": date, "command": " ".join(sys.argv)}
        small_part(record, args.forms_only)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_host_small.json").write_text(json.dumps(record, indent=1))
        return 0
    if not cuda.status()[0]:
        print(f"bench_host: needs a GPU ({cuda.status()[1]}); --small-only runs without one")
        return 1
    print(f"# {cuda.device().name()}, {date}")
    bandwidth = pinned_bandwidth()
    print(f"pinned copies: {bandwidth[0]:.1f} GB/s to the device, {bandwidth[1]:.1f} back")
    print(f"{'dtype':8} {'n':>6} {'tg ms':>10} {'NumPy ms':>10} {'CuPy ms':>10} {'tg/CuPy':>9} "
          f"{'xfer ms':>9} {'kern ms':>9} {'tg/floor':>9}")  # fmt: skip
    record = {"device": cuda.device().name(), "date": date, "command": " ".join(sys.argv),
              "pinned_gb_s": bandwidth}  # fmt: skip
    record["host_to_host"] = host_to_host(args.sizes, bandwidth)
    if not args.skip_small:
        small_part(record)
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
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_host.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
