"""Memory-bound products: the bytes a second the public call and cuBLAS reach, against HBM's.

Usage: python benchmarks/bench_memory_bound.py [--dtypes float32,float64] [--trans NN,TN]
       [--shapes MxNxK,...] [--out DIR] [--name STEM] [--plot] [--before]

Issue 15 (item 2) asks for memory speed where a shape is memory-bound. A product whose
arithmetic intensity (2 m n k flops over the least bytes it must move: A, B and C once
each) is below the ridge point (the compute ceiling over HBM's bandwidth: FFMA 64 and DMMA
66.5 TFLOP/s over 3.35 TB/s, about 19-20 flops a byte) can go no faster than its bytes
allow. At such shapes (GEMV-like panels, where m or n is small, and small-k products) this
times, on column-major PyCUDA GPUArrays (leading dimensions padded to 16 bytes, as
bench_tuning lays them out), the public sgemm/dgemm into c with own kernels only and again
with cuBLAS as a candidate, each in bench_device's interleaved loops against cuBLAS
(scikit-cuda) into c on the same operands, its result checked against a float64 product;
and a device-to-device copy of COPY_BYTES in the same run, the practical ceiling. Each time
becomes GB/s (least bytes / time) and a share of HBM's 3.35 TB/s and of the copy's rate.
--before also times own kernels without the panel kernel (tunedgemm/gemv_like.py) among
autotuning's candidates, the call as it was before it. Writes STEM.json (default
bench_memory_bound) and, with --plot, STEM.png.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

HBM_BYTES_PER_S = 3.35e12  # the H100 SXM's HBM3, as specified
# Compute ceilings measured on the H100 (../shared/device/README.md, the developers' guide):
# FFMA for float32, DMMA (mma.sync m16n8k4/k8/k16) for float64.
CEILING_FLOPS = {"float32": 64e12, "float64": 66.5e12}
COPY_BYTES = 1 << 30  # the copy's source; it reads and writes as much (2 GiB moved)
# The public call's arms: (name, cuBLAS a candidate, the panel kernel a candidate, label).
# --before adds BEFORE first: own kernels as they were without tunedgemm/gemv_like.py.
ARMS = [("own", False, True, "own kernels only"), ("auto", True, True, "with cuBLAS a candidate")]
BEFORE = ("before", False, False, "own kernels only, no panel kernel")
# GEMV-like panels with m or n small and n = k or m = k long, tall panels of small n, and
# small-k products over a large C: every one below float32's and float64's ridge points.
SHAPES = ((1, 8192, 8192), (4, 8192, 8192), (16, 8192, 8192), (32, 8192, 8192),
          (8192, 1, 8192), (8192, 4, 8192), (8192, 16, 8192), (8192, 32, 8192),
          (65536, 16, 1024), (16, 65536, 1024),
          (8192, 8192, 8), (8192, 8192, 16), (8192, 8192, 32), (16384, 16384, 16))  # fmt: skip


def least_bytes(m: int, n: int, k: int, itemsize: int) -> int:
    """The bytes a product must move at least (beta 0): A and B read once, C written once."""
    return itemsize * (m * k + k * n + m * n)


def intensity(m: int, n: int, k: int, itemsize: int) -> float:
    """Flops per byte of the least traffic: 2 m n k over least_bytes."""
    return 2.0 * m * n * k / least_bytes(m, n, k, itemsize)


def ridge(dtype: str) -> float:
    """The flops per byte above which the compute ceiling, not HBM, bounds a product."""
    return CEILING_FLOPS[dtype] / HBM_BYTES_PER_S


def memory_bound(shape: tuple[int, int, int], dtype: str) -> bool:
    """Whether HBM's bandwidth bounds the product before the compute ceiling does."""
    return intensity(*shape, np.dtype(dtype).itemsize) < ridge(dtype)


def gigabytes_per_s(shape: tuple[int, int, int], dtype: str, us: float) -> float:
    """The least bytes of the product over its time, in GB/s."""
    return least_bytes(*shape, np.dtype(dtype).itemsize) / (us * 1e-6) / 1e9


def copy_rate() -> float:
    """GB/s of a device-to-device copy of COPY_BYTES (bytes read plus bytes written), the
    median of bench_device's timed loops on the legacy default stream."""
    import pycuda.driver as driver
    from bench_device import LOOPS, time_per_call

    source, target = driver.mem_alloc(COPY_BYTES), driver.mem_alloc(COPY_BYTES)
    try:

        def copy() -> None:
            driver.memcpy_dtod(target, source, COPY_BYTES)

        for _ in range(3):
            copy()
        us = statistics.median(time_per_call(copy, 5) for _ in range(LOOPS))
    finally:
        source.free()
        target.free()
    return 2 * COPY_BYTES / (us * 1e-6) / 1e9


