"""Does a kernel edit leave the shipped configs' results bit for bit as they were? (on a GPU)

Usage: python benchmarks/same_bits.py FAMILY [--base REV | --base-dir DIR] [--limit N] [--out DIR]

The GPU sibling of same_preprocessed.py, for edits that change the compiled code but not the
arithmetic: the order of independent instructions, a loop split in two, copies issued
elsewhere. For every config of FAMILY in the shipped table (the first N, spread over the
sorted list, with --limit), each transpose pair and leading dimensions padded and not, on
shapes with edge and interior tiles, the family's template at REV (default HEAD; or in DIR, a
copy of kernels/ at REV for a machine without the repository's history) and in the working
tree each compute C from the same operands, at beta 0 (C poisoned by NaN first) and beta != 0
(C drawn too); every byte of C must agree. Writes same_bits-FAMILY.json to --out. Exit status
1 where any result differs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

# Edge tiles in m, n and k, and (the last) enough whole k-tiles for a steady state.
SHAPES = [(257, 1000, 33), (1000, 1000, 257), (1536, 1280, 2100)]
# beta 0 (C never read) and beta != 0 (C read: the epilogue's other path).
SCALARS = [(1.0, 0.0), (-0.75, 0.5)]


def use_kernels(directory: Path) -> None:
    """Compile from the templates in `directory` from now on: every cache of compiled code and
    launch plans is emptied, so that no kernel of the other directory is reused."""
    from tunedgemm import compiler, launch

    compiler.kernels_dir = lambda: directory  # source_text reads the module global
    compiler.source_text.cache_clear()
    compiler._cubin.cache_clear()
    compiler._raw.clear()
    compiler._memo.clear()
    launch.plan.cache_clear()
    launch.launcher.cache_clear()


def precompile(configs: list[Any], dtype: str) -> None:
    """nvcc in parallel on every variant `results` runs (it would compile them one at a time:
    24 configs took more than five minutes)."""
    import os

    from tunedgemm import compiler, launch

    jobs = []
    for config, ta, tb, aligned in itertools.product(configs, *[(False, True)] * 3):
        plan = launch.plan(config, dtype, ta, tb, aligned)
        jobs.append((plan.source, dict(plan.defines)))
    compiler.precompile_raw(jobs, workers=os.cpu_count() or 4)


def results(configs: list[Any], dtype: str, seed: int) -> dict[str, bytes]:
    """C of every config, transpose pair, layout and shape, from operands drawn from seed."""
    from helpers import whole_c

    from tunedgemm import gpu_backend
    from tunedgemm.tuning import problems

    out = {}
    rng = np.random.default_rng(seed)
    for (m, n, k), (ta, tb), padded in itertools.product(
            SHAPES, itertools.product((False, True), repeat=2), (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        old = rng.uniform(-1, 1, (m, n))
        for config, (alpha, beta) in itertools.product(configs, SCALARS):
            if beta == 0:
                problem.poison_c()
            else:
                problem.set_c(old)  # (the rows past m NaN)
            gpu_backend.run(problem.form, problem.dtype, alpha, beta, config)
            out[f"{config} {m}x{n}x{k} {'NT'[ta]}{'NT'[tb]} padded={padded} "
                f"alpha={alpha} beta={beta}"] = whole_c(problem).tobytes()  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family")
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--base-dir", type=Path, help="kernels/ as it was at --base")
    parser.add_argument("--limit", type=int, default=0, help="configs at most (0: all)")
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from helpers import shipped_configs
    from same_preprocessed import kernels_at

    from tunedgemm import compiler, cuda
    from tunedgemm.families import FAMILIES

    ok, why = cuda.status()
    if not ok:
        print(f"same_bits: needs a GPU ({why})")
        return 1
    family = FAMILIES[args.family]
    configs = sorted(shipped_configs(args.family), key=str)
    if args.limit and len(configs) > args.limit:
        step = len(configs) / args.limit
        configs = [configs[int(i * step)] for i in range(args.limit)]
    seed = int(np.random.default_rng().integers(2**32))
    precompile(configs, family.dtypes[0])
    now = results(configs, family.dtypes[0], seed)
    template = compiler.source_text(family.source)
    use_kernels(args.base_dir or kernels_at(args.base, Path(tempfile.mkdtemp())))
    if compiler.source_text(family.source) == template:  # nothing would be compared
        print(f"same_bits: {args.family}'s template is the same at {args.base} as in the tree")
        return 1
    precompile(configs, family.dtypes[0])
    base = results(configs, family.dtypes[0], seed)
    differ = sorted(key for key in now if now[key] != base[key])
    for key in differ[:20]:
        print(f"differs: {key}")
    print(f"{args.family}: {len(configs)} shipped configs x {len(SHAPES)} shapes x 8 layouts x "
          f"{len(SCALARS)} (alpha, beta), "
          f"{len(differ)} of {len(now)} results differ from {args.base} (seed {seed})")  # fmt: skip
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"same_bits-{args.family}.json").write_text(json.dumps(
        {"family": args.family, "base": args.base, "seed": seed, "device": cuda.device().name(),
         "configs": [str(c) for c in configs], "results": len(now), "differ": differ},
        indent=1))  # fmt: skip
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
