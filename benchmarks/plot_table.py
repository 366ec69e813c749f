"""Heatmaps of a tuning table's own kernel against cuBLAS, two tables side by side (no GPU).

Usage: git show 79b4226:tunedgemm/tables/tuned.json > /tmp/tuned-2026-11-24.json
       python benchmarks/plot_table.py --before /tmp/tuned-2026-11-24.json [--after PATH]
           [--out docs/img]

For each NN entry of the default grid (M, N in 64, 512, 4096, 16384 at K = 64, 512, 4096), the
ratio cuBLAS's time / the best own config's time as the tuner recorded them (own_ms,
cublas_ms) on the table's first device: above 1 the table's own kernel is faster and the entry
chooses it. Cells the grid leaves out (the work cap) are blank. Writes table-heatmap.png and
prints the grid. The two tables' times need not come from one timing method: the caption
says which table is which.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from plot_results import ratio_colorbar, ratio_grid, style

SIZES = (64, 512, 4096, 16384)
KS = (64, 512, 4096)
KEYS = ("float32/NN", "float64/NN")


def ratios(path: Path, key: str) -> dict[tuple[int, int, int], float]:
    """(m, n, k) -> cuBLAS ms / own ms of the table's entries under key."""
    device = json.loads(path.read_text())["devices"][0]
    return {(e["m"], e["n"], e["k"]): e["cublas_ms"] / e["own_ms"]
            for e in device["entries"].get(key, [])}  # fmt: skip


def describe(path: Path) -> str:
    data = json.loads(path.read_text())
    return f"{path.name} of {data['created']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", required=True, type=Path)
    parser.add_argument("--after", default=Path("tunedgemm/tables/tuned.json"), type=Path)
    parser.add_argument("--out", default=Path("docs/img"), type=Path)
    args = parser.parse_args()
    style()
    tables = (("before", args.before), ("after", args.after))
    grids = {(key, name): ratios(path, key) for key in KEYS for name, path in tables}
    # Log scale centred on parity, 0.5x to 2x (beyond it clipped): most entries lie within 25%.
    norm, cmap = LogNorm(0.5, 2, clip=True), plt.get_cmap("cividis")
    fig, axes = plt.subplots(len(grids), len(KS), figsize=(3.6 * len(KS) + 1.2, 3.3 * len(grids)))
    image = None
    for row, ((key, name), grid) in enumerate(grids.items()):
        for col, k in enumerate(KS):
            cells = np.array([[grid.get((m, n, k), math.nan) for n in SIZES] for m in SIZES])
            image = ratio_grid(axes[row][col], cells, SIZES, norm, cmap,
                               f"{key} {name}, K = {k}", 8)  # fmt: skip
            print(f"{key} {name} K={k}: " + " ".join(
                f"{m}x{n}:{cells[i, j]:.2f}" for i, m in enumerate(SIZES)
                for j, n in enumerate(SIZES) if math.isfinite(cells[i, j])))  # fmt: skip
    assert image is not None
    ratio_colorbar(fig, image, axes, 0.5, "cuBLAS time / own kernel time")
    fig.suptitle("The table's best own kernel against cuBLAS, as the tuner timed them (> 1: own "
                 "faster)")  # fmt: skip
    fig.supxlabel(f"before: {describe(args.before)}; after: {describe(args.after)}; "
                  "python benchmarks/plot_table.py", fontsize=7, color="#555555")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out / "table-heatmap.png")
    plt.close(fig)


if __name__ == "__main__":
    main()
