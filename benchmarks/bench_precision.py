"""Precision modes through the public call: speed against cuBLAS, and error against float64.

For squares 1024..16384 and irregular shapes, on CuPy device arrays, times
`tunedgemm.sgemm(1.0, a, b, c=c, overwrite_c=1, precision=mode)` into a preallocated c for
each mode ("ieee", "3xtf32", "tf32") against the peer that computes at least as accurately on
the same operands into its own preallocated c: cuBLAS SGEMM (scikit-cuda's binding) for
"ieee" and "3xtf32", cuBLAS's TF32 GEMM (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32) for
"tf32". Timing is bench_device.compare's: CUDA events around loops of back-to-back calls,
interleaved with the peer, medians after warm-up; ratio = peer's time / ours (above 1: ours
faster). Then an error table at m = n = 256 for k = 16, 256, 4096, 16384, uniform(-1, 1)
inputs and inputs with exponents spread over 2^-20..2^20: median and 99.9th percentile of
|C - exact| / (|A| |B|) (row-column scale) against float64, for each mode and both cuBLAS
calls, with each mode's ratio to cuBLAS SGEMM's (docs/precision.md's bound for "3xtf32":
both at most 2). Writes DIR/bench_precision.json; --plot also writes precision.png (ratio
against size per mode) to DIR and to docs/img/. About three minutes on an H100, compiles
included (--quick: squares to 4096, three irregular shapes, fewer timed loops).

    python benchmarks/bench_precision.py --out DIR [--quick] [--plot]

With --ozaki it measures the "ozaki" mode instead: dgemm and sgemm(..., precision="ozaki")
into preallocated c on CuPy arrays against cuBLAS DGEMM / SGEMM into theirs, squares 2048..16384
and the irregular shapes (--quick: squares to 8192), then the error of both against a long-double
reference at m = n = 128 for uniform, exponent-spread (2^-30..2^30) and cancelling inputs,
k = 16..16384 (bench_precision_ozaki.json; about five minutes on an H100).

    python benchmarks/bench_precision.py --ozaki --out DIR [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's tunedgemm, ahead of any installed one
sys.path.insert(0, str(HERE))
import bench_device  # noqa: E402  (its timing and cuBLAS peer are reused, not copied)

SQUARES = [(s, s, s) for s in (1024, 2048, 4096, 8192, 16384)]
IRREGULAR = [(8192, 8192, 128), (1500, 1500, 64), (3072, 96, 3072), (96, 6000, 2000),
             (777, 3333, 1555)]  # fmt: skip
MODES = ("ieee", "3xtf32", "tf32")
ERROR_K = (16, 256, 4096, 16384)
ERROR_MN = 256
SPREAD_EXPONENTS = (-20, 20)


def tflops(m: int, n: int, k: int, us: float) -> float:
    return 2.0 * m * n * k / us / 1e6 if us > 0 else math.nan


def cublas_tf32_into(c: Any, a: Any, b: Any) -> Any:
    """The peer of "tf32": cuBLAS's TF32 GEMM into preallocated c, on the legacy default
    stream, for the same column-major problem as tunedgemm's call."""
    from tunedgemm import reference
    from tunedgemm._args import as_matrix
    from tunedgemm._layout import blas_form

    form = blas_form(as_matrix(a, "a"), as_matrix(b, "b"), as_matrix(c, "c"))
    return lambda: reference.gemm(form, np.dtype(np.float32), 1.0, 0.0, None, "tf32")


def calls_into(a: Any, b: Any) -> dict[str, Any]:
    """Per mode and per peer, a maker: c -> a callable computing A B into preallocated c."""
    import tunedgemm as tg

    def ours(mode: str) -> Any:
        return lambda c: lambda: tg.sgemm(1.0, a, b, c=c, overwrite_c=1, precision=mode)

    makers = {mode: ours(mode) for mode in MODES}
    makers["cuBLAS SGEMM"] = lambda c: bench_device.cublas_into(c, a, b, np.dtype(np.float32))
    makers["cuBLAS TF32"] = lambda c: cublas_tf32_into(c, a, b)
    return makers


