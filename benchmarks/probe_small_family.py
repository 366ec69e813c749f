"""Can the small family (kernels/gemm_small.cu) beat cuBLAS where the table's own kernels lose?

Usage: python benchmarks/probe_small_family.py [--dtype float32 float64] [--shapes 64x64x64,...]
           [--out DIR]

At each shape (NN, padded operands) the tuner's Runner times every config of the small
family over its PROBED_VALUES (tunedgemm/families/small.py: wider than its tunables, which
were chosen from this probe's results), the shipped table's own config and cuBLAS (own calls
replayed as graphs, as calls make them); the fastest small config is verified, then meets
cuBLAS and the table's own config in turns (Runner.head_to_head: three rounds, medians).
Prints a line per shape and the five fastest small configs; writes probe_small_family.json
(every config's time) to --out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from pathlib import Path

SHAPES = ("64x64x64,64x512x64,512x64x64,512x512x64,128x128x128,1024x128x128,128x1024x128,"
          "384x384x128,256x256x256,384x384x384,1024x1024x128,64x64x4096,128x128x1024")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from tunedgemm import compiler, cuda, table
    from tunedgemm.families import FAMILIES, small
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning.runner import Runner
    from tunedgemm.tuning.space import Shape

    ok, why = cuda.status()
    if not ok:
        print(f"probe_small_family: needs a GPU ({why})")
        return 1
    family = FAMILIES["small"]
    names = list(small.PROBED_VALUES)
    shipped = table.load(table.shipped_path()).devices[0]
    record: dict[str, list[dict[str, object]]] = {}
    print(f"# {cuda.device_name()}; NN, padded operands; us per call (tuner's timing, then "
          "the head-to-head medians)")  # fmt: skip
    print(f"{'dtype':8} {'shape':>16} {'small':>7} {'table own':>9} {'cuBLAS':>7} "
          f"{'h2h small':>9} {'h2h own':>8} {'h2h cuBLAS':>10}  best small")  # fmt: skip
    for dtype in args.dtype:
        probed = (KernelConfig.make("small", dict(zip(names, values, strict=True)))
                  for values in itertools.product(*small.PROBED_VALUES.values()))
        space = [c for c in probed if not family.violations(c, dtype)]
        compiler.precompile(space, dtype, False, False, True, jobs=os.cpu_count() or 8)
        entries = {e.shape: e for e in shipped.entries[table.key(dtype, False, False)]}
        rows = record.setdefault(dtype, [])
        for text in args.shapes.split(","):
            m, n, k = (int(v) for v in text.split("x"))
            runner = Runner(dtype, False, False, Shape(m, n, k))
            times = sorted(((runner.time_config(c), c) for c in space), key=lambda t: t[0])
            best_ms, best = times[0]
            error, _ = runner.verify(best)
            entry = entries.get((m, n, k))
            own = entry.own if entry is not None else None
            own_ms = runner.time_config(own) if own is not None else math.nan
            cublas_ms = runner.time_cublas()
            small_h2h, cublas_h2h = runner.head_to_head(best)
            own_h2h = runner.head_to_head(own)[0] if own is not None else math.nan
            print(f"{dtype:8} {text:>16} {best_ms * 1e3:7.2f} {own_ms * 1e3:9.2f} "
                  f"{cublas_ms * 1e3:7.2f} {small_h2h * 1e3:9.2f} {own_h2h * 1e3:8.2f} "
                  f"{cublas_h2h * 1e3:10.2f}  {best} error {error:.2g}", flush=True)  # fmt: skip
            for ms, config in times[1:5]:
                print(f"{'':26} {ms * 1e3:7.2f}  {config}")
            rows.append({"shape": [m, n, k], "small_h2h_ms": small_h2h, "own_h2h_ms": own_h2h,
                         "cublas_h2h_ms": cublas_h2h, "own": str(own), "error": error,
                         "times": [[str(c), ms] for ms, c in times]})  # fmt: skip
            del runner
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe_small_family.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