Arm = tuple[str, bool, bool, str]


def time_shape(shape: tuple[int, int, int], dtype: str, trans: tuple[bool, bool],
               rng: np.random.Generator, arms: list[Arm]) -> dict[str, Any]:  # fmt: skip
    """The shape's row: the public call into c in each arm, each against cuBLAS into c in
    interleaved loops, as us and GB/s (and the median cuBLAS time of those loops)."""
    import bench_tuning
    from bench_device import compare

    from tunedgemm import gemv_like
    from tunedgemm.tuning import problems

    problem = problems.make(*shape, dtype, *trans, rng, padded=True)
    peer = bench_tuning._cublas_call(problem.form, problem.dtype)
    row: dict[str, Any] = {"shape": list(shape), "dtype": dtype,
                           "trans": "".join("T" if t else "N" for t in trans),
                           "intensity": intensity(*shape, problem.dtype.itemsize),
                           "memory_bound": memory_bound(shape, dtype),
                           "least_bytes": least_bytes(*shape, problem.dtype.itemsize)}  # fmt: skip
    peer_us = []
    for arm, allowed, panels, _ in arms:
        gemv_like.ENABLED = panels
        try:
            with bench_tuning.cublas_setting(allowed):
                ours = bench_tuning.public_call(problem)  # (checked against float64 once)
                ours_us, cublas_us = compare(ours, peer)
                row[f"{arm}_choice"] = bench_tuning._public_choice(problem)
        finally:
            gemv_like.ENABLED = True
        row[f"{arm}_us"], row[f"{arm}_over_cublas"] = ours_us, cublas_us / ours_us
        peer_us.append(cublas_us)
    row["cublas_us"] = statistics.median(peer_us)
    for arm in [a[0] for a in arms] + ["cublas"]:
        row[f"{arm}_gbps"] = gigabytes_per_s(shape, dtype, row[f"{arm}_us"])
    return row


def _arms_of(rows: list[dict[str, Any]]) -> list[str]:
    """The arms the rows hold, in ARMS' order (BEFORE first where timed)."""
    return [a[0] for a in (BEFORE, *ARMS) if rows and f"{a[0]}_us" in rows[0]]


def summary(rows: list[dict[str, Any]], copy_gbps: float) -> list[dict[str, Any]]:
    """Per dtype and transpose pair over its memory-bound rows: each arm's geometric-mean
    ratio to cuBLAS and its median share of the copy's rate."""
    out = []
    for key in dict.fromkeys((r["dtype"], r["trans"]) for r in rows):
        mine = [r for r in rows if (r["dtype"], r["trans"]) == key and r["memory_bound"]]
        if not mine:
            continue
        entry: dict[str, Any] = {"dtype": key[0], "trans": key[1], "shapes": len(mine)}
        for arm in _arms_of(mine):
            ratios = [r[f"{arm}_over_cublas"] for r in mine]
            entry[f"{arm}_over_cublas"] = math.exp(statistics.fmean(map(math.log, ratios)))
            entry[f"{arm}_worst"] = min(ratios)
        for arm in [*_arms_of(mine), "cublas"]:
            entry[f"{arm}_copy_share"] = statistics.median(r[f"{arm}_gbps"] / copy_gbps
                                                           for r in mine)  # fmt: skip
        out.append(entry)
    return out


def _label(row: dict[str, Any]) -> str:
    return "x".join(map(str, row["shape"]))


def _print_row(row: dict[str, Any]) -> None:
    arms = _arms_of([row])
    bound = "" if row["memory_bound"] else " (compute-bound)"
    rates = " ".join(f"{row[f'{arm}_gbps']:8.0f}" for arm in [*arms, "cublas"])
    ratios = " ".join(f"{row[f'{arm}_over_cublas']:7.2f}" for arm in arms)
    print(f"{row['dtype']:8} {row['trans']} {_label(row):>17} {row['intensity']:6.1f} {rates} "
          f"{ratios}{bound}", flush=True)  # fmt: skip