def operands(inputs: str, m: int, n: int, k: int, rng: np.random.Generator,
             dtype: Any = np.float32, exponents: tuple[int, int] = SPREAD_EXPONENTS,
             ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Host A (m x k) and B (k x n): "uniform" (-1, 1); "spread": random signs and mantissas
    with exponents spread uniformly over 2^lo..2^hi; "cancel": uniform halves whose
    contributions cancel to about 2^-20 of |A| |B| (ill-conditioned dot products)."""
    if inputs == "uniform":
        return (rng.uniform(-1, 1, (m, k)).astype(dtype),
                rng.uniform(-1, 1, (k, n)).astype(dtype))  # fmt: skip
    if inputs == "cancel":
        half = max(k // 2, 1)
        x, y = rng.uniform(-1, 1, (m, half)), rng.uniform(-1, 1, (half, n))
        nudge = 1 + 2.0**-20 * rng.uniform(-1, 1, (half, n))
        a = np.concatenate([x, x], axis=1)[:, :k]
        b = np.concatenate([y, -y * nudge], axis=0)[:k]
        return a.astype(dtype), b.astype(dtype)
    lo, hi = exponents

    def spread(shape: tuple[int, int]) -> np.ndarray:
        signed = rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape)
        return (signed * 2.0 ** rng.integers(lo, hi + 1, shape)).astype(dtype)

    return spread((m, k)), spread((k, n))


def long_double_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(AB, |A| |B|) in long double (64-bit significands on x86: 11 bits beyond float64's)."""
    wide_a, wide_b = a.astype(np.longdouble), b.astype(np.longdouble)
    return wide_a @ wide_b, np.abs(wide_a) @ np.abs(wide_b)


def relative_errors(got: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> dict[str, float]:
    """Median and 99.9th percentile of |C - exact| / (|A| |B|) elementwise."""
    rel = np.asarray(np.abs(got.astype(np.longdouble) - exact)
                     / np.maximum(scale, np.finfo(np.float64).tiny), np.float64)  # fmt: skip
    if not np.isfinite(rel).all():
        return {"median": math.inf, "p999": math.inf}
    return {"median": float(np.median(rel)), "p999": float(np.percentile(rel, 99.9))}


def speed_rows(shapes: list[tuple[int, int, int]], rng: np.random.Generator,
               ) -> list[dict[str, Any]]:  # fmt: skip
    import cupy

    import tunedgemm as tg

    rows = []
    for m, n, k in shapes:
        a = cupy.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
        b = cupy.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
        makers = calls_into(a, b)
        peer_cs = {name: cupy.full((m, n), np.nan, np.float32, order="F")
                   for name in ("cuBLAS SGEMM", "cuBLAS TF32")}  # fmt: skip
        peers = {name: makers[name](c_peer) for name, c_peer in peer_cs.items()}
        for peer in peers.values():
            peer()
        sgemm_result = cupy.asnumpy(peer_cs["cuBLAS SGEMM"]).astype(np.float64)
        size = max(float(np.abs(sgemm_result).max()), 1e-30)
        for mode in MODES:
            peer_name = "cuBLAS TF32" if mode == "tf32" else "cuBLAS SGEMM"
            c = cupy.full((m, n), np.nan, np.float32, order="F")
            ours = makers[mode](c)
            ours()
            got = cupy.asnumpy(c).astype(np.float64)
            # Against SGEMM's result, in units of max |C|: a sanity check, not the error table.
            difference = float(np.abs(got - sgemm_result).max()) / size
            ours_us, peer_us = bench_device.compare(ours, peers[peer_name])
            row = {"shape": [m, n, k], "mode": mode, "peer": peer_name, "ours_us": ours_us,
                   "peer_us": peer_us, "ratio": peer_us / ours_us,
                   "tflops": tflops(m, n, k, ours_us), "peer_tflops": tflops(m, n, k, peer_us),
                   "vs_sgemm_result": difference,
                   "chosen": tg.plan(a, b, c, precision=mode).explain()}  # fmt: skip
            rows.append(row)
            print(f"{m:>6}x{n:<5}x{k:<6} {mode:>7} {row['tflops']:8.1f} {peer_name:>13} "
                  f"{row['peer_tflops']:8.1f} {row['ratio']:6.2f} {difference:9.1e}", flush=True)
            if not np.isfinite(got).all():
                print(f"  {mode} {m}x{n}x{k}: non-finite or unwritten elements", file=sys.stderr)
        del a, b, makers, peers, peer_cs
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def error_rows(rng: np.random.Generator) -> list[dict[str, Any]]:
    import cupy

    rows = []
    m = n = ERROR_MN
    for inputs in ("uniform", "spread"):
        for k in ERROR_K:
            ha, hb = operands(inputs, m, n, k, rng)
            a64, b64 = ha.astype(np.float64), hb.astype(np.float64)
            exact, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
            makers = calls_into(cupy.asarray(ha), cupy.asarray(hb))
            row: dict[str, Any] = {"inputs": inputs, "m": m, "n": n, "k": k}
            for name, make in makers.items():
                c = cupy.full((m, n), np.nan, np.float32, order="F")
                make(c)()
                got = cupy.asnumpy(c).astype(np.float64)
                rel = np.abs(got - exact) / np.maximum(scale, np.finfo(np.float64).tiny)
                if not np.isfinite(rel).all():
                    row[name] = {"median": math.inf, "p999": math.inf}
                    continue
                row[name] = {"median": float(np.median(rel)),
                             "p999": float(np.percentile(rel, 99.9))}  # fmt: skip
            base = row["cuBLAS SGEMM"]
            for mode in MODES:
                row[mode]["x_sgemm_median"] = row[mode]["median"] / base["median"]
                row[mode]["x_sgemm_p999"] = row[mode]["p999"] / base["p999"]
            rows.append(row)
            cells = "  ".join(f"{name} {row[name]['median']:.1e}/{row[name]['p999']:.1e}"
                              for name in makers)  # fmt: skip
            print(f"{inputs:>8} k={k:<6} {cells}", flush=True)
            print(f"{'':>17} 3xtf32 / SGEMM: median {row['3xtf32']['x_sgemm_median']:.2f}, "
                  f"p99.9 {row['3xtf32']['x_sgemm_p999']:.2f}", flush=True)  # fmt: skip
    return rows


OZAKI_SQUARES = [(s, s, s) for s in (2048, 4096, 8192, 16384)]
OZAKI_SPREAD = (-30, 30)  # the exponent range (docs/precision.md)
OZAKI_INPUTS = ("uniform", "spread", "cancel")
OZAKI_ERROR_MN = 128  # the long-double reference is a naive loop: 128^2 x 16384 takes ~4 s


def ozaki_speed_rows(dtype: np.dtype, shapes: list[tuple[int, int, int]],
                     rng: np.random.Generator) -> list[dict[str, Any]]:  # fmt: skip
    """precision="ozaki" through the public sgemm/dgemm on CuPy arrays into preallocated c,
    against cuBLAS SGEMM/DGEMM (scikit-cuda) into its own preallocated c."""
    import cupy

    import tunedgemm as tg

    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    rows = []
    for m, n, k in shapes:
        a = cupy.asarray(rng.uniform(-1, 1, (m, k)).astype(dtype))
        b = cupy.asarray(rng.uniform(-1, 1, (k, n)).astype(dtype))
        c_peer = cupy.full((m, n), np.nan, dtype, order="F")
        peer = bench_device.cublas_into(c_peer, a, b, dtype)
        peer()
        c = cupy.full((m, n), np.nan, dtype, order="F")

        def ours(a: Any = a, b: Any = b, c: Any = c) -> None:
            routine(1.0, a, b, c=c, overwrite_c=1, precision="ozaki")

        ours()
        native = cupy.asnumpy(c_peer).astype(np.float64)
        got = cupy.asnumpy(c).astype(np.float64)
        difference = float(np.abs(got - native).max()) / max(float(np.abs(native).max()), 1e-30)
        ours_us, peer_us = bench_device.compare(ours, peer)
        peer_name = f"cuBLAS {'S' if dtype == np.float32 else 'D'}GEMM"
        row = {"dtype": np.dtype(dtype).name, "shape": [m, n, k], "mode": "ozaki",
               "peer": peer_name, "ours_us": ours_us, "peer_us": peer_us,
               "ratio": peer_us / ours_us, "tflops": tflops(m, n, k, ours_us),
               "peer_tflops": tflops(m, n, k, peer_us), "vs_native_result": difference,
               "chosen": tg.plan(a, b, c, precision="ozaki").explain()}  # fmt: skip
        rows.append(row)
        print(f"{np.dtype(dtype).name:>8} {m:>6}x{n:<5}x{k:<6} ozaki {row['tflops']:8.1f} "
              f"{peer_name:>12} {row['peer_tflops']:8.1f} {row['ratio']:6.2f} "
              f"{difference:9.1e}  {row['chosen'][:60]}", flush=True)  # fmt: skip
        del a, b, c, c_peer
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def ozaki_error_rows(dtype: np.dtype, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Errors of the emulation (precision "ozaki-N" with the default N: plain "ozaki" runs
    IEEE arithmetic where that is faster, as at these sizes) and of cuBLAS's native GEMM on
    the same inputs, m = n = OZAKI_ERROR_MN, k in ERROR_K, for each of OZAKI_INPUTS, against
    a long-double reference."""
    import cupy

    import tunedgemm as tg
    from tunedgemm import ozaki

    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    mode = f"ozaki-{ozaki.default_count(np.dtype(dtype))}"
    rows = []
    m = n = OZAKI_ERROR_MN
    for inputs in OZAKI_INPUTS:
        for k in ERROR_K:
            ha, hb = operands(inputs, m, n, k, rng, dtype, OZAKI_SPREAD)
            a, b = cupy.asarray(ha), cupy.asarray(hb)
            c_native = cupy.full((m, n), np.nan, dtype, order="F")
            bench_device.cublas_into(c_native, a, b, dtype)()
            c = cupy.full((m, n), np.nan, dtype, order="F")
            routine(1.0, a, b, c=c, overwrite_c=1, precision=mode)
            exact, scale = long_double_reference(ha, hb)
            row: dict[str, Any] = {
                "dtype": np.dtype(dtype).name, "inputs": inputs, "m": m, "n": n, "k": k,
                "ozaki": relative_errors(cupy.asnumpy(c), exact, scale),
                "native": relative_errors(cupy.asnumpy(c_native), exact, scale),
                "chosen": tg.plan(a, b, c, precision=mode).explain()}  # fmt: skip
            row["emulated"] = "latest call emulated" in row["chosen"]
            for stat in ("median", "p999"):
                row[f"x_native_{stat}"] = row["ozaki"][stat] / max(row["native"][stat], 1e-300)
            rows.append(row)
            print(f"{np.dtype(dtype).name:>8} {inputs:>8} k={k:<6} {mode} "
                  f"{row['ozaki']['median']:.1e}/{row['ozaki']['p999']:.1e}  native "
                  f"{row['native']['median']:.1e}/{row['native']['p999']:.1e}  x native "
                  f"{row['x_native_median']:.2f}/{row['x_native_p999']:.2f}"
                  f"{'' if row['emulated'] else '  (fell back to IEEE)'}", flush=True)
    return rows


def ozaki_main(args: argparse.Namespace, stamp: str, started: float) -> int:
    """--ozaki: the emulated mode's speed and error tables, both dtypes."""

    shapes = OZAKI_SQUARES[:3] if args.quick else OZAKI_SQUARES + IRREGULAR
    if args.shapes:
        shapes = [tuple(int(x) for x in shape.split("x")) for shape in args.shapes]
    rng = np.random.default_rng(0)
    speed: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        speed += ozaki_speed_rows(dtype, shapes, rng)
    print(f"\n# error at m = n = {OZAKI_ERROR_MN}: median/p99.9 of |C - exact| / (|A| |B|)")
    for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
        errors += ozaki_error_rows(dtype, rng)
    record = write_record(args.out, "bench_precision_ozaki.json", stamp, started, speed, errors)
    print(f"# wrote bench_precision_ozaki.json after {record['seconds']:.0f} s")
    return 0


def write_record(folder: str, name: str, stamp: str, started: float,
                 speed: list[dict[str, Any]], errors: list[dict[str, Any]],
                 ) -> dict[str, Any]:  # fmt: skip
    """Write the run's record (date, command, GPU, cuBLAS, rows) as folder/name; return it."""
    import tunedgemm as tg
    from tunedgemm import cuda, reference

    record = {"created": stamp, "command": " ".join(["python", *sys.argv]),
              "gpu": cuda.device_name(), "reference": reference.status()[1],
              "tunedgemm": tg.__version__, "speed": speed, "errors": errors,
              "seconds": time.perf_counter() - started}  # fmt: skip
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(record, indent=1, default=str) + "\n")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results", help="folder for the JSON")
    parser.add_argument("--quick", action="store_true", help="fewer, smaller shapes")
    parser.add_argument("--plot", action="store_true", help="also write precision.png")
    parser.add_argument("--shapes", nargs="+", metavar="MxNxK", help="these shapes only")
    parser.add_argument("--ozaki", action="store_true", help="the ozaki mode instead, sgemm "
                        "and dgemm against cuBLAS SGEMM/DGEMM (bench_precision_ozaki.json)")
    args = parser.parse_args()
    started = time.perf_counter()
    missing = bench_device.why_not_here("bench_precision", ("cupy",))
    if missing:
        print(missing)
        return 1
    from tunedgemm import cuda, reference
    if args.quick:
        bench_device._LOOPS[0] = 3
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {cuda.device_name()}, {stamp}, {reference.status()[1]}")
    if args.ozaki:
        return ozaki_main(args, stamp, started)
    shapes = ([s for s in SQUARES if s[0] <= 4096] + IRREGULAR[:3]) if args.quick else (
        SQUARES + IRREGULAR)  # fmt: skip
    if args.shapes:
        shapes = [tuple(int(x) for x in shape.split("x")) for shape in args.shapes]
    rng = np.random.default_rng(0)
    print(f"{'m x n x k':>19} {'mode':>7} {'TFLOP/s':>8} {'peer':>13} {'TFLOP/s':>8} "
          f"{'ratio':>6} {'vs SGEMM':>9}", flush=True)  # fmt: skip
    speed = speed_rows(shapes, rng)
    print(f"\n# error at m = n = {ERROR_MN}: median/p99.9 of |C - exact| / (|A| |B|)", flush=True)
    errors = error_rows(rng)
    record = write_record(args.out, "bench_precision.json", stamp, started, speed, errors)
    out = Path(args.out)
    if args.plot:
        for path in (out / "precision.png", HERE.parent / "docs" / "img" / "precision.png"):
            plot(record, path)
    print(f"# wrote {out / 'bench_precision.json'} after {record['seconds']:.0f} s")
    return 0


def plot(record: dict[str, Any], path: Path) -> None:
    """Ratio to each mode's peer against m*n*k: squares joined by lines, irregular shapes as
    open markers; one colour per mode (Okabe-Ito)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"ieee": "#0072B2", "3xtf32": "#D55E00", "tf32": "#009E73"}
    fig, ax = plt.subplots(figsize=(8, 5))
    for mode in MODES:
        rows = [r for r in record["speed"] if r["mode"] == mode]
        squares = sorted((r for r in rows if len(set(r["shape"])) == 1),
                         key=lambda r: math.prod(r["shape"]))  # fmt: skip
        others = [r for r in rows if len(set(r["shape"])) > 1]
        label = f"{mode} / {rows[0]['peer']}" if rows else mode
        ax.plot([math.prod(r["shape"]) for r in squares], [r["ratio"] for r in squares],
                marker="o", color=colours[mode], label=f"{label} (squares)")  # fmt: skip
        ax.plot([math.prod(r["shape"]) for r in others], [r["ratio"] for r in others],
                linestyle="none", marker="s", markerfacecolor="none", color=colours[mode],
                label=f"{label} (irregular)")  # fmt: skip
    ax.axhline(1.0, color="0.4", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("m*n*k")
    ax.set_ylabel("peer's time / tunedgemm's time")
    ax.set_title("tunedgemm.sgemm(..., c=c, precision=mode) on CuPy arrays", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"{record['gpu']}, {record['created']}", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
