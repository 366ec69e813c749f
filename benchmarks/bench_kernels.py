"""Kernel families vs cuBLAS (scikit-cuda) on device operands: CUDA-event medians, TFLOP/s.

Usage: python benchmarks/bench_kernels.py [--dtype float32 float64] [--sweep N] [--out DIR]
Each row times every family's default config (and, with --sweep N, N more configs from
its space, keeping the fastest) and cuBLAS on the same operands in the same process.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import sys
from pathlib import Path
from typing import Any

SQUARES = [(s, s, s) for s in (1024, 2048, 4096, 8192)]
IRREGULAR = [(8192, 8192, 128), (16384, 64, 16384), (64, 16384, 16384), (4096, 4096, 256),
             (1000, 1000, 1000), (3000, 3000, 3000)]  # fmt: skip


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / ms / 1e9


def candidates(dtype: str, shape: tuple[int, int, int], sweep: int) -> list[Any]:
    """The tuning table's own-kernel choice for this shape, every family's default config,
    and `sweep` random configs of each family's space."""
    from tunedgemm import selection, table
    from tunedgemm.families import serving
    from tunedgemm.params import IEEE

    os.environ[selection.CUBLAS_ENV] = "0"  # the table's best own kernel, not cuBLAS
    tuned = selection.choose(dtype, *shape, warn=False).config
    del os.environ[selection.CUBLAS_ENV]
    picked = [] if tuned == table.CUBLAS else [tuned]
    for family in serving(dtype):  # IEEE arithmetic only, as cuBLAS SGEMM / DGEMM
        default = family.default_config(dtype)
        rest = [c for c in family.space(dtype, IEEE) if c != default]
        picked += [default, *random.Random(0).sample(rest, min(sweep, len(rest)))]
    return list(dict.fromkeys(picked))


def time_shape(shape: tuple[int, int, int], dtype: str, sweep: int) -> dict[str, Any]:
    """Fastest of our candidates and cuBLAS on the same fresh operands."""
    from tunedgemm import gpu_backend, reference
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, dtype)
    best_ms, best_config = math.inf, None
    for config in candidates(dtype, shape, sweep):
        try:
            ms = gpu_median_ms(
                lambda c=config: gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, c),
                warmup=2, reps=7,
            )  # fmt: skip
        except Exception as exc:  # a config that fails costs infinity, and is logged
            print(f"  {config}: failed ({type(exc).__name__}: {exc})", file=sys.stderr)
            ms = math.inf
        if ms < best_ms:
            best_ms, best_config = ms, config
    cublas_ms = math.nan
    if reference.status()[0]:
        cublas_ms = gpu_median_ms(
            lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0), warmup=2, reps=7
        )
    ours, theirs = tflops(m, n, k, best_ms), tflops(m, n, k, cublas_ms)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "config": str(best_config), "ms": best_ms,
            "cublas_ms": cublas_ms, "tflops": ours, "cublas_tflops": theirs,
            "ratio": ours / theirs, "with_cublas_ratio": max(ours, theirs) / theirs}  # fmt: skip


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sweep", type=int, default=0, help="extra random configs per family")
    parser.add_argument("--shapes", default="all", choices=["all", "squares", "irregular"])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from tunedgemm import cuda, reference

    ok, why = cuda.status()
    if not ok:
        print(f"bench_kernels: needs a GPU ({why})")
        return 1
    shapes = {"all": SQUARES + IRREGULAR, "squares": SQUARES, "irregular": IRREGULAR}
    device = cuda.device().name()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {device}, {stamp}, {reference.status()[1]}")
    print(f"{'dtype':8} {'m x n x k':>18} {'best config':>60} {'ours TF':>8} {'cuBLAS TF':>9} "
          f"{'ratio':>6}")  # fmt: skip
    rows = []
    for dtype in args.dtype:
        for shape in shapes[args.shapes]:
            row = time_shape(shape, dtype, args.sweep)
            rows.append(row)
            print(f"{dtype:8} {'x'.join(map(str, shape)):>18} {row['config']:>60.60} "
                  f"{row['tflops']:8.1f} {row['cublas_tflops']:9.1f} {row['ratio']:6.2f}",
                  flush=True)  # fmt: skip
    for dtype in args.dtype:
        ratios = [r["ratio"] for r in rows if r["dtype"] == dtype
                  and (r["m"], r["n"], r["k"]) in IRREGULAR]  # fmt: skip
        print(f"{dtype}: geometric mean of ratios over the irregular shapes: "
              f"{geometric_mean(ratios):.2f}")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"device": device, "date": stamp, "reference": reference.status()[1],
              "command": " ".join(["python", *sys.argv]), "rows": rows}  # fmt: skip
    (out / "bench_kernels.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
