"""Plots for docs/ from the recorded benchmark results (no GPU needed).

Usage: python benchmarks/plot_results.py [--results docs/results] [--out docs/img]
Reads bench_kernels.json, bench_tuning.json, bench_host.json and (when there)
bench_multigpu.json; writes speed.png (the README's), host.png, kernels.png, tuning.png,
heatmap.png and multigpu.png, all in one style: the Okabe-Ito colour-blind-safe palette for
series, cividis for the heatmap, and each figure's device, date and command in its caption
line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.ticker import NullFormatter

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour
# vision deficiency. One colour per meaning, the same in every figure.
COLOURS = {
    "tunedgemm": "#0072B2",  # blue
    "cublas": "#E69F00",  # orange
    "cupy": "#009E73",  # green
    "numpy": "#CC79A7",  # purple
    "fixed": "#D55E00",  # vermillion
    "predicted": "#56B4E9",  # sky blue
    "other": "#000000",
}
MARKERS = {"tunedgemm": "o", "cublas": "s", "fixed": "^", "predicted": "D", "cupy": "v"}
DPI = 120


def style() -> None:
    plt.rcParams.update({
        "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
        "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
        "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
        "figure.constrained_layout.use": True, "savefig.dpi": DPI,
    })  # fmt: skip


def caption(fig: plt.Figure, data: dict) -> None:
    """Device, date and command: every figure says where its numbers come from."""
    fig.supxlabel(f"{data['device']}, {data['date']}; {data['command']}", fontsize=7,
                  color="#555555")  # fmt: skip


def plot_speed(data: dict, out: Path) -> None:
    """The README's figure: how much faster than NumPy a host-to-host call is, by size."""
    rows = data["host_to_host"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        mine = [r for r in rows if r["dtype"] == dtype]
        x = np.arange(len(mine))
        for i, (key, label, colour) in enumerate((
            ("tunedgemm_ms", "tunedgemm", COLOURS["tunedgemm"]),
            ("cupy_ms", "CuPy (asarray, @, asnumpy)", COLOURS["cupy"]),
        )):  # fmt: skip
            speedup = [r["numpy_ms"] / r[key] for r in mine]
            bars = ax.bar(x + (i - 0.5) * 0.38, speedup, 0.38, label=label, color=colour)
            ax.bar_label(bars, fmt="%.1fx", fontsize=7, padding=1)
        ax.axhline(1, color=COLOURS["numpy"], lw=1.2)
        ax.set_yscale("log")
        ticks = [1, 2, 5, 10, 20, 50]
        ax.set_yticks(ticks, [f"{t}x" for t in ticks])
        ax.set_yticks([], minor=True)
        ax.set_xticks(x, [f"{r['n']}" for r in mine])
        ax.set_xlabel("n (square n x n x n, NumPy arrays in and out)")
        ax.set_title(f"{'sgemm' if dtype == 'float32' else 'dgemm'} ({dtype})")
    axes[0].set_ylabel("speed-up over NumPy on 16 cores (1x: NumPy)")
    axes[0].legend(loc="upper left", frameon=False)
    caption(fig, data)
    fig.savefig(out / "speed.png")
    plt.close(fig)


def plot_host(data: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for ax, dtype in zip(axes[:2], ("float32", "float64"), strict=True):
        rows = [r for r in data["host_to_host"] if r["dtype"] == dtype]
        x = np.arange(len(rows))
        series = (("tunedgemm_ms", "tunedgemm", "tunedgemm"),
                  ("cupy_ms", "CuPy plain path", "cupy"),
                  ("numpy_ms", "NumPy (16 cores)", "numpy"))  # fmt: skip
        for i, (key, label, colour) in enumerate(series):
            ax.bar(x + (i - 1) * 0.27, [r[key] for r in rows], 0.27, label=label,
                   color=COLOURS[colour])  # fmt: skip
        # The lower bound no host call can beat, drawn as a mark over each group, not a bar.
        ax.hlines([r["floor_ms"] for r in rows], x - 0.42, x + 0.42, colors=COLOURS["other"],
                  lw=1.5, label="lower bound: max(pinned transfer, kernel)")  # fmt: skip
        ax.set_yscale("log")
        ax.set_xticks(x, [f"{r['n']}" for r in rows])
        ax.set_xlabel("n (square)")
        ax.set_ylabel("ms per call, NumPy arrays in and out (log)")
        ax.set_title(f"{dtype}: host to host")
        ax.legend(loc="upper left", frameon=False)
    ax = axes[2]
    for dtype, dash in (("float32", "-"), ("float64", "--")):
        rows = [r for r in data["small"] if r["dtype"] == dtype]
        n = [r["n"] for r in rows]
        routine = "sgemm" if dtype == "float32" else "dgemm"
        if "ratio_same_layout" in rows[0]:
            ax.plot(n, [r["ratio_same_layout"] for r in rows], dash, marker="o", ms=3,
                    color=COLOURS["tunedgemm"],
                    label=f"{routine} / NumPy's (b.T @ a.T).T")  # fmt: skip
        if "matmul_ratio" in rows[0]:
            ax.plot(n, [r["matmul_ratio"] for r in rows], dash, marker="s", ms=3,
                    color=COLOURS["cupy"], label=f"matmul / a @ b ({dtype})")  # fmt: skip
    ax.axhspan(0, 1, color="#999999", alpha=0.12, lw=0)
    ax.text(1.1, 0.42, "faster than NumPy", fontsize=7, color="#555555")
    ax.set_ylim(0.4, 1.4)
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 4, 16, 64, 256], ["1", "4", "16", "64", "256"])
    ax.set_xlabel("n (square)")
    ax.set_ylabel("tunedgemm time / NumPy's for the same result")
    route = data.get("small_host_route")
    ax.set_title("small host calls (run on NumPy)" + (f", route in {route}" if route else ""))
    ax.legend(loc="upper left", frameon=False, fontsize=7)
    caption(fig, data)
    fig.savefig(out / "host.png")
    plt.close(fig)


