"""Ozaki scheme II on the GPU: INT8 GEMM TOPS, and emulated dgemm / sgemm against cuBLAS.

Usage: python benchmarks/bench_ozaki.py [--out DIR] [--sizes 4096 8192]

For each square size: the batched INT8 GEMM (igemm_s8, default config and a few others, all
moduli of the default count in one launch) in TOPS = 2 n^3 count / time; then the emulated
dgemm (16 moduli) and sgemm (8) through tunedgemm.ozaki_device against cuBLAS DGEMM / SGEMM
(tunedgemm.reference) on the same uniform(-1, 1) column-major operands, with the time split
into conversion / guard (magnitude GEMM and test) / INT8 GEMM / reconstruction by CUDA events
between the phases, and the conversion's and reconstruction's GB/s (the bytes they must move,
ozaki_device.pass_bytes, over their time; the H100's HBM3 copies at about 3 TB/s). Medians of 5
runs after a warm-up; error (median and 99.9th percentile of |C - AB| / (|A||B|) on a 128 x 128
sample, AB in long double) for both. Prints a table and writes DIR/bench_ozaki.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPEATS = 5
PHASES = ("conversion", "guard", "int8_gemm", "reconstruction")  # ozaki_device.gemm's marks
SAMPLE = 128
GEMM_VARIANTS = [{}, {"BK": 64, "STAGES": 4}, {"STAGES": 4, "BK": 64, "BM": 256, "BN": 128},
                 {"BM": 128, "BN": 128, "WM": 64, "WN": 32}]  # fmt: skip


def _events(count: int) -> list[Any]:
    import pycuda.driver as drv

    return [drv.Event() for _ in range(count)]


def _median_ms(run, repeats: int = REPEATS) -> float:
    import pycuda.driver as drv

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


def bench_int8(size: int, count: int) -> list[dict[str, Any]]:
    from pycuda import gpuarray

    from tunedgemm import _driver, compiler, ozaki
    from tunedgemm.families import int8
    from tunedgemm.ozaki_device import gemm_defines
    from tunedgemm.params import KernelConfig

    rng = np.random.default_rng()
    a = gpuarray.to_gpu(rng.integers(-128, 128, (count, size, size), dtype=np.int8))
    b = gpuarray.to_gpu(rng.integers(-128, 128, (count, size, size), dtype=np.int8))
    c = gpuarray.empty((count, size, size), np.uint8)
    mods = gpuarray.to_gpu(np.array(ozaki.moduli(count).values, np.int32))
    rows = []
    for change in GEMM_VARIANTS:
        config = KernelConfig.make(int8.NAME, {**int8.DEFAULTS, **change})
        problems = int8.FAMILY.violations(config, "float64")
        if problems:
            rows.append({"config": str(config), "error": "; ".join(problems)})
            continue
        p = config.as_dict()
        smem = int8.FAMILY.smem_bytes(p, 1)
        try:
            launcher = _driver.Launcher(
                compiler.raw_function("igemm_s8.cu", gemm_defines(config), "igemm", smem),
                "iiiPqPqPqiP", (int8.FAMILY.threads(p), 1, 1), smem)  # fmt: skip
            args = (size, size, size, int(a.gpudata), size * size, int(b.gpudata), size * size,
                    int(c.gpudata), size * size, size, int(mods.gpudata))  # fmt: skip
            grid = (size // p["BM"], size // p["BN"], count)
            ms = _median_ms(lambda: launcher.launch(grid, 0, args))  # noqa: B023
        except Exception as exc:  # a config that fails is reported, not fatal
            rows.append({"config": str(config), "error": repr(exc)})
            continue
        tops = 2.0 * size**3 * count / (ms * 1e-3) / 1e12
        rows.append({"config": str(config), "size": size, "count": count, "ms": ms,
                     "tops": tops})  # fmt: skip
        print(f"int8 {size}^3 x{count} {config}: {ms:.3f} ms, {tops:.0f} TOPS", flush=True)
    return rows


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="directory of bench_ozaki.json")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = parser.parse_args()
    from tunedgemm import cuda, ozaki

    cuda.context()
    started = time.time()
    result: dict[str, Any] = {"device": cuda.device().name(), "int8": [], "emulated": []}
    for size in args.sizes:
        result["int8"] += bench_int8(size, ozaki.default_count(np.dtype(np.float64)))
    for size in args.sizes:
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
    (out / "bench_ozaki.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {out / 'bench_ozaki.json'} in {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
