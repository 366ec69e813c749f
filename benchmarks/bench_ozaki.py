"""Ozaki scheme II on the GPU: INT8 GEMM TOPS, and emulated dgemm / sgemm against cuBLAS.

Usage: python benchmarks/bench_ozaki.py [--out DIR] [--sizes 4096 8192] [--int8-only]
       [--all-mma] [--repeats N]

For each square size: the batched INT8 GEMMs of both families, all moduli of the default
count (16) in one launch, in TOPS = 2 n^3 count / time: every config of int8_wgmma (wgmma,
sm_90 only) and the mma.sync family's default and a few others (--all-mma: its whole space);
the best of each family side by side. With --int8-only that is all. Otherwise the emulated
dgemm (16 moduli) and sgemm (8) through tunedgemm.ozaki_device against cuBLAS DGEMM / SGEMM
(tunedgemm.reference) on the same uniform(-1, 1) column-major operands, with the time split
into conversion / guard (magnitude GEMM and test) / INT8 GEMM / reconstruction by CUDA events
between the phases (the INT8 family the GPU's default picks: TUNEDGEMM_OZAKI_GEMM), and the
conversion's and reconstruction's GB/s (the bytes they must move, ozaki_device.pass_bytes, over
their time; the H100's HBM3 copies at about 3 TB/s). Medians of 5 runs (--repeats) after a
warm-up, timed by CUDA events; error (median and 99.9th percentile of |C - AB| / (|A||B|) on a
128 x 128 sample, AB in long double) for both. Prints tables and writes DIR/bench_ozaki.json
(DIR/bench_ozaki_int8.json with --int8-only).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPEATS = 5  # timed runs per measurement (--repeats)
PHASES = ("conversion", "guard", "int8_gemm", "reconstruction")  # ozaki_device.gemm's marks
SAMPLE = 128
GEMM_VARIANTS = [{}, {"BK": 64, "STAGES": 4}, {"STAGES": 4, "BK": 64, "BM": 256, "BN": 128},
                 {"BM": 128, "BN": 128, "WM": 64, "WN": 32}]  # fmt: skip


def _events(count: int) -> list[Any]:
    import pycuda.driver as drv

    return [drv.Event() for _ in range(count)]


def _median_ms(run, repeats: int | None = None) -> float:
    import pycuda.driver as drv

    repeats = REPEATS if repeats is None else repeats
    run()
    drv.Context.synchronize()
    times = []
    for _ in range(repeats):
        start, end = _events(2)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(end.time_since(start))
    return float(np.median(times))


def int8_configs(all_mma: bool) -> list[Any]:
    """The INT8 GEMM configs to time: every int8_wgmma config (and its probes) where the GPU
    has wgmma, and the mma.sync family's GEMM_VARIANTS (or its whole space)."""
    from tunedgemm import cuda
    from tunedgemm.families import int8, int8_wgmma
    from tunedgemm.params import KernelConfig

    configs = []
    if cuda.arch() in int8_wgmma.ARCHS:
        configs = list(int8_wgmma.FAMILY.space("float64")) + int8_wgmma.probes()
    if all_mma:
        return configs + list(int8.FAMILY.space("float64"))
    return configs + [KernelConfig.make(int8.NAME, {**int8.DEFAULTS, **change})
                      for change in GEMM_VARIANTS]  # fmt: skip


