"""Long differential fuzz runs: N calls per routine against SciPy / np.matmul, with a JSON summary.

    python benchmarks/fuzz.py --calls 100000 --backend numpy --out results/fuzz
    python benchmarks/fuzz.py --calls 100000 --backend gpu --out results/fuzz   # on the GPU

The calls are those of tests/unit/test_fuzz_semantics.py (tests/fuzz_cases.py draws and
judges them), chosen by a seeded NumPy generator instead of hypothesis. The summary
(fuzz-<backend>.json) holds the calls and failures per routine, the time, and for each
failure its seed and call (rerun one with --seed S --calls 1 --routine R). Exits 1 on any
failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_cases import ROUTINES, NumpyDrawer, draw_case, judge

MAX_LISTED = 50  # failures listed per routine in the summary (all are counted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="calls per routine")
    parser.add_argument("--backend", choices=("numpy", "gpu"), default="numpy")
    parser.add_argument("--out", default=".", help="directory for fuzz-<backend>.json")
    parser.add_argument("--seed", type=int, default=20261123, help="first seed")
    parser.add_argument("--routine", choices=ROUTINES, action="append",
                        help="routines to run (default: all)")  # fmt: skip
    args = parser.parse_args()
    os.environ["TUNEDGEMM_BACKEND"] = args.backend
    if args.backend == "gpu":
        os.environ.setdefault("TUNEDGEMM_CUBLAS", "0")  # the own kernels, not cuBLAS
    warnings.simplefilter("ignore")
    import tunedgemm

    routines = {name: getattr(tunedgemm, name) for name in ROUTINES}
    summary: dict[str, object] = {"backend": args.backend, "calls_per_routine": args.calls,
                                  "first_seed": args.seed, "routines": {}}  # fmt: skip
    failed = 0
    start = time.perf_counter()
    for routine in args.routine or ROUTINES:
        began, failures, count = time.perf_counter(), [], 0
        for i in range(args.calls):
            seed = args.seed + i
            case = draw_case(NumpyDrawer(np.random.default_rng(seed)), routine)
            try:
                problem = judge(case, routines)
            except Exception as exc:
                problem = f"judge raised {type(exc).__name__}: {exc}"
            if problem is not None:
                count += 1
                if len(failures) < MAX_LISTED:
                    failures.append({"seed": seed, "problem": problem, "call": case.repro()})
        seconds = time.perf_counter() - began
        summary["routines"][routine] = {"calls": args.calls, "failures": count,  # type: ignore[index]
                                        "seconds": round(seconds, 1), "listed": failures}
        print(f"{routine:7} {args.calls} calls, {count} failures, {seconds:.0f} s", flush=True)
        failed += count
    summary["seconds"] = round(time.perf_counter() - start, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fuzz-{args.backend}.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"written to {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
