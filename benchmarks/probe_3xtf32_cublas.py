"""Probe: 3xTF32 composed of cuBLAS TF32 GEMMs, in k-chunks, against cuBLAS SGEMM (issue 16).

Usage: python benchmarks/probe_3xtf32_cublas.py [--sizes 4096 8192] [--chunks 0 2048 1024 512]
       python benchmarks/probe_3xtf32_cublas.py --errors [--chunks 512 256 128]

A question before any code depends on it: can float32-accurate products come from cuBLAS's
own TF32 GEMM (about 400 TFLOP/s on the H100) rather than from our kernels (58 TFLOP/s)?
Each operand is split once into TF32 planes, big = tf32(x) and small = tf32(x - big) (both
rounded to nearest, so the tensor cores' dropping of the low 13 bits loses nothing). Then
C = A_big B_small + A_small B_big (two TF32 GEMMs over all of k: terms 2^-11 smaller, whose
accumulation error does not show) + A_big B_big, in chunks of k (0: all of k at once), each
chunk added to C by the GEMM's own float32 epilogue (beta = 1), which rounds to nearest: the
tensor cores' long accumulations do not. Prints time, TFLOP/s and the speed-up over cuBLAS
SGEMM, and the median and 99.9th percentile of |C - AB| / (|A||B|) on a 128 x 128 sample
(float64 reference) beside SGEMM's, for uniform(-1, 1) inputs and exponents spread over
2^-20..2^20.

--errors: the shipped runner (tunedgemm/tf32_cublas.py) with each chunk length, m = n = --size
(2048), k from 1024 to 16384: its median and 99.9th-percentile error over cuBLAS SGEMM's on
the same operands (tests/gpu/test_tf32_cublas_gpu.py's bound is 2 for both), and its speed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPEATS = 5
SAMPLE = 128


def tf32_planes(cupy: Any, x: Any) -> tuple[Any, Any]:
    """(big, small): x rounded to TF32 (to nearest, ties away), and the rest rounded too."""

    def rounded(v: Any) -> Any:
        bits = v.view(cupy.uint32)
        return ((bits + cupy.uint32(0x1000)) & cupy.uint32(0xFFFFE000)).view(cupy.float32)

    big = rounded(x)
    return big, rounded(x - big)


def median_ms(cupy: Any, work: Any) -> float:
    work()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(REPEATS):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        work()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def errors(cupy: Any, a: Any, b: Any, c: Any, rng: np.random.Generator) -> tuple[float, float]:
    n = a.shape[0]
    rows = cupy.asarray(rng.choice(n, SAMPLE, replace=False))
    cols = cupy.asarray(rng.choice(n, SAMPLE, replace=False))
    a64, b64 = a[rows, :].astype(cupy.float64), b[:, cols].astype(cupy.float64)
    exact = a64 @ b64
    scale = cupy.abs(a64) @ cupy.abs(b64)
    err = cupy.asnumpy(cupy.abs(c[rows][:, cols].astype(cupy.float64) - exact) / scale)
    return float(np.median(err)), float(np.percentile(err, 99.9))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--chunks", type=int, nargs="+", default=[0, 2048, 1024, 512])
    parser.add_argument("--errors", action="store_true", help="the runner's error per chunk")
    parser.add_argument("--size", type=int, default=2048, help="m = n of --errors")
    args = parser.parse_args()
    if args.errors:
        return runner_errors(args.chunks, args.size)
    import cupy

    from tunedgemm import reference
    from tunedgemm._layout import BlasForm

    rng = np.random.default_rng()

    def gemm_tf32(a: Any, b: Any, c: Any, k0: int, k1: int, beta: float) -> None:
        # column-major view of C-ordered arrays: C^T = B^T A^T, so pass b as A and a as B
        n = c.shape[0]
        form = BlasForm(False, False, n, n, k1 - k0, b.data.ptr + 4 * k0 * n, n,
                        a.data.ptr + 4 * k0, a.shape[1], c.data.ptr, n, 4)  # fmt: skip
        reference._gemm_tf32(form, 1.0, beta, 0)

    def sgemm(a: Any, b: Any, c: Any) -> None:
        n, k = c.shape[0], a.shape[1]
        form = BlasForm(False, False, n, n, k, b.data.ptr, n, a.data.ptr, k, c.data.ptr, n, 4)
        reference.gemm(form, np.dtype(np.float32), 1.0, 0.0, 0)

    print(f"{'n':>6} {'input':>8} {'method':>18} {'ms':>8} {'TFLOP/s':>8} {'x SGEMM':>8} "
          f"{'median':>9} {'p99.9':>9}")  # fmt: skip
    for n in args.sizes:
        for kind in ("uniform", "spread"):
            host = [rng.uniform(-1, 1, (n, n)) for _ in range(2)]
            if kind == "spread":
                host = [h * np.exp2(rng.integers(-20, 21, (n, n))) for h in host]
            a, b = (
                cupy.asarray(host[0].astype(np.float32)),
                cupy.asarray(host[1].astype(np.float32)),
            )
            c = cupy.empty((n, n), np.float32)
            flops = 2.0 * n**3
            ms = median_ms(cupy, lambda a=a, b=b, c=c: sgemm(a, b, c))
            base = ms
            med, p999 = errors(cupy, a, b, c, rng)
            print(f"{n:6d} {kind:>8} {'cuBLAS SGEMM':>18} {ms:8.2f} {flops / ms / 1e9:8.1f} "
                  f"{1.0:8.2f} {med:9.2e} {p999:9.2e}", flush=True)  # fmt: skip
            for chunk in args.chunks:
                step = n if chunk <= 0 else chunk

                def run(step: int = step, a: Any = a, b: Any = b, c: Any = c, n: int = n) -> None:
                    ab, asm = tf32_planes(cupy, a)
                    bb, bsm = tf32_planes(cupy, b)
                    gemm_tf32(asm, bb, c, 0, n, 0.0)
                    gemm_tf32(ab, bsm, c, 0, n, 1.0)
                    for k0 in range(0, n, step):
                        gemm_tf32(ab, bb, c, k0, min(n, k0 + step), 1.0)

                ms = median_ms(cupy, run)
                med, p999 = errors(cupy, a, b, c, rng)
                label = f"3xtf32 chunk {chunk or n}"
                print(f"{n:6d} {kind:>8} {label:>18} {ms:8.2f} {flops / ms / 1e9:8.1f} "
                      f"{base / ms:8.2f} {med:9.2e} {p999:9.2e}", flush=True)  # fmt: skip
            del a, b, c
            cupy.get_default_memory_pool().free_all_blocks()
    return 0


def runner_errors(chunks: list[int], size: int) -> int:
    """Per chunk length: the shipped runner's error over cuBLAS SGEMM's at m = n = size on a
    SAMPLE x SAMPLE block (float64 reference), k from 1024 to 16384; then its time against
    SGEMM's at 4096^3 and 8192^3 (alpha 1, beta 0, column-major, CUDA-event medians)."""
    import cupy

    from tunedgemm import plans, reference, tf32_cublas
    from tunedgemm._layout import BlasForm

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from helpers import spread_float32

    rng = np.random.default_rng()

    def both(m: int, n: int, k: int, a: Any, b: Any, c: Any) -> tuple[Any, Any]:
        form = BlasForm(False, False, m, n, k, a.data.ptr, m, b.data.ptr, k, c.data.ptr, m, 4)
        runner = tf32_cublas.TF32x3OnCublas(plans.GemmKey.of(form, "float32", "3xtf32"))
        return (lambda: runner(form.a, form.b, form.c, 1.0, 0.0, 0),
                lambda: reference.gemm(form, np.dtype(np.float32), 1.0, 0.0, 0))  # fmt: skip

    print(f"{'chunk':>6} {'input':>8} {'k':>6} {'median x SGEMM':>15} {'p99.9 x SGEMM':>14}")
    m = n = size
    rows, cols = rng.choice(m, SAMPLE, replace=False), rng.choice(n, SAMPLE, replace=False)
    for chunk in chunks:
        tf32_cublas.CHUNK = chunk
        for kind in ("uniform", "spread"):
            for k in (1024, 4096, 16384):
                if kind == "uniform":
                    ha = rng.uniform(-1, 1, (m, k)).astype(np.float32)
                    hb = rng.uniform(-1, 1, (k, n)).astype(np.float32)
                else:
                    ha, hb = spread_float32(rng, (m, k)), spread_float32(rng, (k, n))
                a, b = cupy.asarray(ha, order="F"), cupy.asarray(hb, order="F")
                c = cupy.full((m, n), np.nan, np.float32, order="F")
                a64, b64 = ha[rows].astype(np.float64), hb[:, cols].astype(np.float64)
                exact, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
                rel = []
                for run in both(m, n, k, a, b, c):
                    c.fill(np.nan)
                    run()
                    out = cupy.asnumpy(c)[np.ix_(rows, cols)].astype(np.float64)
                    rel.append(np.abs(out - exact) / scale)
                med = float(np.median(rel[0]) / np.median(rel[1]))
                p999 = float(np.percentile(rel[0], 99.9) / np.percentile(rel[1], 99.9))
                print(f"{chunk:6d} {kind:>8} {k:6d} {med:15.2f} {p999:14.2f}", flush=True)
        for n3 in (4096, 8192):
            a = cupy.asarray(rng.uniform(-1, 1, (n3, n3)).astype(np.float32), order="F")
            b = cupy.asarray(rng.uniform(-1, 1, (n3, n3)).astype(np.float32), order="F")
            c = cupy.empty((n3, n3), np.float32, order="F")
            ours, sgemm = (median_ms(cupy, run) for run in both(n3, n3, n3, a, b, c))
            print(f"{chunk:6d} {n3}^3: {ours:.2f} ms against SGEMM {sgemm:.2f} ms: "
                  f"{sgemm / ours:.2f}x", flush=True)  # fmt: skip
            del a, b, c
    return 0


if __name__ == "__main__":
    sys.exit(main())