def plot_kernels(data: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), sharey=True)
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        rows = [r for r in data["rows"] if r["dtype"] == dtype]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["tflops"] for r in rows], 0.4, color=COLOURS["tunedgemm"],
                      label="tunedgemm (own kernels)")  # fmt: skip
        ax.bar(x + 0.2, [r["cublas_tflops"] for r in rows], 0.4, color=COLOURS["cublas"],
               label="cuBLAS")  # fmt: skip
        for xi, r in zip(x, rows, strict=True):
            ax.text(xi, max(r["tflops"], r["cublas_tflops"]) + 1, f"{r['ratio']:.2f}",
                    ha="center", fontsize=7)  # fmt: skip
        ax.set_xticks(x, [f"{r['m']}x{r['n']}x{r['k']}" for r in rows], rotation=45,
                      ha="right")  # fmt: skip
        ax.set_title(f"{dtype} (numbers: tunedgemm / cuBLAS)")
        ax.set_ylim(0, 1.18 * max(max(r["tflops"], r["cublas_tflops"]) for r in rows))
    axes[0].set_ylabel("TFLOP/s (column-major, NN)")
    # One legend for both panels, outside the axes, so that it hides no bar or label.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=2, frameon=False)
    caption(fig, data)
    fig.savefig(out / "kernels.png")
    plt.close(fig)


def plot_tuning(data: dict, out: Path) -> None:
    """One column per shape (the shapes are unrelated: markers, no lines between them)."""
    fig, axes = plt.subplots(2, 1, figsize=(12, 7.5))
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        rec = data["random"][dtype]
        rows = sorted(rec["rows"], key=lambda r: np.prod(r["shape"]))
        flop = np.array([2e-9 * np.prod(r["shape"]) for r in rows])
        x = np.arange(len(rows))
        series = [("tuned", "table's predicted choice", "predicted"),
                  (rec["best_fixed"], "best single fixed config", "fixed"),
                  ("cublas", "cuBLAS", "cublas")]  # fmt: skip
        if "refined" in rows[0]:  # results from before run-time refinement lack it
            series.insert(0, ("refined", "tuned (what a call runs)", "tunedgemm"))
        for key, label, colour in series:
            ax.plot(x, flop / np.array([r[key] for r in rows]), ls="none",
                    marker=MARKERS[colour], ms=6, color=COLOURS[colour], label=label,
                    alpha=0.9)  # fmt: skip
        ax.set_xticks(x, ["x".join(map(str, r["shape"])) for r in rows], rotation=40,
                      ha="right", fontsize=7)  # fmt: skip
        ax.grid(axis="x", alpha=0.15)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{dtype}: random shapes off the tuning grid (sorted by work)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=4, frameon=False)
    caption(fig, data)
    fig.savefig(out / "tuning.png")
    plt.close(fig)


def _text_colour(rgba: tuple[float, ...]) -> str:
    """Black on light cells, white on dark ones (relative luminance, sRGB weights)."""
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.36 else "white"


