"""One launch of each simt main-loop variant and of cuBLAS, for Nsight Compute (issue 15, item 3).

Usage (on the GPU machine; `gpu_session.sh ncu` runs it):

    ncu --clock-control none --profile-from-start off --section WarpStateStats ... \
        python benchmarks/ncu_simt.py [--shape 4096x4096x4096] [--variants advance0 advance1 ...]

The named variants of bench_kernels --around (the table's own-kernel simt config at the shape
with ADVANCE 0 or 1, or a neighbour of it, as "STAGES=4,early") and cuBLAS run on the same
float32 NN operands: three warm-up launches each outside the profiled range, then one launch
each inside it (cuProfilerStart / cuProfilerStop), in the order printed, so that ncu's
report lists the kernels in that order. Without ncu it is a plain run of the same launches.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("--variants", nargs="+", help="labels of bench_kernels.around_variants",
                        default=["advance1", "early", "early,maxnreg=224",
                                 "STAGES=4,early,maxnreg=224"])  # fmt: skip
    args = parser.parse_args()
    m, n, k = (int(d) for d in args.shape.split("x"))

    from bench_kernels import around_variants, table_simt_config

    from tunedgemm import cuda, gpu_backend, launch, reference
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    ok, why = cuda.status()
    if not ok:
        print(f"ncu_simt: needs a GPU ({why})")
        return 1
    problem = problems.make(m, n, k, "float32", padded=True)
    base = table_simt_config((m, n, k))
    launches = []
    held = []  # workspaces, alive to the end
    variants = around_variants(base)
    for label, changes in variants.items():
        if label not in args.variants:
            continue
        config = KernelConfig.make("simt", {**base, **changes})
        if FAMILIES["simt"].violations(config, "float32"):
            continue
        nbytes = launch.workspace_bytes(config, problem.dtype, problem.form)
        held.append(cuda.allocate(nbytes) if nbytes else None)
        launches.append((f"simt {label}: {config}", functools.partial(
            gpu_backend.run, problem.form, problem.dtype, 1.0, 0.0, config,
            workspace=int(held[-1] or 0))))  # fmt: skip
    if reference.status()[0]:
        launches.append(("cuBLAS", lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0)))
    for _, work in launches:
        for _ in range(3):
            work()
    context = cuda.context()
    context.synchronize()
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuProfilerStart()
    for label, work in launches:
        print(f"{m}x{n}x{k} {label}", flush=True)
        work()
        context.synchronize()
    driver.cuProfilerStop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
