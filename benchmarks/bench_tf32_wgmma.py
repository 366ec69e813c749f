"""The wgmma family against the mma.sync tf32 family, cuBLAS SGEMM and cuBLAS TF32: TFLOP/s.

Usage: python benchmarks/bench_tf32_wgmma.py [--out DIR]

At 4096^3 and 8192^3 (NN, 16-byte aligned uniform(-1, 1) operands) it times every config of
the tf32_wgmma family's space with SPLIT_K = 1, each mode's mma.sync default (family tf32),
cuBLAS SGEMM and cuBLAS TF32 (tunedgemm.reference.gemm, precision "tf32") by CUDA events
(tunedgemm.timing.gpu_median_ms: median of 10 after 3 warm-up runs), and for each the
median and 99.9th percentile of |C - exact| / (|A| |B|) on a 128 x 128 sample of C. Prints a
table with the issue's floors (tf32 >= 0.9x cuBLAS TF32; 3xtf32 >= 1.3x / 1.5x cuBLAS SGEMM at
4096 / 8192) and writes DIR/bench_tf32_wgmma.json. About a minute on an H100.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# This checkout's kernels ahead of any installed tunedgemm.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES = (4096, 8192)
SAMPLE = 128
FLOORS = {("tf32", 4096): 0.9, ("tf32", 8192): 0.9, ("3xtf32", 4096): 1.3, ("3xtf32", 8192): 1.5}


def errors(c: np.ndarray, op_a: np.ndarray, op_b: np.ndarray, rows: Any, cols: Any) -> tuple:
    a, b = op_a[rows].astype(np.float64), op_b[:, cols].astype(np.float64)
    got = c[np.ix_(rows, cols)].astype(np.float64)
    if not np.isfinite(got).all():
        return math.inf, math.inf
    rel = np.abs(got - a @ b) / (np.abs(a) @ np.abs(b))
    return float(np.median(rel)), float(np.percentile(rel, 99.9))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    from tunedgemm import launch, reference
    from tunedgemm.compiler import precompile
    from tunedgemm.families import tf32, tf32_wgmma
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    ours = [c for c in tf32_wgmma.FAMILY.space("float32") if c["SPLIT_K"] == 1]
    calls: dict[str, tuple[str, Any]] = {}  # label -> (mode, config or cuBLAS precision)
    for config in ours:
        calls[str(config)] = (tf32_wgmma.FAMILY.precision_of(config.as_dict()), config)
    for mode in ("tf32", "3xtf32"):
        calls[f"mma.sync {tf32.default_for(mode)}"] = (mode, tf32.default_for(mode))
    print(f"compiling {len(calls)} configs", flush=True)
    started = time.perf_counter()
    precompile([c for _, c in calls.values()], "float32", False, False, True)
    print(f"compiled in {time.perf_counter() - started:.0f} s", flush=True)
    calls["cuBLAS SGEMM"] = ("ieee", "ieee")
    calls["cuBLAS TF32"] = ("tf32", "tf32")
    rng = np.random.default_rng(1)
    results = []
    for s in SIZES:
        problem = problems.make(s, s, s, np.float32, rng=rng, padded=True)
        rows, cols = rng.choice(s, SAMPLE, replace=False), rng.choice(s, SAMPLE, replace=False)
        for label, (mode, what) in calls.items():
            if isinstance(what, str):
                def work(p=what, q=problem):
                    reference.gemm(q.form, q.dtype, 1.0, 0.0, precision=p)
            else:
                def work(c=what, q=problem):
                    launch.gemm(q.form, q.dtype, 1.0, 0.0, c)
            problem.poison_c()
            try:
                work()
                median, p999 = errors(problem.c(), problem.op_a, problem.op_b, rows, cols)
                ms = gpu_median_ms(work, warmup=3, reps=10)
            except Exception as exc:  # a failing config is reported, not fatal
                print(f"{s}: {label}: failed ({type(exc).__name__}: {str(exc)[:300]})")
                median = p999 = ms = math.inf
            tflops = 2.0 * s**3 / (ms * 1e-3) / 1e12 if math.isfinite(ms) else 0.0
            results.append({"size": s, "label": label, "mode": mode, "ms": ms,
                            "tflops": tflops, "err_median": median, "err_p999": p999})  # fmt: skip
            print(f"{s:5d} {mode:6s} {tflops:7.1f} TFLOP/s  err med {median:.2e} "
                  f"p99.9 {p999:.2e}  {label}", flush=True)  # fmt: skip
    print("\nFloors (best tf32_wgmma config per mode):")
    for (mode, s), floor in FLOORS.items():
        rival = "cuBLAS TF32" if mode == "tf32" else "cuBLAS SGEMM"
        base = next(r["tflops"] for r in results if r["size"] == s and r["label"] == rival)
        mine = [r for r in results if r["size"] == s and r["mode"] == mode
                and r["label"].startswith(tf32_wgmma.NAME)]  # fmt: skip
        best = max(mine, key=lambda r: r["tflops"])
        ratio = best["tflops"] / base if base else 0.0
        verdict = "meets" if ratio >= floor else "BELOW"
        print(f"  {mode:6s} {s}: {best['tflops']:.1f} vs {rival} {base:.1f} = {ratio:.2f}x "
              f"({verdict} {floor}x) {best['label']}")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_tf32_wgmma.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
