"""Why a new device result costs more than writing into c (a development aid, issue 13).

Usage: python benchmarks/profile_new_result.py [--size N]

On CuPy float32 operands of N^3 (default 512), for sgemm with a new result, sgemm into a
preallocated c, a new result kept alive (no frees in the loop) and CuPy's own allocation
alone: host microseconds per call (perf_counter around the loop, before any sync) and
device microseconds per call (CUDA events around the same loop), then what each plan runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    import cupy

    import tunedgemm as tg

    n, calls = args.size, 300
    a = cupy.asarray(np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(np.float32))
    b = cupy.asarray(np.random.default_rng(2).uniform(-1, 1, (n, n)).astype(np.float32))
    c = cupy.empty((n, n), np.float32, order="F")
    kept: list = []
    forms = {
        "new result": lambda: tg.sgemm(1.0, a, b),
        "into c": lambda: tg.sgemm(1.0, a, b, c=c, overwrite_c=1),
        "new result kept": lambda: kept.append(tg.sgemm(1.0, a, b)),
        "cupy.ndarray alone": lambda: cupy.ndarray((n, n), np.float32, order="F"),
        "new then into c": lambda: (tg.sgemm(1.0, a, b),
                                    tg.sgemm(1.0, a, b, c=c, overwrite_c=1)),
    }
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for name, work in forms.items():
        for _ in range(10):
            work()
        cupy.cuda.Device().synchronize()
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
            rows.append((host, cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls))
            kept.clear()
        host, device = (float(np.median([r[i] for r in rows])) for i in (0, 1))
        print(f"{n} {name:20s} host {host:6.1f} us   events {device:6.1f} us", flush=True)
    print("new:", tg.plan(a, b).explain())
    print("into:", tg.plan(a, b, c).explain())
    return 0


if __name__ == "__main__":
    sys.exit(main())
