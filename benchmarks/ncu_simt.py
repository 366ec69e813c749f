"""One launch of each simt main-loop variant and of cuBLAS, for Nsight Compute (issue 15, item 3).

Usage (on the GPU machine; `gpu_session.sh ncu` runs it):

    ncu --clock-control none --profile-from-start off --section WarpStateStats ... \
        python benchmarks/ncu_simt.py [--shape 4096x4096x4096 ...] [--variants advance0 ...]
        [--simt-changes ADVANCE=1,STEADY_LOOP=0 ...]
        [--dtype float64 [--dmma-changes SPLIT_K=6 SPLIT_K=1,STREAM_K=2 ...]]

The named variants of bench_kernels --around (the table's own-kernel simt config at the shape
with ADVANCE 0 or 1, or a neighbour of it, as "STAGES=4,early") and cuBLAS run on the same
float32 NN operands: three warm-up launches each outside the profiled range, then one launch
each inside it (cuProfilerStart / cuProfilerStop), in the order printed, so that ncu's
report lists the kernels in that order; --simt-changes adds the table's config with each set
of changes (comma-separated NAME=VALUE), development switches included. Without ncu it is a
plain run of the same launches.
With --dtype float64 the launches are instead the own config a dgemm call runs at the shape
(TUNEDGEMM_CUBLAS=0: the table's choice refined by autotuning, as the public call) and cuBLAS's
DGEMM, on float64 NN operands; --dmma-changes adds that config with each set of changes
(comma-separated NAME=VALUE), as a k-split against stream-K.
With --call (float32) the own config an sgemm call runs at the shape, as float64's, and cuBLAS;
--simt-changes then adds that config with each set of changes.
With several shapes, each shape's launches in turn (the report lists them in that order).
--trans takes another transpose pair than NN for the operands (padded, as the others).
--choices FILE keeps a call's own configs (--call, float64) in FILE: read from it where it
exists, else found and written there. Found under ncu with its full sections, autotuning's
compiles and launches crashed the process (segmentation fault, H200, 2026-12-03), so the ncu
step finds them first in a plain run with --plan-only (write FILE, launch nothing).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _own_choice(problem: Any, shape: str, trans: str, choices: str | None) -> Any:
    """The own config a call of this problem runs with own kernels only (its plan's choice)."""
    import json
    import os

    from tunedgemm import plans, selection
    from tunedgemm.params import KernelConfig

    name = f"{shape} {trans} {problem.dtype.name}"
    kept = json.loads(Path(choices).read_text()) if choices and Path(choices).exists() else {}
    if name in kept:
        return KernelConfig.make(kept[name]["family"], kept[name]["params"])
    os.environ[selection.CUBLAS_ENV] = "0"
    key = plans.GemmKey.of(problem.form, problem.dtype.name, "ieee")
    choice = plans.device_plan(key, problem.form, 0).choice
    if choices:
        kept[name] = {"family": choice.family, "params": choice.as_dict()}
        Path(choices).write_text(json.dumps(kept, indent=1))
    return choice


def _changes(text: str) -> dict[str, int]:
    """NAME=VALUE,NAME=VALUE as a dict of changes."""
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def _launches(shape: str, args: argparse.Namespace, held: list[Any]) -> list[tuple[str, Any]]:
    """(label, launch) of each config to profile at one shape, then cuBLAS's."""
    m, n, k = (int(d) for d in shape.split("x"))

    from bench_kernels import around_variants, table_simt_config

    from tunedgemm import cuda, gpu_backend, launch, reference
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    trans = (args.trans[0] == "T", args.trans[1] == "T")
    problem = problems.make(m, n, k, args.dtype, *trans, padded=True)
    configs = []
    if args.call and args.dtype == "float32":
        own = _own_choice(problem, shape, args.trans, args.choices)
        configs.append(("sgemm's own", own))
        configs += [(text, KernelConfig.make(own.family, {**own.as_dict(), **_changes(text)}))
                    for text in args.simt_changes]  # fmt: skip
    elif args.dtype == "float64":
        own = _own_choice(problem, shape, args.trans, args.choices)
        configs.append(("dgemm's own", own))
        configs += [(text, KernelConfig.make("dmma", {**own.as_dict(), **_changes(text)}))
                    for text in args.dmma_changes]  # fmt: skip
    else:
        base = table_simt_config((m, n, k))
        for label, changes in around_variants(base).items():
            config = KernelConfig.make("simt", {**base, **changes})
            if label in args.variants and not FAMILIES["simt"].violations(config, "float32"):
                configs.append((f"simt {label}", config))
        # (named on purpose: a development switch such as STEADY_LOOP runs outside the space)
        configs += [(text, KernelConfig.make("simt", {**base, **_changes(text)}))
                    for text in args.simt_changes]  # fmt: skip
    launches = []
    for label, config in configs:
        nbytes = launch.workspace_bytes(config, problem.dtype, problem.form)
        held.append(cuda.allocate(nbytes) if nbytes else None)
        launches.append((f"{shape} {label}: {config}", functools.partial(
            gpu_backend.run, problem.form, problem.dtype, 1.0, 0.0, config,
            workspace=int(held[-1] or 0))))  # fmt: skip
    if reference.status()[0]:
        launches.append((f"{shape} cuBLAS",
                         lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0)))
    return launches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", nargs="+", default=["4096x4096x4096"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--variants", nargs="+", help="labels of bench_kernels.around_variants",
                        default=["advance1", "early", "early,maxnreg=224",
                                 "STAGES=4,early,maxnreg=224"])  # fmt: skip
    parser.add_argument("--dmma-changes", nargs="*", default=[],
                        help="float64: dgemm's own config with these changes too")  # fmt: skip
    parser.add_argument("--simt-changes", nargs="*", default=[],
                        help="float32: the table's (the call's) config with these")  # fmt: skip
    parser.add_argument("--trans", default="NN", choices=["NN", "NT", "TN", "TT"],
                        help="the operands' transpose pair (default NN)")  # fmt: skip
    parser.add_argument("--call", action="store_true",
                        help="float32: the own config a call runs, not the variants")  # fmt: skip
    parser.add_argument("--choices", help="a JSON file that keeps the call's own configs")
    parser.add_argument("--plan-only", action="store_true",
                        help="find the own configs (into --choices), launch nothing")  # fmt: skip
    args = parser.parse_args()

    from tunedgemm import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"ncu_simt: needs a GPU ({why})")
        return 1
    launches: list[tuple[str, Any]] = []
    held: list[Any] = []  # workspaces, alive to the end
    for shape in args.shape:
        launches += _launches(shape, args, held)
    if args.plan_only:
        return 0
    profile_range(launches)
    return 0


def profile_range(launches: list[tuple[str, Any]]) -> None:
    """Three warm-up launches of each (label, work), then one launch of each inside
    cuProfilerStart/Stop (what ncu --profile-from-start off profiles), labels printed in order."""
    from tunedgemm import cuda

    for _, work in launches:
        for _ in range(3):
            work()
    context = cuda.context()
    context.synchronize()
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuProfilerStart()
    for label, work in launches:
        print(label, flush=True)
        work()
        context.synchronize()
    driver.cuProfilerStop()


if __name__ == "__main__":
    sys.exit(main())