def plot(record: dict[str, Any], path: Path) -> None:
    """GB/s of each arm per shape, one panel per dtype and transpose pair, with HBM's
    bandwidth and the measured copy's rate drawn across."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record["rows"]
    panels = list(dict.fromkeys((r["dtype"], r["trans"]) for r in rows))
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 3.6 * len(panels)), squeeze=False)
    # Okabe-Ito: distinguishable with the common colour-vision deficiencies.
    colours = {"before": "#CC79A7", "own": "#0072B2", "auto": "#009E73", "cublas": "#E69F00"}
    labels = {a[0]: a[3] for a in (BEFORE, *ARMS)} | {"cublas": "cuBLAS into c"}
    arms = [*_arms_of(rows), "cublas"]
    width = 0.8 / len(arms)
    for ax, (dtype, trans) in zip(axes[:, 0], panels, strict=True):
        mine = [r for r in rows if (r["dtype"], r["trans"]) == (dtype, trans)]
        x = np.arange(len(mine))
        for i, arm in enumerate(arms):
            ax.bar(x + (i - (len(arms) - 1) / 2) * width, [r[f"{arm}_gbps"] for r in mine],
                   width, label=labels[arm], color=colours[arm])  # fmt: skip
        ax.axhline(HBM_BYTES_PER_S / 1e9, color="0.3", linestyle="--", linewidth=1,
                   label="HBM3, 3.35 TB/s")  # fmt: skip
        ax.axhline(record["copy_gbps"], color="0.3", linestyle=":", linewidth=1,
                   label=f"device copy, {record['copy_gbps']:.0f} GB/s")  # fmt: skip
        ax.set_xticks(x, [_label(r) + ("" if r["memory_bound"] else "*") for r in mine],
                      fontsize=7, rotation=20)  # fmt: skip
        ax.set_ylabel("GB/s (least bytes / time)")
        ax.set_title(f"{dtype} {trans}: sgemm/dgemm into c on GPUArrays (* compute-bound)",
                     fontsize=9)  # fmt: skip
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=5, loc="upper right")
    fig.suptitle(f"{record['gpu']}, {record['created']}: {record['command']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--trans", default="NN", help="transpose pairs, comma-separated")
    parser.add_argument("--shapes", help="MxNxK,... in place of SHAPES")
    parser.add_argument("--out", default="benchmarks/results", help="folder for the JSON")
    parser.add_argument("--name", default="bench_memory_bound", help="stem of the files")
    parser.add_argument("--plot", action="store_true", help="also write the plot (PNG)")
    parser.add_argument("--before", action="store_true", help="also time own kernels without "
                        "the panel kernel's candidates (tunedgemm/gemv_like.py), first")
    args = parser.parse_args()
    from bench_device import why_not_here

    missing = why_not_here("bench_memory_bound", ("cupy", "pycuda"))
    if missing:
        print(missing)
        return 1
    import tunedgemm as tg
    from tunedgemm import cuda

    arms = [BEFORE, *ARMS] if args.before else ARMS
    shapes = SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(d) for d in s.split("x")) for s in args.shapes.split(","))
    copy_gbps = copy_rate()
    print(f"device-to-device copy: {copy_gbps:.0f} GB/s ({copy_gbps / 3350:.2f} of HBM's 3.35 "
          "TB/s)\n")  # fmt: skip
    names = [a[0] for a in arms]
    print(f"{'dtype':8} tr {'m x n x k':>17} {'flop/B':>6} "
          + " ".join(f"{name + ' GB/s':>8}" for name in [*names, "cublas"]) + " "
          + " ".join(f"{name + '/cB':>7}" for name in names))  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python", *sys.argv]),
        "gpu": cuda.device_name(),
        "tunedgemm": tg.__version__,
        "arms": [{"name": a[0], "cublas": a[1], "gemv_like": a[2], "label": a[3]} for a in arms],
        "copy_gbps": copy_gbps,
        "hbm_gbps": HBM_BYTES_PER_S / 1e9,
        "rows": [],
        "failed": [],
    }
    rng = np.random.default_rng()
    for dtype in args.dtypes.split(","):
        for pair in args.trans.split(","):
            trans = (pair[0] == "T", pair[1] == "T")
            for shape in shapes:
                try:
                    record["rows"].append(time_shape(shape, dtype, trans, rng, arms))
                    _print_row(record["rows"][-1])
                except Exception as exc:  # recorded; the other shapes still run
                    record["failed"].append({"shape": list(shape), "dtype": dtype, "trans": pair,
                                             "error": f"{type(exc).__name__}: {exc}"})  # fmt: skip
                    print(f"{dtype:8} {pair} {'x'.join(map(str, shape)):>17} FAILED: "
                          f"{record['failed'][-1]['error']}", flush=True)  # fmt: skip
                # written after every shape, so that a run cut short keeps what it timed
                record["summary"] = summary(record["rows"], copy_gbps)
                (out / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print("\nmemory-bound shapes: geometric mean over cuBLAS (worst), median share of the copy")
    for s in record["summary"]:
        ratios = ", ".join(f"{arm} {s[f'{arm}_over_cublas']:.2f} ({s[f'{arm}_worst']:.2f})"
                           for arm in names)  # fmt: skip
        shares = ", ".join(f"{arm} {s[f'{arm}_copy_share']:.2f}" for arm in [*names, "cublas"])
        print(f"{s['dtype']:8} {s['trans']} ({s['shapes']} shapes): {ratios}; copy share {shares}")
    if args.plot and record["rows"]:
        plot(record, out / f"{args.name}.png")
    return 1 if record["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
