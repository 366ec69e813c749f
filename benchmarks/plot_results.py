"""Plots for docs/ from the recorded benchmark results (no GPU needed).

Usage: python benchmarks/plot_results.py [--results docs/results] [--out docs/img]
Reads bench_kernels.json, bench_tuning.json, bench_host.json and (when there)
bench_multigpu.json; writes kernels.png, tuning.png, heatmap.png, host.png and multigpu.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def plot_kernels(data: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        rows = [r for r in data["rows"] if r["dtype"] == dtype]
        labels = [f"{r['m']}x{r['n']}x{r['k']}" for r in rows]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["tflops"] for r in rows], 0.4, label="tunedgemm (own kernels)")
        ax.bar(x + 0.2, [r["cublas_tflops"] for r in rows], 0.4, label="cuBLAS")
        for xi, r in zip(x, rows, strict=True):
            ax.text(xi, max(r["tflops"], r["cublas_tflops"]) + 0.8, f"{r['ratio']:.2f}",
                    ha="center", fontsize=7)  # fmt: skip
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{dtype} (numbers: ours / cuBLAS)")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=8)
    fig.suptitle(f"{data['device']}, {data['date']}: {data['command']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "kernels.png", dpi=110)


def plot_tuning(data: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        rec = data["random"][dtype]
        fixed = rec["best_fixed"]
        rows = sorted(rec["rows"], key=lambda r: np.prod(r["shape"]))
        flop = np.array([2e-9 * np.prod(r["shape"]) for r in rows])
        x = np.arange(len(rows))
        series = [("tuned", "table's predicted choice"), (fixed, "best single fixed config"),
                  ("cublas", "cuBLAS")]  # fmt: skip
        if "refined" in rows[0]:  # results from before run-time refinement lack it
            series.insert(0, ("refined", "tuned (predicted candidates timed at the shape)"))
        for key, label in series:
            ax.plot(x, flop / np.array([r[key] for r in rows]), "o-", label=label, ms=4)
        ax.set_xticks(x, ["x".join(map(str, r["shape"])) for r in rows], rotation=60,
                      ha="right", fontsize=7)  # fmt: skip
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{dtype}: random shapes off the tuning grid")
        ax.legend(fontsize=8)
    fig.suptitle(f"{data['device']}, {data['date']}: {data['command']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "tuning.png", dpi=110)


def plot_heatmap(data: dict, out: Path) -> None:
    ks = sorted({h["k"] for h in data["heatmap"]["float32"]})
    fig, axes = plt.subplots(2, len(ks), figsize=(5 * len(ks), 8.5))
    for row, dtype in enumerate(("float32", "float64")):
        heat = data["heatmap"][dtype]
        sizes = sorted({h["m"] for h in heat})
        for col, k in enumerate(ks):
            ratio = {(h["m"], h["n"], h["k"]): h["ratio"] for h in heat}
            grid = np.array([[ratio[(m, n, k)] for n in sizes] for m in sizes])
            ax = axes[row][col]
            im = ax.imshow(grid, cmap="RdYlGn", vmin=0.3, vmax=1.3, origin="lower")
            for i in range(len(sizes)):
                for j in range(len(sizes)):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
            ax.set_xticks(range(len(sizes)), sizes)
            ax.set_yticks(range(len(sizes)), sizes)
            ax.set_xlabel("N")
            ax.set_ylabel("M")
            ax.set_title(f"{dtype}, K={k}")
    fig.colorbar(im, ax=axes, shrink=0.6)
    fig.suptitle(f"Speed of the tuned own kernel relative to cuBLAS (>1: faster)\n"
                 f"{data['device']}, {data['date']}", fontsize=9)  # fmt: skip
    fig.savefig(out / "heatmap.png", dpi=110)


def plot_host(data: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, dtype in zip(axes[:2], ("float32", "float64"), strict=True):
        rows = [r for r in data["host_to_host"] if r["dtype"] == dtype]
        x = np.arange(len(rows))
        series = (("tunedgemm_ms", "tunedgemm"), ("cupy_ms", "CuPy plain path"),
                  ("numpy_ms", "NumPy (16 cores)"),
                  ("floor_ms", "max(pinned transfer, kernel)"))  # fmt: skip
        for i, (key, label) in enumerate(series):
            ax.bar(x + (i - 1.5) * 0.2, [r[key] for r in rows], 0.2, label=label)
        ax.set_yscale("log")
        ax.set_xticks(x, [f"{r['n']}^2" for r in rows])
        ax.set_ylabel("ms, NumPy arrays in and out (log)")
        ax.set_title(f"{dtype}: host to host")
        ax.legend(fontsize=7)
    ax = axes[2]
    for dtype in ("float32", "float64"):
        rows = [r for r in data["small"] if r["dtype"] == dtype]
        routine = "sgemm" if dtype == "float32" else "dgemm"
        ax.plot([r["n"] for r in rows], [r["ratio"] for r in rows], "o-", ms=3,
                label=f"{routine} / a@b")  # fmt: skip
        if "ratio_same_layout" in rows[0]:
            ax.plot([r["n"] for r in rows], [r["ratio_same_layout"] for r in rows], "^:", ms=3,
                    label=f"{routine} / (b.T@a.T).T")  # fmt: skip
        if "matmul_ratio" in rows[0]:
            ax.plot([r["n"] for r in rows], [r["matmul_ratio"] for r in rows], "s--", ms=3,
                    label=f"matmul / a@b ({dtype[5:]})")  # fmt: skip
    ax.axhline(1.1, color="grey", ls="--", lw=0.8, label="1.1 (floor)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (square)")
    ax.set_ylabel("tunedgemm time / NumPy time")
    route = data.get("small_host_route")
    ax.set_title("small host calls, on NumPy" + (f" (route in {route})" if route else ""))
    ax.set_ylim(top=1.5)  # room for the legend above the lines
    ax.legend(fontsize=6.5, loc="upper left", ncol=2)
    fig.suptitle(f"{data['device']}, {data['date']}: {data['command']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "host.png", dpi=110)


def plot_multigpu(data: dict, out: Path) -> None:
    """Host products' speed against GPU count (CuPy's plain path on one GPU beside them), and
    tunedgemm.dask against dask.array's own matmul against GPU workers."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ax = axes[0]
    rows = [r for r in data.get("host_to_host", []) if "error" not in r]
    for dtype, n in sorted({(r["dtype"], r["n"]) for r in rows}):
        line = sorted((r["gpus"], 2e-9 * n**3 / r["tunedgemm_ms"]) for r in rows
                      if (r["dtype"], r["n"]) == (dtype, n))  # fmt: skip
        drawn = ax.plot(*zip(*line, strict=True), "o-", ms=4, label=f"{dtype} {n}^2")
        peer = [r["cupy_ms"] for r in rows if (r["dtype"], r["n"], r["gpus"]) == (dtype, n, 1)
                and "cupy_ms" in r]  # fmt: skip
        if peer:
            ax.plot([1], [2e-9 * n**3 / peer[0]], "x", ms=8, color=drawn[0].get_color())
    ax.set_xlabel("GPUs (TUNEDGEMM_DEVICES)")
    ax.set_ylabel("TFLOP/s, NumPy arrays in and out")
    ax.set_title("host to host (x: CuPy's plain path, one GPU)")
    ax.legend(fontsize=7)
    ax = axes[1]
    rows = data.get("dask", [])
    if rows:
        workers = [r["workers"] for r in rows]
        ax.plot(workers, [r["tunedgemm_s"] for r in rows], "o-", label="tunedgemm.dask.matmul")
        ax.plot(workers, [r["dask_s"] for r in rows], "s--", label="dask.array x @ y (CuPy)")
        ax.set_title(f"dask: {rows[0]['n']}^2 float32, chunks of {rows[0]['chunk']}")
    ax.set_xlabel("GPU workers")
    ax.set_ylabel("seconds, submission to persisted result")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    for axis in axes:
        axis.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle(f"{data['device']}, {data['date']}: {data['command']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "multigpu.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", default="docs/results")
    parser.add_argument("--out", default="docs/img")
    args = parser.parse_args()
    results, out = Path(args.results), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_kernels(json.loads((results / "bench_kernels.json").read_text()), out)
    tuning = json.loads((results / "bench_tuning.json").read_text())
    plot_tuning(tuning, out)
    plot_heatmap(tuning, out)
    plot_host(json.loads((results / "bench_host.json").read_text()), out)
    if (results / "bench_multigpu.json").exists():  # not measured yet on every machine
        plot_multigpu(json.loads((results / "bench_multigpu.json").read_text()), out)


if __name__ == "__main__":
    main()
