"""tunedgemm-tune: tune kernel configs for this GPU and write the lookup table."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from . import strategies
from .driver import Task, planned, tasks_for
from .space import candidates, parse_shapes, shapes_from_log

TRANS = {"NN": (False, False), "NT": (False, True), "TN": (True, False), "TT": (True, True)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tunedgemm-tune", description=__doc__)
    p.add_argument("--dtype", nargs="+", default=["float32", "float64"],
                   choices=["float32", "float64"])  # fmt: skip
    p.add_argument(
        "--trans",
        nargs="+",
        default=list(TRANS),
        choices=list(TRANS),
        help="BLAS transpose pairs of the column-major call (default: all four)",
    )
    p.add_argument(
        "--shapes",
        default="default",
        help="'default' (grid 64..16384), 'mid' (the points between the default grid's, "
        "128..8192), 'benchmark', names joined by '+' (default+mid), or MxNxK,MxNxK,...",
    )
    p.add_argument("--precision", default="ieee", choices=["ieee", "tf32", "3xtf32"],
                   help="the mode whose table entries to tune (float32 only for tf32 and "
                   "3xtf32; cuBLAS's TF32 GEMM is the rival in tf32, SGEMM in 3xtf32)")  # fmt: skip
    p.add_argument("--shapes-log", help="file written by TUNEDGEMM_LOG_SHAPES=FILE "
                   "(replaces --shapes, --dtype and --trans)")  # fmt: skip
    p.add_argument("--strategy", default="random", choices=strategies.NAMES)
    p.add_argument(
        "--max-evals",
        type=int,
        default=None,
        help="configs timed per shape by the random strategy (default 24)",
    )
    p.add_argument(
        "--no-cublas",
        action="store_true",
        help="never choose cuBLAS (it is still timed, for the record)",
    )
    p.add_argument(
        "--no-seeds",
        action="store_true",
        help="time the strategy's sample alone, not also what run-time autotuning would time "
        "at each shape under the installed table (its candidates, twins, splits, narrow tiles)",
    )
    p.add_argument("--time-budget", type=float, default=None, help="minutes; stops cleanly")
    p.add_argument(
        "--checkpoint",
        default="tunedgemm-tune.checkpoint.jsonl",
        help="resume file: finished shapes are skipped on rerun",
    )
    p.add_argument("--out", default="tunedgemm-table.json", help="table file to write or merge")
    p.add_argument("--dry-run", action="store_true",
                   help="say what a run would do (tasks, candidates, estimated time); no GPU "
                   "needed")  # fmt: skip
    p.add_argument("--list", action="store_true",
                   help="with --dry-run: one line per task (candidates after pruning, timed)")
    return p


# Seconds per timed config in a tuning run, compilation on a warm kernel cache included: the
# H100 runs of 2026-11-22 (docs/tuning.md) took 1.2-1.4 s per shape at 24 configs each.
SECONDS_PER_TIMING = 0.055
# Seeds timed a shape beside the sample (they need the GPU's table lookup, so --dry-run
# cannot list them): 16 on average over the 764 tasks of the H100 regeneration of
# 2026-11-26, whose 18,296 timings took 18.6 minutes, compilation included.
SEEDS_PER_TASK = 16


def make_tasks(args: argparse.Namespace) -> list[Task]:
    if args.shapes_log:
        logged = shapes_from_log(args.shapes_log)
        return [Task(d, ta, tb, s) for (d, ta, tb), shapes in sorted(logged.items())
                for s in shapes]  # fmt: skip
    if args.precision != "ieee" and args.dtype != ["float32"]:
        raise ValueError(f"--precision {args.precision} tunes float32 only: pass --dtype float32")
    return tasks_for(args.dtype, [TRANS[t] for t in args.trans], parse_shapes(args.shapes),
                     args.precision)  # fmt: skip


def dry_run(tasks: list[Task], args: argparse.Namespace) -> int:
    """A summary of what a run would do; with --list, one line per task first."""
    total_valid = total_timed = 0
    per_key: Counter[str] = Counter()
    if args.list:
        print(f"{'task':40} {'valid after pruning':>20} {'timed':>6}")
    for task in tasks:
        valid = len(candidates(task.dtype, task.shape, precision=task.precision))
        timed = len(planned(task, args.strategy, args.max_evals, 132))
        total_valid += valid
        total_timed += timed
        per_key[task.key] += timed
        if args.list:
            print(f"{task.id:40} {valid:20d} {timed:6d}")
    seeds = 0 if args.no_seeds else SEEDS_PER_TASK * len(tasks)
    seconds = (total_timed + seeds) * SECONDS_PER_TIMING
    estimate = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
    keys = ", ".join(f"{k} {n}" for k, n in sorted(per_key.items()))
    print(f"{len(tasks)} tasks ({len(per_key)} dtype/transpose keys), strategy {args.strategy}")
    print(f"candidates after pruning: {total_valid} in all; {total_timed} to time ({keys})"
          + (f", and about {seeds} seeds" if seeds else ""))
    print(f"estimated time: about {estimate} on an H100 "
          f"({SECONDS_PER_TIMING} s per timed config; more where kernels are not compiled yet)")
    if not args.list:
        print("(--list shows each task)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list and not args.dry_run:
        parser.error("--list goes with --dry-run")
    try:
        tasks = make_tasks(args)
    except (ValueError, OSError) as exc:  # a bad --shapes or --shapes-log: usage, not traceback
        parser.error(str(exc))
    if args.dry_run:
        return dry_run(tasks, args)
    from .. import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"tunedgemm-tune: needs a GPU ({why}); --dry-run works without one")
        return 1
    import pycuda.driver as drv

    from ..compiler import precompile
    from ..reference import status as cublas_status
    from .checkpoint import Checkpoint
    from .driver import tune
    from .runner import Runner
    from .seeds import of_task
    from .writer import write

    dev = cuda.device()
    num_sms = cuda.sm_count()

    def prepare(task: Task, configs: list) -> None:
        precompile(configs, task.dtype, task.trans_a, task.trans_b, aligned=True)

    gpu, cc = cuda.gpu_identity()

    results = tune(
        tasks,
        lambda t: Runner(t.dtype, t.trans_a, t.trans_b, t.shape, precision=t.precision),
        strategy=args.strategy,
        max_evals=args.max_evals,
        allow_cublas=not args.no_cublas,
        checkpoint=Checkpoint(args.checkpoint),
        time_budget_s=None if args.time_budget is None else args.time_budget * 60,
        prepare=prepare,
        num_sms=num_sms,
        seeds=None if args.no_seeds else lambda task: of_task(task, gpu, cc),
    )
    device = {
        "name": dev.name(),
        "compute_capability": ".".join(map(str, dev.compute_capability())),
        "versions": {
            "cuda_driver": str(drv.get_driver_version()),
            "cuda_toolkit": ".".join(map(str, drv.get_version())),
            "cublas": cublas_status()[1],
        },
    }
    command = " ".join(["tunedgemm-tune", *(argv if argv is not None else sys.argv[1:])])
    write(args.out, results, device, command, args.strategy)
    print(f"tunedgemm-tune: {len(results)} entries written to {args.out}")
    return 0
