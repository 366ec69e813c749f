"""Concurrent calls from several threads, one kind of call per run (a diagnostic aid): which
kind of call, if any, breaks the process. Each mode runs in its own subprocess, so a crash
costs that mode only; the last lines of its stderr are printed.

Usage: python benchmarks/thread_stress.py [--threads 8] [--modes host device-cublas ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading

import numpy as np

MODES = ("cupy-only", "host", "device-cublas", "device-own", "mixed")


def worker(mode: str, index: int, done: list[tuple], errors: list[str]) -> None:
    """One thread's calls; results are checked on the main thread afterwards, since NumPy's
    BLAS (OpenBLAS) aborts when many threads call it at once."""
    import tunedgemm as tg

    rng = np.random.default_rng(index)
    dtype = (np.float32, np.float64)[index % 2]
    try:
        for size in (96, 700, 3000) * 2:
            a = rng.uniform(-1, 1, (size, size + 3)).astype(dtype)
            b = rng.uniform(-1, 1, (size + 3, 77 * (index + 1))).astype(dtype)
            if mode in ("host", "mixed"):
                done.append((a, b, tg.gemm(1.0, a, b)))
            if mode in ("device-cublas", "device-own", "mixed", "cupy-only"):
                import cupy

                stream = cupy.cuda.Stream(non_blocking=True)
                with stream:
                    da, db = cupy.asarray(a), cupy.asarray(b)
                    own = mode != "cupy-only"
                    device = tg.gemm(1.0, da, db, stream=stream) if own else da @ db
                    result = cupy.asnumpy(device, stream=stream)
                stream.synchronize()
                done.append((a, b, result))
    except Exception as exc:
        errors.append(f"thread {index}: {type(exc).__name__}: {exc}")


def run_mode(mode: str, threads: int) -> int:
    """In this process: the calls of one mode from `threads` threads; exit status 0 if right."""
    import tunedgemm as tg

    os.environ["TUNEDGEMM_BACKEND"] = "gpu"
    if mode == "device-own":
        os.environ["TUNEDGEMM_CUBLAS"] = "0"
    for dtype in (np.float32, np.float64):  # first-use work (compiles), once, here
        tg.gemm(1.0, np.ones((3, 2), dtype), np.ones((2, 4), dtype))
        if mode != "host":
            import cupy

            cupy.asnumpy(cupy.ones((3, 2), dtype) @ cupy.ones((2, 4), dtype))
            tg.gemm(1.0, cupy.ones((3, 2), dtype), cupy.ones((2, 4), dtype))
    done: list[tuple] = []
    errors: list[str] = []
    pool = [threading.Thread(target=worker, args=(mode, i, done, errors)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    for a, b, got in done:
        expected = a.astype(np.float64) @ b.astype(np.float64)
        error = np.abs(got - expected).max() / max(1.0, np.abs(expected).max())
        if not error < 1e-3:
            errors.append(f"{a.shape} @ {b.shape}: error {error:.2e}")
    print("\n".join(errors) or f"all {len(done)} results right")
    return 1 if errors else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_mode(args.child, args.threads)
    failed = 0
    for mode in args.modes:
        command = [sys.executable, "-X", "faulthandler", __file__, "--child", mode,
                   "--threads", str(args.threads)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            status, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            status, text = "timeout", str(exc.stderr or "")
        failed += status != 0
        lines = [line[:200] for line in text.splitlines() if "threading.py" not in line]
        print(f"== {mode}: exit {status}")
        if status:  # what came before the stack dump (a library's message), then the dump
            head = [line for line in lines if not line.startswith(("  File", "Thread", "Ext"))]
            print("\n".join(head[:15]))
        print("\n".join(lines[-30:] if status else lines[-3:]))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
