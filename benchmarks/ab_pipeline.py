"""A/B of two versions of tunedgemm/pipeline.py on the same machine, calls alternated.

Usage (the GPU machine has no git history, so make the other version's file first):
    git show COMMIT:tunedgemm/pipeline.py > tunedgemm/_pipeline_other.py
    python benchmarks/ab_pipeline.py [--other tunedgemm/_pipeline_other.py] [--sizes 4096 8192]

Lent machines differ by up to 2x in host copy rates, so a change to the host path is judged
by this, not by runs on different machines. Prints the median of 5 calls of each version,
host to host sgemm on square float32 arrays.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", default="tunedgemm/_pipeline_other.py")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = parser.parse_args()
    import tunedgemm as tg
    from tunedgemm import pipeline

    # Loaded as a module of the package, so that its relative imports resolve.
    spec = importlib.util.spec_from_file_location("tunedgemm._pipeline_other", args.other)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other
    spec.loader.exec_module(other)
    versions = {"this": pipeline.gemm, "other": other.gemm}
    rng = np.random.default_rng()
    for size in args.sizes:
        a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
        b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
        times: dict[str, list[float]] = {name: [] for name in versions}
        for _ in range(5):
            for name, gemm in versions.items():
                pipeline.gemm = gemm  # gpu_backend looks it up on each call
                tg.sgemm(1.0, a, b)
                start = time.perf_counter()
                tg.sgemm(1.0, a, b)
                times[name].append((time.perf_counter() - start) * 1e3)
        pipeline.gemm = versions["this"]
        shown = ", ".join(f"{name} {statistics.median(t):.1f} ms" for name, t in times.items())
        print(f"{size}^3 float32 host call: {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
