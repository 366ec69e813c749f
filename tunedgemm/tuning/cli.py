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
    p.add_argument("--time-budget", type=float, default=None, help="minutes; stops cleanly")
    p.add_argument(
        "--checkpoint",
        default="tunedgemm-tune.checkpoint.jsonl",
        help="resume file: finished shapes are skipped on rerun",
    )
    p.add_argument("--out", default="tunedgemm-table.json", help="table file to write or merge")
    p.add_argument("--dry-run", action="store_true", help="list candidate counts; no GPU needed")
    return p


def make_tasks(args: argparse.Namespace) -> list[Task]:
    if args.shapes_log:
        logged = shapes_from_log(args.shapes_log)
        return [Task(d, ta, tb, s) for (d, ta, tb), shapes in sorted(logged.items())
                for s in shapes]  # fmt: skip
    return tasks_for(args.dtype, [TRANS[t] for t in args.trans], parse_shapes(args.shapes))


def dry_run(tasks: list[Task], args: argparse.Namespace) -> int:
    total_timed = 0
    per_key: Counter[str] = Counter()
    print(f"{'task':40} {'valid after pruning':>20} {'timed':>6}")
    for task in tasks:
        valid = len(candidates(task.dtype, task.shape))
        timed = len(planned(task, args.strategy, args.max_evals, 132))
        total_timed += timed
        per_key[task.key] += timed
        print(f"{task.id:40} {valid:20d} {timed:6d}")
    print(f"{len(tasks)} tasks, {total_timed} timings; per key: {dict(per_key)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tasks = make_tasks(args)
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
    from .writer import write

    dev = cuda.device()
    num_sms = cuda.sm_count()

    def prepare(task: Task, configs: list) -> None:
        precompile(configs, task.dtype, task.trans_a, task.trans_b, aligned=True)

    results = tune(
        tasks,
        lambda t: Runner(t.dtype, t.trans_a, t.trans_b, t.shape),
        strategy=args.strategy,
        max_evals=args.max_evals,
        allow_cublas=not args.no_cublas,
        checkpoint=Checkpoint(args.checkpoint),
        time_budget_s=None if args.time_budget is None else args.time_budget * 60,
        prepare=prepare,
        num_sms=num_sms,
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
