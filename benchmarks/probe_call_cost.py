"""What autotuning's cost of a candidate misses (issue 13: at 512^3 float64 it picked an own
kernel that costs 15.8 us a call where cuBLASLt's algorithms run at 8.9-9.3 us a call).

Usage: python benchmarks/probe_call_cost.py [--size 512] [--dtype float64]

For cuBLASLt's first algorithms and the own configs autotuning timed at N^3 (the table's
candidates), on the same operands: the GPU median and least host time per launch as
autotuning measures them (timing.gpu_and_host_ms: launches queued behind a hold kernel), the
host time per call in a run of back-to-back calls without the hold, and the events time per
call of that run (what a loop of calls costs). Then the public call's front door: CuPy
`dgemm(1.0, a, b, c=c, overwrite_c=1)` with TUNEDGEMM_REFINE=0 (the table's choice: cuBLAS,
its heuristic's first algorithm) against that algorithm alone, host microseconds per call.
Each dmma split-K candidate is followed by its fused twin (SPLITK_FUSED=1: the slices summed
in the same launch).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run_us(work, calls: int = 50, loops: int = 5) -> tuple[float, float]:
    """(host us per call before the sync, events us per call) of back-to-back calls: the
    least of `loops` loops."""
    import pycuda.driver as drv

    best_host = best_events = float("inf")
    for _ in range(loops):
        start, stop = drv.Event(), drv.Event()
        drv.Context.synchronize()
        start.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            work()
        host = (time.perf_counter() - t0) / calls * 1e6
        stop.record()
        stop.synchronize()
        best_host = min(best_host, host)
        best_events = min(best_events, stop.time_since(start) * 1e3 / calls)
    return best_host, best_events


def _fused(config):
    """The config with SPLITK_FUSED=1, where dmma allows it; else None."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    if config.family != "dmma" or config.as_dict().get("SPLIT_K", 1) == 1:
        return None
    twin = KernelConfig.make("dmma", {**config.as_dict(), "SPLITK_FUSED": 1})
    return None if FAMILIES["dmma"].violations(twin, "float64") else twin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--dtype", default="float64")
    args = parser.parse_args()
    n, dtype = args.size, np.dtype(args.dtype)

    import cupy

    import tunedgemm as tg
    from tunedgemm import cublaslt, cuda, launch, selection, timing
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    cuda.context()
    problem = problems.make(n, n, n, dtype, padded=True)
    form = problem.form
    candidates = selection.choose(dtype.name, n, n, n, warn=False).candidates
    rows = {}
    for algo in cublaslt.algorithms(dtype.name, "ieee", form.trans_a, form.trans_b, n, n, n,
                                    form.lda, form.ldb, form.ldc, count=8):  # fmt: skip
        rows[str(algo)] = lambda algo=algo: algo(form.a, form.b, form.c, 1.0, 0.0, 0)
    workspace = cuda.allocate(1 << 26)
    own = [c for c in candidates if isinstance(c, KernelConfig)]
    # Each dmma split-K candidate's fused twin (SPLITK_FUSED=1: one launch) right after it.
    for config in own + [_fused(c) for c in own if _fused(c) is not None]:
        kernels = launch.launcher(config, dtype, form.trans_a, form.trans_b, form.aligned(),
                                  id(cuda.context()))  # fmt: skip
        rows[str(config)] = lambda k=kernels: k(form, 1.0, 0.0, 0, int(workspace))
    print(f"# {cuda.device_name()}, {dtype.name} {n}^3 NN; us per call")
    print(f"{'candidate':110} {'held gpu':>9} {'held host':>9} {'run host':>9} {'run events':>10}")
    for name, work in rows.items():
        gpu_ms, host_ms = timing.gpu_and_host_ms(work, 2, 5)
        host, events = run_us(work)
        print(f"{name:110} {gpu_ms * 1e3:9.1f} {host_ms * 1e3:9.1f} {host:9.1f} "
              f"{events:10.1f}", flush=True)  # fmt: skip
    os.environ["TUNEDGEMM_REFINE"] = "0"
    a = cupy.asarray(np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(dtype))
    b = cupy.asarray(np.random.default_rng(2).uniform(-1, 1, (n, n)).astype(dtype))
    c = cupy.empty((n, n), dtype, order="F")
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    public = run_us(lambda: routine(1.0, a, b, c=c, overwrite_c=1))
    print(f"public into c, TUNEDGEMM_REFINE=0: host {public[0]:.1f}, events {public[1]:.1f}; "
          f"{tg.plan(a, b, c).explain()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
