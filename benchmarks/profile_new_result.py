"""Why a new device result costs more than writing into c (a development aid, issue 13).

Usage: python benchmarks/profile_new_result.py [--size N] [--dtype float64] [--lib torch]

With --lib torch (issue 13's short rows: dgemm with a new torch result ran 0.85-0.91x cuBLAS
into c at 256^3-512^3 where into c ran 1.05-1.19x): on torch tensors, the new result, into c,
a new result kept, torch.empty_strided alone and torch's own `a @ b` and matmul(out=), host
and event microseconds per call as below, what each plan runs, and cProfile of the new result.

On CuPy operands of N^3 (default 512, float32; --dtype float64 for dgemm), with a new result, into a
preallocated c, a new result kept alive (no frees in the loop) and CuPy's own allocation
alone: host microseconds per call (perf_counter around the loop, before any sync) and
device microseconds per call (CUDA events around the same loop), then what each plan runs.
CuPy's own `a @ b` and `cupy.matmul(a, b, out=c)` are timed the same way, beside them. Then
whether a form waits for the device (its calls queued behind a ~20 ms spin kernel return
before the spin ends, or not), and where the host time of the new result goes (cProfile's top
functions by own time, for a new result dropped and one kept).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--lib", choices=("cupy", "torch"), default="cupy")
    args = parser.parse_args()
    if args.lib == "torch":
        return _torch(args.size, np.dtype(args.dtype))
    import cupy

    import tunedgemm as tg

    n, calls, dtype = args.size, 300, np.dtype(args.dtype)
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    a = cupy.asarray(np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(dtype))
    b = cupy.asarray(np.random.default_rng(2).uniform(-1, 1, (n, n)).astype(dtype))
    c = cupy.empty((n, n), dtype, order="F")
    kept: list = []
    forms = {
        "new result": lambda: routine(1.0, a, b),
        "into c": lambda: routine(1.0, a, b, c=c, overwrite_c=1),
        "new result kept": lambda: kept.append(routine(1.0, a, b)),
        "cupy.ndarray alone": lambda: cupy.ndarray((n, n), dtype, order="F"),
        "new then into c": lambda: (routine(1.0, a, b), routine(1.0, a, b, c=c, overwrite_c=1)),
        "cupy a @ b": lambda: a @ b,
        "cupy matmul out=c": lambda: cupy.matmul(a, b, out=c_rows),
    }
    c_rows = cupy.empty((n, n), dtype)
    events = cupy.cuda.Event(), cupy.cuda.Event()
    _time_forms(n, forms, kept, calls, events, cupy.cuda.get_elapsed_time,
                cupy.cuda.Device().synchronize)  # fmt: skip
    print("new:", tg.plan(a, b).explain())
    print("into:", tg.plan(a, b, c).explain())
    from tunedgemm import autotune

    for record in autotune.history():
        timed = ", ".join(
            f"{c} {ms * 1e3:.1f}" for c, ms in zip(record["candidates"], record["ms"], strict=True)
        )
        print(
            f"autotune {record['shape']}: us per call {timed}; confirm {record['confirm']}; "
            f"chose {record['chosen']}"
        )
    _own_kernels_and_peer(cupy, tg, routine, a, b, c, calls)
    spin = _spin_kernel(cupy)
    for name in ("new result", "into c", "new result kept", "cupy a @ b"):
        print(f"{n} {name:20s} {_waits_for_device(cupy, spin, forms[name])}", flush=True)
        kept.clear()
    for name in ("new result", "new result kept"):
        _profile(name, forms[name], calls)
        kept.clear()
    return 0


def _time_forms(n: int, forms: dict, kept: list, calls: int, events: tuple, elapsed_ms,
                synchronize) -> None:  # fmt: skip
    """Each form's host and device (CUDA-event) microseconds per call: medians of 5 loops of
    `calls` calls, after 10 warm-up calls; `kept` (results a form keeps) emptied between."""
    start, stop = events
    for name, work in forms.items():
        for _ in range(10):
            work()
        synchronize()
        kept.clear()
        rows = []
        for _ in range(5):
            start.record()
            t0 = time.perf_counter()
            for _ in range(calls):
                work()
            host = (time.perf_counter() - t0) / calls * 1e6
            stop.record()
            stop.synchronize()
            rows.append((host, elapsed_ms(start, stop) * 1e3 / calls))
            kept.clear()
        host, device = (float(np.median([r[i] for r in rows])) for i in (0, 1))
        print(f"{n} {name:20s} host {host:6.1f} us   events {device:6.1f} us", flush=True)


def _torch(n: int, dtype: np.dtype, calls: int = 300) -> int:
    """The torch forms (see the docstring): timed as the CuPy ones are."""
    import torch

    import tunedgemm as tg

    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    torch_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}
    rng = np.random.default_rng(1)
    a, b = (torch.from_numpy(rng.uniform(-1, 1, (n, n)).astype(dtype)).cuda() for _ in "ab")
    c = torch.empty_strided((n, n), (1, n), dtype=torch_dtype[dtype], device=a.device)
    c_rows = torch.empty((n, n), dtype=torch_dtype[dtype], device=a.device)
    kept: list = []
    forms = {
        "new result": lambda: routine(1.0, a, b),
        "into c": lambda: routine(1.0, a, b, c=c, overwrite_c=1),
        "new result kept": lambda: kept.append(routine(1.0, a, b)),
        "torch.empty_strided": lambda: torch.empty_strided(
            (n, n), (1, n), dtype=torch_dtype[dtype], device=a.device),
        "torch a @ b": lambda: a @ b,
        "torch matmul out=c": lambda: torch.matmul(a, b, out=c_rows),
    }  # fmt: skip
    events = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    _time_forms(n, forms, kept, calls, events, lambda start, stop: start.elapsed_time(stop),
                torch.cuda.synchronize)  # fmt: skip
    print("new:", tg.plan(a, b).explain())
    print("into:", tg.plan(a, b, c).explain())
    for name in ("new result", "new result kept"):
        _profile(name, forms[name], calls)
        kept.clear()
    return 0


def _own_kernels_and_peer(cupy, tg, routine, a, b, c, calls: int) -> None:
    """The new result and into c with own kernels only (TUNEDGEMM_CUBLAS=0: the plans are
    made again), and the peer of bench_device (cuBLAS into c), in the same loops."""
    import os

    from bench_device import cublas_into

    peer = cublas_into(c, a, b, c.dtype)
    os.environ["TUNEDGEMM_CUBLAS"] = "0"
    try:
        forms = {"own: new result": lambda: routine(1.0, a, b),
                 "own: into c": lambda: routine(1.0, a, b, c=c, overwrite_c=1),
                 "peer: cuBLAS into c": peer}  # fmt: skip
        for name, work in forms.items():
            for _ in range(10):
                work()
            cupy.cuda.Device().synchronize()
            print(f"{a.shape[0]} {name:20s} {_loop_us(cupy, work, calls):6.1f} us a call")
        print("own:", tg.plan(a, b).explain())
    finally:
        del os.environ["TUNEDGEMM_CUBLAS"]


def _loop_us(cupy, work, calls: int) -> float:
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(calls):
            work()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls)
    return float(np.median(samples))


SPIN_MS = 20.0


def _spin_kernel(cupy):
    """A one-thread kernel that spins for about SPIN_MS on the GPU clock."""
    source = r"""
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
    }"""
    kernel = cupy.RawKernel(source, "spin")
    rate_khz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"]
    return lambda: kernel((1,), (1,), (np.int64(rate_khz * SPIN_MS),))


def _waits_for_device(cupy, spin, work, calls: int = 20) -> str:
    """20 calls queued behind the spin: their host time, and whether the spin had ended."""
    done = cupy.cuda.Event()
    cupy.cuda.Device().synchronize()
    spin()
    done.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        work()
    host_ms = (time.perf_counter() - t0) * 1e3
    ended = done.done
    cupy.cuda.Device().synchronize()
    verdict = "waits for the device" if ended else "returns before the device is done"
    return f"{calls} calls behind a {SPIN_MS:.0f} ms spin: host {host_ms:.2f} ms, {verdict}"


def _profile(name: str, work, calls: int) -> None:
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        work()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
    lines = [line for line in text.getvalue().splitlines() if line.strip()]
    print(f"--- cProfile, {calls} calls of {name!r} (top 12 by own time)")
    print("\n".join(lines[-14:]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