def bench_int8(size: int, count: int, configs: list[Any]) -> list[dict[str, Any]]:
    from pycuda import gpuarray

    from tunedgemm import ozaki
    from tunedgemm.families import ozaki_family_of
    from tunedgemm.ozaki_device import gemm_launcher

    rng = np.random.default_rng()
    a = gpuarray.to_gpu(rng.integers(-128, 128, (count, size, size), dtype=np.int8))
    b = gpuarray.to_gpu(rng.integers(-128, 128, (count, size, size), dtype=np.int8))
    c = gpuarray.empty((count, size, size), np.uint8)
    mods = gpuarray.to_gpu(np.array(ozaki.moduli(count).values, np.int32))
    rows = []
    for config in configs:
        family = ozaki_family_of(config)
        problems = family.violations(config, "float64")
        base = {"family": family.name, "config": str(config), "size": size, "count": count}
        if problems:
            rows.append({**base, "error": "; ".join(problems)})
            continue
        try:
            launcher, (tile_rows, tile_cols) = gemm_launcher(config)
            args = (size, size, size, int(a.gpudata), size * size, int(b.gpudata), size * size,
                    int(c.gpudata), size * size, size, int(mods.gpudata))  # fmt: skip
            grid = (size // tile_rows, size // tile_cols, count)
            ms = _median_ms(lambda: launcher.launch(grid, 0, args))  # noqa: B023
        except Exception as exc:  # a config that fails is reported, not fatal
            rows.append({**base, "error": repr(exc)})
            print(f"int8 {size}^3 x{count} {config}: failed: {exc!r}", flush=True)
            continue
        tops = 2.0 * size**3 * count / (ms * 1e-3) / 1e12
        rows.append({**base, "ms": ms, "tops": tops})
        print(f"int8 {size}^3 x{count} {config}: {ms:.3f} ms, {tops:.0f} TOPS", flush=True)
    return rows


def int8_table(rows: list[dict[str, Any]]) -> str:
    """Every timed config, fastest first per size, then the best of each family per size."""
    timed = sorted((r for r in rows if "tops" in r), key=lambda r: (r["size"], -r["tops"]))
    lines = ["| size | family | config | ms | TOPS |", "|---:|---|---|---:|---:|"]
    lines += [f"| {r['size']} | {r['family']} | {r['config']} | {r['ms']:.3f} | {r['tops']:.0f} |"
              for r in timed]  # fmt: skip
    lines += ["", "| size | family | best config | TOPS | x mma.sync best |",
              "|---:|---|---|---:|---:|"]  # fmt: skip
    for size in sorted({r["size"] for r in timed}):
        best = {}
        for r in timed:
            if r["size"] == size and r["family"] not in best:
                best[r["family"]] = r
        reference = best.get("int8", {}).get("tops")
        for family, r in best.items():
            ratio = f"{r['tops'] / reference:.2f}" if reference else "-"
            lines.append(f"| {size} | {family} | {r['config']} | {r['tops']:.0f} | {ratio} |")
    return "\n".join(lines)


def _errors(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    exact = a.astype(np.longdouble) @ b.astype(np.longdouble)
    scale = np.abs(a.astype(np.longdouble)) @ np.abs(b.astype(np.longdouble))
    err = np.asarray(np.abs(c.astype(np.longdouble) - exact) / scale, np.float64)
    return float(np.median(err)), float(np.quantile(err, 0.999))


def bench_emulated(size: int, dtype: np.dtype) -> dict[str, Any]:
    import pycuda.driver as drv
    from pycuda import gpuarray

    from tunedgemm import ozaki, ozaki_device, reference
    from tunedgemm._layout import BlasForm

    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (size, size)).astype(dtype)
    b = rng.uniform(-1, 1, (size, size)).astype(dtype)
    da, db = gpuarray.to_gpu(a.ravel(order="F")), gpuarray.to_gpu(b.ravel(order="F"))
    dc = gpuarray.empty(size * size, dtype)
    form = BlasForm(False, False, size, size, size, int(da.gpudata), size, int(db.gpudata), size,
                    int(dc.gpudata), size, dtype.itemsize)  # fmt: skip
    count = ozaki.default_count(dtype)
    flops = 2.0 * size**3

    def sample() -> tuple[float, float]:
        c = dc.get().reshape((size, size)).T
        rows = rng.choice(size, SAMPLE, replace=False)
        cols = rng.choice(size, SAMPLE, replace=False)
        return _errors(a[rows], b[:, cols], c[np.ix_(rows, cols)])

    native_ms = _median_ms(lambda: reference.gemm(form, dtype, 1.0, 0.0, 0))
    native_err = sample()
    splits = []
    emulated_ms = []
    for index in range(REPEATS + 1):
        marks = _events(len(PHASES) + 1)
        marks[0].record()
        names = iter(marks[1:])
        outcome = ozaki_device.gemm(form, dtype.name, 1.0, 0.0, 0, count,
                                    marks=lambda _name: next(names).record())  # noqa: B023
        assert not outcome.fell_back(), outcome.reason
        marks[-1].synchronize()
        if index:  # the first run compiles and warms up
            phases = [marks[i + 1].time_since(marks[i]) for i in range(len(PHASES))]
            splits.append(phases)
            emulated_ms.append(marks[-1].time_since(marks[0]))
    drv.Context.synchronize()
    emulated_err = sample()
    split = np.median(np.array(splits), axis=0).tolist()
    ms = float(np.median(emulated_ms))
    moved = ozaki_device.pass_bytes(size, size, size, count, dtype.itemsize)
    rates = {name: moved[name] / (split[PHASES.index(name)] * 1e-3) / 1e9 for name in moved}
    row = {"dtype": dtype.name, "size": size, "count": count,
           "native_ms": native_ms, "native_tflops": flops / native_ms / 1e9,
           "emulated_ms": ms, "emulated_tflops": flops / ms / 1e9,
           "speedup": native_ms / ms,
           "split_ms": dict(zip(PHASES, split, strict=True)),
           "bytes": moved, "gb_per_s": rates,
           "native_error": {"median": native_err[0], "p999": native_err[1]},
           "emulated_error": {"median": emulated_err[0], "p999": emulated_err[1]}}  # fmt: skip
    print(f"{dtype.name} {size}^3 (ozaki-{count}): {ms:.2f} ms ({row['emulated_tflops']:.1f} "
          f"TFLOP/s) vs cuBLAS {native_ms:.2f} ms ({row['native_tflops']:.1f}): "
          f"x{row['speedup']:.2f}; split conv/guard/int8/recon = "
          f"{' / '.join(f'{t:.2f}' for t in split)} ms (conversion "
          f"{rates['conversion']:.0f} GB/s, reconstruction {rates['reconstruction']:.0f} "
          f"GB/s); error median/p99.9 "
          f"{emulated_err[0]:.2e}/{emulated_err[1]:.2e} vs {native_err[0]:.2e}/"
          f"{native_err[1]:.2e}", flush=True)  # fmt: skip
    return row


def main() -> None:
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="directory of bench_ozaki.json")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--int8-only", action="store_true",
                        help="time the INT8 GEMMs of both families only")  # fmt: skip
    parser.add_argument("--all-mma", action="store_true",
                        help="every config of the mma.sync family, not a few")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per median")
    args = parser.parse_args()
    REPEATS = args.repeats
    from tunedgemm import cuda, ozaki, ozaki_device

    cuda.context()
    started = time.time()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result: dict[str, Any] = {"created": stamp, "command": " ".join(["python", *sys.argv]),
                              "device": cuda.device().name(), "arch": cuda.arch(), "int8": [],
                              "emulated": []}  # fmt: skip
    configs = int8_configs(args.all_mma)
    ozaki_device.precompile_gemms(configs)  # nvcc in parallel, before any timing
    result["compile_seconds"] = time.time() - started
    for size in args.sizes:
        result["int8"] += bench_int8(size, ozaki.default_count(np.dtype(np.float64)), configs)
    print(int8_table(result["int8"]), flush=True)
    for size in [] if args.int8_only else args.sizes:
        for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
            try:
                result["emulated"].append(bench_emulated(size, dtype))
            except Exception as exc:  # report and go on with the next shape
                print(f"{dtype.name} {size}: failed: {exc!r}", flush=True)
                result["emulated"].append({"dtype": dtype.name, "size": size,
                                           "error": repr(exc)})  # fmt: skip
    result["seconds"] = time.time() - started
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("bench_ozaki_int8.json" if args.int8_only else "bench_ozaki.json")
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path} in {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
