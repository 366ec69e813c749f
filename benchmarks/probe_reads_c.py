"""What autotuning at beta != 0 (GemmKey.reads_c) changes: each random shape's plan made as a
beta-0 call makes it and as a beta-1 call does, both timed at beta 1 where they differ.

    python benchmarks/probe_reads_c.py [--seed S] [--shapes 24] [--dtype float32 float64]
        [--own-only] [--out DIR]

Until 2026-11-29 a call at beta != 0 ran the pick autotuning had timed at beta 0. Here both
plans of a shape come from tunedgemm/plans.py's device_plan, on the same operands (leading
dimensions padded, NN, C drawn), each autotuned afresh (cuBLAS a candidate unless
--own-only); where their choices differ, both run at beta 1 in alternation (ROUNDS turns,
CUDA-event medians by tunedgemm.timing, the least of the turns; the JSON keeps what each
plan's autotuning timed: candidates, first-pass ms, the confirming turns). Prints a table and the
geometric mean of (beta-0 pick's ms / beta-1 pick's ms) over the shapes that differ and over
all; writes probe_reads_c-<tag>.json.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tuning import cublas_setting, gmean, precompile_candidates, random_shapes

ROUNDS = 4


def probe(shape: tuple[int, int, int], dtype: str) -> dict[str, Any]:
    from tunedgemm import autotune, plans
    from tunedgemm.timing import gpu_and_host_ms
    from tunedgemm.tuning import problems

    problem = problems.make(*shape, dtype, False, False, padded=True)
    problem.set_c(np.random.default_rng().uniform(-1, 1, shape[:2]))
    form = problem.form
    made = {}
    passes = {}
    for reads_c in (False, True):
        key = plans.GemmKey.of(form, dtype, "ieee", reads_c=reads_c)
        seen = len(autotune.history())
        made[reads_c] = plans.device_plan(key, form, 0)
        passes[reads_c] = autotune.history()[seen:]  # what autotuning timed for this plan
    row: dict[str, Any] = {"shape": shape, "dtype": dtype,
                           "beta0_choice": str(made[False].choice),
                           "beta1_choice": str(made[True].choice),
                           "beta0_autotune": passes[False],
                           "beta1_autotune": passes[True]}  # fmt: skip
    if row["beta0_choice"] == row["beta1_choice"]:
        return row
    turns: dict[bool, list[float]] = {False: [], True: []}
    for turn in range(ROUNDS):
        for reads_c in (False, True) if turn % 2 == 0 else (True, False):
            run = made[reads_c].run

            def call(run: Any = run) -> None:
                run(form.a, form.b, form.c, 1.0, 1.0, 0)

            gpu, host = gpu_and_host_ms(call, warmup=2, reps=5)
            turns[reads_c].append(max(gpu, host))
    row["beta0_pick_ms"], row["beta1_pick_ms"] = min(turns[False]), min(turns[True])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--shapes", type=int, default=24)
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--own-only", action="store_true")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    shapes = random_shapes(args.shapes, seed)
    from tunedgemm import cuda

    cuda.context()
    print(f"# seed {seed}; {'own kernels only' if args.own_only else 'cuBLAS a candidate'}; "
          f"{cuda.device_name()}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    rows = []
    with cublas_setting(not args.own_only):
        for dtype in args.dtype:
            precompile_candidates(shapes, dtype, [])  # nvcc in parallel, not one at a time
            print(f"{dtype:8} {'m x n x k':>20}  {'beta-0 pick':40} {'beta-1 pick':40} "
                  f"{'ms (b0 pick)':>12} {'ms (b1 pick)':>12}")  # fmt: skip
            for shape in shapes:
                row = probe(shape, dtype)
                rows.append(row)
                ms = (f"{row['beta0_pick_ms']:12.4f} {row['beta1_pick_ms']:12.4f}"
                      if "beta0_pick_ms" in row else f"{'same':>12}")  # fmt: skip
                print(f"{'':8} {'x'.join(map(str, shape)):>20}  {row['beta0_choice'][:40]:40} "
                      f"{row['beta1_choice'][:40]:40} {ms}")  # fmt: skip
            differ = [r["beta0_pick_ms"] / r["beta1_pick_ms"] for r in rows
                      if r["dtype"] == dtype and "beta0_pick_ms" in r]  # fmt: skip
            every = differ + [1.0] * (len(shapes) - len(differ))
            print(f"{dtype}: {len(differ)} of {len(shapes)} shapes pick differently at beta 1; "
                  f"beta-0 pick's time / beta-1 pick's at beta 1: geometric mean "
                  f"{gmean(differ) if differ else math.nan:.3f} where they differ "
                  f"(least {min(differ, default=math.nan):.3f}, most "
                  f"{max(differ, default=math.nan):.3f}), {gmean(every):.3f} over all")
    tag = "own" if args.own_only else "auto"
    out = Path(args.out) / f"probe_reads_c-{tag}.json"
    out.write_text(json.dumps({"seed": seed, "device": cuda.device_name(), "rows": rows},
                              indent=1, default=str))  # fmt: skip
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