def ratio_grid(ax: plt.Axes, grid: np.ndarray, sizes: list[int] | tuple[int, ...], norm: LogNorm,
               cmap: Any, title: str, fontsize: int) -> Any:  # fmt: skip
    """A heatmap of speed ratios over (M, N), each cell labelled (NaN cells left blank)."""
    image = ax.imshow(grid, cmap=cmap, norm=norm, origin="lower")
    for i, j in np.ndindex(grid.shape):
        if np.isfinite(grid[i, j]):
            ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=fontsize,
                    color=_text_colour(cmap(norm(grid[i, j]))))  # fmt: skip
    ax.set_xticks(range(len(sizes)), sizes)
    ax.set_yticks(range(len(sizes)), sizes)
    ax.grid(False)
    ax.set_xlabel("N")
    ax.set_ylabel("M")
    ax.set_title(title)
    return image


def ratio_colorbar(fig: plt.Figure, image: Any, axes: Any, shrink: float, label: str) -> None:
    """The ratio heatmaps' colour bar, ticked at 0.5x-2x."""
    bar = fig.colorbar(image, ax=axes, shrink=shrink, label=label)
    bar.set_ticks([0.5, 0.75, 1, 1.5, 2], labels=["0.5", "0.75", "1", "1.5", "2"])
    bar.ax.yaxis.set_minor_formatter(NullFormatter())


def plot_heatmap(data: dict, out: Path) -> None:
    ks = sorted({h["k"] for h in data["heatmap"]["float32"]})
    fig, axes = plt.subplots(2, len(ks), figsize=(4.3 * len(ks) + 1.2, 8))
    ratios = [h["ratio"] for d in ("float32", "float64") for h in data["heatmap"][d]]
    # Log scale centred on 1 (parity): 0.5x and 2x sit equally far from it.
    bound = max(max(ratios), 1 / min(ratios))
    norm, cmap = LogNorm(1 / bound, bound), plt.get_cmap("cividis")
    image = None
    for row, dtype in enumerate(("float32", "float64")):
        heat = data["heatmap"][dtype]
        sizes = sorted({h["m"] for h in heat})
        ratio = {(h["m"], h["n"], h["k"]): h["ratio"] for h in heat}
        for col, k in enumerate(ks):
            grid = np.array([[ratio[(m, n, k)] for n in sizes] for m in sizes])
            image = ratio_grid(axes[row][col], grid, sizes, norm, cmap, f"{dtype}, K = {k}", 9)
    assert image is not None
    ratio_colorbar(fig, image, axes, 0.7, "tuned own kernel speed / cuBLAS")
    fig.suptitle("Speed of the tuned own kernel relative to cuBLAS (> 1: faster)")
    caption(fig, data)
    fig.savefig(out / "heatmap.png")
    plt.close(fig)


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
    if rows:
        ax.legend(fontsize=7)
    else:  # (a --skip host run)
        ax.text(0.5, 0.5, "not measured in this run", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
    ax = axes[1]
    rows = data.get("dask", [])
    if rows:
        workers = [r["workers"] for r in rows]
        ax.plot(workers, [r["tunedgemm_s"] for r in rows], "o-", ms=11, mfc="none",
                label="tunedgemm.dask.matmul")  # fmt: skip (hollow: dask's may sit on it)
        ax.plot(workers, [r["dask_s"] for r in rows], "s--", label="dask.array x @ y (CuPy)")
        if all("tunedgemm_3xtf32_s" in r for r in rows):
            ax.plot(workers, [r["tunedgemm_3xtf32_s"] for r in rows], "^-",
                    label='tunedgemm.dask.matmul, precision="3xtf32"')  # fmt: skip
        if all("tunedgemm_comm_s" in r for r in rows):  # runs since CUDA IPC transfers
            ax.plot(workers, [r["tunedgemm_comm_s"] for r in rows], "v:",
                    label='tunedgemm.dask.matmul, transfer="comm"')  # fmt: skip
        ax.set_title(f"dask: {rows[0]['n']}^2 float32, chunks of {rows[0]['chunk']}")
        ax.set_xlim(0.5, max(workers) + 0.5)
    ax.set_xlabel("GPU workers")
    ax.set_ylabel("seconds, submission to persisted result")
    tallest = max((v for r in rows for key, v in r.items() if key.endswith("_s")), default=1.0)
    ax.set_ylim(0, 1.15 * tallest)
    ax.legend(fontsize=8, loc="upper left")  # (the slow comm lines rise to the right)
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
    style()
    host = json.loads((results / "bench_host.json").read_text())
    plot_speed(host, out)
    plot_host(host, out)
    plot_kernels(json.loads((results / "bench_kernels.json").read_text()), out)
    tuning = json.loads((results / "bench_tuning.json").read_text())
    plot_tuning(tuning, out)
    plot_heatmap(tuning, out)
    if (results / "bench_multigpu.json").exists():  # not measured yet on every machine
        plot_multigpu(json.loads((results / "bench_multigpu.json").read_text()), out)


if __name__ == "__main__":
    main()
