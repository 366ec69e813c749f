"""Each panel config autotuning times at a GEMV-like shape, timed alone against cuBLAS, and one
launch of each for Nsight Compute (issue 15, item 2: why 16-wide panels lose to the families).

Usage (on the GPU machine; `gpu_session.sh gemv-probe` runs it, and under ncu with GEMV_NCU=1):

    python benchmarks/probe_gemv.py [--shapes 16x8192x8192,4x8192x8192] [--trans NN,TN]
        [--dtype float32] [--json FILE] [--profile]

Per shape and transpose pair, on padded column-major operands (tunedgemm.tuning.problems): the
runners of gemv_like.candidates (each LONG at its k-splits), each one's median time by CUDA
events after warm-up (tunedgemm.timing) and its GB/s of least traffic (A, B, C once), beside
cuBLAS into c on the same operands, timed before and after them (the median of the two is the
ratio's base); each runner's C checked against a float64 product once. --profile instead
launches each runner and cuBLAS once, after warm-up, inside cuProfilerStart/Stop (ncu's
--profile-from-start off profiles only those), in the printed order.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = "16x8192x8192,4x8192x8192"
REPS = 20


def _problems(args: argparse.Namespace) -> list[tuple[str, Any, Any]]:
    """(label, problem, key) for each shape and pair."""
    from tunedgemm import plans
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    found = []
    for text in args.shapes.split(","):
        shape = tuple(int(v) for v in text.split("x"))
        for pair in args.trans.split(","):
            trans = (pair[0] == "T", pair[1] == "T")
            problem = problems.make(*shape, args.dtype, *trans, rng, padded=True)
            key = plans.GemmKey.of(problem.form, args.dtype, "ieee")
            found.append((f"{args.dtype} {pair} {text}", problem, key))
    return found


def _error(problem: Any) -> float:
    """The runner's C against a float64 product, over the K-scaled tolerance (<= 1 is right)."""
    from tunedgemm import checks

    exact, scale = checks.float64_reference(1.0, problem.op_a, problem.op_b, 0.0, None)
    error = checks.scaled_error(problem.c(), exact, scale)
    return error / checks.tolerance(problem.form.k, problem.dtype)


def _table(cases: list[tuple[str, Any, Any]], reps: int) -> list[dict[str, Any]]:
    """Each runner's and cuBLAS's median time per case, printed as a table as they come."""
    import bench_memory_bound as memory
    import bench_tuning

    from tunedgemm import gemv_like, timing

    rows: list[dict[str, Any]] = []
    print(f"{'case':28} {'config':58} {'us':>8} {'GB/s':>6} {'/cB':>5} {'err/tol':>7}")
    for label, problem, key in cases:
        f, shape = problem.form, (problem.form.m, problem.form.n, problem.form.k)
        peer = bench_tuning._cublas_call(f, problem.dtype)
        peer_ms = [timing.gpu_median_ms(peer, reps=reps)]
        timed = []
        for runner in gemv_like.candidates(key):
            problem.poison_c()
            work = functools.partial(runner, f.a, f.b, f.c, 1.0, 0.0, 0)
            work()
            error = _error(problem)
            timed.append((str(runner.config), timing.gpu_median_ms(work, reps=reps), error))
        peer_ms.append(timing.gpu_median_ms(peer, reps=reps))
        cublas_us = 1e3 * statistics.median(peer_ms)
        for config, ms, error in [*timed, ("cublas", cublas_us / 1e3, None)]:
            us = 1e3 * ms
            gbps = memory.gigabytes_per_s(shape, problem.dtype.name, us)
            rows.append({"case": label, "config": config, "us": us, "gbps": gbps,
                         "over_cublas": cublas_us / us, "error_over_tolerance": error})  # fmt: skip
            shown = "-" if error is None else f"{error:.3f}"
            print(f"{label:28} {config:58} {us:8.1f} {gbps:6.0f} {cublas_us / us:5.2f} "
                  f"{shown:>7}", flush=True)  # fmt: skip
    return rows


def _profile(cases: list[tuple[str, Any, Any]]) -> None:
    """One launch of each runner and of cuBLAS per case inside the profiler's range (after
    warm-up: ncu_simt.profile_range)."""
    import bench_tuning
    from ncu_simt import profile_range

    from tunedgemm import gemv_like

    launches = []
    for label, problem, key in cases:
        f = problem.form
        for runner in gemv_like.candidates(key):
            launches.append((f"{label} {runner.config}",
                             functools.partial(runner, f.a, f.b, f.c, 1.0, 0.0, 0)))  # fmt: skip
        launches.append((f"{label} cublas", bench_tuning._cublas_call(f, problem.dtype)))
    profile_range(launches)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help="MxNxK,...")
    parser.add_argument("--trans", default="NN,TN", help="transpose pairs, comma-separated")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--json", help="write the rows there")
    parser.add_argument("--profile", action="store_true", help="one launch each for ncu")
    args = parser.parse_args(argv)

    from tunedgemm import cuda, gemv_like

    usable, why = cuda.status()
    if not usable:
        print(f"probe_gemv: needs a GPU ({why})")
        return 1
    gemv_like.ENABLED = True  # (as shipped; a run must time the panels whatever the default)
    gemv_like.STAGED_ENABLED = True  # (off as shipped until it has been timed: this times it)
    cases = _problems(args)
    if args.profile:
        _profile(cases)
        return 0
    rows = _table(cases, args.reps)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows},
                                              indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
