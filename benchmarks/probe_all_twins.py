"""Would the twins of every own candidate, not only of the first RELATIVES_OF, win shapes?

    python benchmarks/probe_all_twins.py [--shapes MxNxK,...] [--dtype float64] [--out DIR]

plans.own_candidates adds twins (as dmma's ADVANCE=1 main loop) to the first RELATIVES_OF
own candidates only: the later ones, from the table's farther entries, can be configs whose
loop the twin replaced (at 6904x698x3920 float64 on the H200, 2026-11-29 17:51 UTC, the
seventh candidate was the 128 x 128 ADVANCE=0 tile, 0.87 ms against cuBLAS's 0.64). Per
shape (NN, leading dimensions padded, own kernels only) this times, in one autotuning pass
(autotune.time_candidates: the costs autotuning compares; cuBLAS among them as the peer),
what a call's autotuning times now and the twins of the rest, and prints the best of each
against cuBLAS; writes probe_all_twins.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_epilogue import parse_shape
from bench_tuning import cublas_setting, gmean

# float64's worst random shapes of the day and the sessions before (docs/tuning.md)
SHAPES = [(6904, 698, 3920), (700, 2460, 2744), (3556, 131, 436), (1626, 342, 9572),
          (1952, 307, 6314), (8016, 268, 3704), (3178, 4043, 2654)]  # fmt: skip


def probe(shape: tuple[int, int, int], dtype: str) -> dict[str, Any]:
    from tunedgemm import autotune, plans, selection, table
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    problem = problems.make(*shape, dtype, False, False, padded=True)
    key = plans.GemmKey.of(problem.form, dtype, "ieee")
    choice = selection.choose(dtype, *shape, False, False, warn=False)
    now = plans.own_candidates(choice.candidates or (choice.config,), key)
    own = tuple(c for c in now if isinstance(c, KernelConfig))
    more = plans.with_twins(own, dtype, key)[len(own):]
    timed = (*now, *more, table.CUBLAS)
    costs = autotune.time_candidates(problem.form, problem.dtype, timed)
    ms = dict(zip(map(str, timed), costs, strict=True))
    best_now = min(costs[: len(now)])
    more_costs = costs[len(now) : len(now) + len(more)]
    best_more = min(more_costs, default=math.inf)
    best_twin = str(more[more_costs.index(best_more)]) if math.isfinite(best_more) else None
    return {"shape": shape, "dtype": dtype, "now": len(now), "more": len(more),
            "cublas_ms": ms[table.CUBLAS], "best_now_ms": best_now, "best_more_ms": best_more,
            "best_more": best_twin, "ms": ms}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=None, help="MxNxK,... (default: SHAPES)")
    parser.add_argument("--dtype", nargs="+", default=["float64"])
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes.split(",")] if args.shapes else SHAPES
    from tunedgemm import cuda

    cuda.context()
    print(f"# own kernels only; {cuda.device_name()}; "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    out = Path(args.out) / "probe_all_twins.json"
    rows: list[dict[str, Any]] = []
    with cublas_setting(False):
        for dtype in args.dtype:
            print(f"{dtype:8} {'m x n x k':>16} {'now':>4} {'more':>4} {'cuBLAS ms':>10} "
                  f"{'now / cuBLAS':>12} {'+ twins / cuBLAS':>16}  best of the twins")  # fmt: skip
            for shape in shapes:
                row = probe(shape, dtype)
                rows.append(row)  # written after each shape: a run cut short keeps its rows
                out.write_text(json.dumps({"device": cuda.device_name(), "rows": rows},
                                          indent=1, default=str))  # fmt: skip
                peer = row["cublas_ms"]
                print(f"{'':8} {'x'.join(map(str, shape)):>16} {row['now']:4d} {row['more']:4d} "
                      f"{peer:10.4f} {peer / row['best_now_ms']:12.3f} "
                      f"{peer / min(row['best_now_ms'], row['best_more_ms']):16.3f}  "
                      f"{row['best_more']}", flush=True)  # fmt: skip
            mine = [r for r in rows if r["dtype"] == dtype]
            now = gmean([r["cublas_ms"] / r["best_now_ms"] for r in mine])
            more = gmean([r["cublas_ms"] / min(r["best_now_ms"], r["best_more_ms"]) for r in mine])
            print(f"{dtype}: cuBLAS / best own, geometric mean: now {now:.3f}, with every "
                  f"candidate's twins {more:.3f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
