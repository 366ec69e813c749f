"""Does autotuning's timing of a small, host-bound shape agree with a run of planned calls?

Usage: python benchmarks/probe_small_pick.py [--shape 310x137x175] [--dtype float64]

bench_tuning (H100, 2026-11-26 20:37 UTC, seed 1795725424) timed the config autotuning kept
at 310x137x175 float64 at 34 us a call, against 9-13 us for the table's first pick and the
fastest fixed configs. For the shape's own candidates (the table's, with what
plans.own_candidates adds), this prints each one's cost as autotune.time_candidates measures
it and as bench_tuning does (timing.call_ms on plans.launcher, the least of two), three
times, then what autotune.choose keeps and its history record.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shape", default="310x137x175")
    parser.add_argument("--dtype", default="float64")
    args = parser.parse_args()

    from tunedgemm import autotune, cuda, plans, selection
    from tunedgemm.compiler import precompile
    from tunedgemm.params import KernelConfig
    from tunedgemm.timing import call_ms
    from tunedgemm.tuning import problems

    ok, why = cuda.status()
    if not ok:
        print(f"probe_small_pick: needs a GPU ({why})")
        return 1
    m, n, k = (int(x) for x in args.shape.split("x"))
    problem = problems.make(m, n, k, args.dtype, padded=True)
    form = problem.form
    key = plans.GemmKey.of(form, args.dtype, "ieee")
    tuned = selection.choose(args.dtype, m, n, k, warn=False)
    candidates = plans.own_candidates(tuned.candidates or (tuned.config,), key)
    own = [c for c in candidates if isinstance(c, KernelConfig)]
    precompile(own, args.dtype, False, False, True, jobs=16)

    def planned_ms(config: object) -> float:
        run = plans.launcher(key, config)
        return min(call_ms(lambda: run(form.a, form.b, form.c, 1.0, 0.0, 0), warmup=2, reps=5)
                   for _ in range(2))  # fmt: skip

    print(f"{args.dtype} {args.shape}: {len(candidates)} candidates; us a call")
    for attempt in range(3):
        passed = autotune.time_candidates(form, problem.dtype, candidates)
        called = [planned_ms(c) for c in candidates]
        print(f"attempt {attempt}")
        for c, a, b in sorted(zip(candidates, passed, called, strict=True), key=lambda x: x[1]):
            print(f"  pass {1e3 * a:7.1f}  calls {1e3 * b:7.1f}  {c}")
    autotune.clear()
    chosen = autotune.choose(form, problem.dtype, candidates)
    record = autotune.history()[-1]
    print(f"kept {chosen}; confirm {record['confirm']}; finalists {record.get('finalists')}")
    print(f"kept, as called: {1e3 * planned_ms(chosen):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
