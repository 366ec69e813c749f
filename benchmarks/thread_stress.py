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

MODES = ("host", "device-cublas", "device-own", "mixed")


def worker(mode: str, index: int, errors: list[str]) -> None:
    import cupy

    import tunedgemm as tg

    rng = np.random.default_rng(index)
    dtype = (np.float32, np.float64)[index % 2]
    try:
        for size in (96, 700, 3000) * 2:
            a = rng.uniform(-1, 1, (size, size + 3)).astype(dtype)
            b = rng.uniform(-1, 1, (size + 3, 77 * (index + 1))).astype(dtype)
            expected = a.astype(np.float64) @ b.astype(np.float64)
            results = []
            if mode in ("host", "mixed"):
                results.append(tg.gemm(1.0, a, b))
            if mode != "host":
                stream = cupy.cuda.Stream(non_blocking=True)
                with stream:
                    device = tg.gemm(1.0, cupy.asarray(a), cupy.asarray(b), stream=stream)
                    results.append(cupy.asnumpy(device, stream=stream))
                stream.synchronize()
            for got in results:
                error = np.abs(got - expected).max() / max(1.0, np.abs(expected).max())
                if not error < 1e-3:
                    errors.append(f"thread {index} {size}: error {error:.2e}")
    except Exception as exc:
        errors.append(f"thread {index}: {type(exc).__name__}: {exc}")


def run_mode(mode: str, threads: int) -> int:
    """In this process: the calls of one mode from `threads` threads; exit status 0 if right."""
    import cupy

    import tunedgemm as tg

    os.environ["TUNEDGEMM_BACKEND"] = "gpu"
    if mode == "device-own":
        os.environ["TUNEDGEMM_CUBLAS"] = "0"
    for dtype in (np.float32, np.float64):  # CuPy's and tunedgemm's first-use work, once
        tg.gemm(1.0, cupy.ones((3, 2), dtype), cupy.ones((2, 4), dtype))
        tg.gemm(1.0, np.ones((3, 2), dtype), np.ones((2, 4), dtype))
    errors: list[str] = []
    pool = [threading.Thread(target=worker, args=(mode, i, errors)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    print("\n".join(errors) or "all results right")
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
        lines = [line for line in text.splitlines() if "threading.py" not in line]
        print(f"== {mode}: exit {status}")
        print("\n".join(lines[-25:] if status else lines[-3:]))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
