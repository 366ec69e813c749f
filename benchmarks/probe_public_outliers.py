"""Why did a few tiny random shapes' public calls cost several times their planned launch?

Usage: python benchmarks/probe_public_outliers.py [--shapes float64:293x63x320,...] [--out DIR]

bench_tuning's random run of 2026-11-27 07:57 UTC (H100, seed 1795766229) timed float64
293x63x320's public call at 50 us where the same config's planned launch took 7.5, and
float32 11537x42x36's with cuBLAS allowed at 44 us where cuBLAS itself took 21. For each
shape, own kernels only and with cuBLAS allowed, this plans afresh, then times the public
call (sgemm/dgemm into c on PyCUDA GPUArray views, as bench_tuning does) in several runs of
calls, printing each run's GPU and host time per call (tunedgemm.timing.gpu_and_host_ms),
what the plan runs, and what autotuning timed for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = (
    "float64:293x63x320,float32:11537x42x36,float64:180x196x86,float64:1149x1213x81,"
    "float32:180x196x86"
)
RUNS = 6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import bench_tuning

    from tunedgemm import autotune, cuda
    from tunedgemm.timing import gpu_and_host_ms
    from tunedgemm.tuning import problems

    cuda.context()
    print(f"# {cuda.device_name()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          "us per call: GPU / host, in runs of calls", flush=True)  # fmt: skip
    results = []
    for item in args.shapes.split(","):
        dtype, text = item.split(":")
        m, n, k = (int(v) for v in text.split("x"))
        problem = problems.make(m, n, k, np.dtype(dtype), padded=True)
        for allowed in (False, True):
            with bench_tuning.cublas_setting(allowed):
                call = bench_tuning.public_call(problem)
                runs = [gpu_and_host_ms(call, 2, 5) for _ in range(RUNS)]
                choice = bench_tuning._public_choice(problem)
                history = [h for h in autotune.history() if h["shape"][1:4] == (m, n, k)]
            label = f"{dtype} {text} {'auto' if allowed else 'own'}"
            print(f"{label}: " + "  ".join(f"{g * 1e3:.1f}/{h * 1e3:.1f}" for g, h in runs))
            print(f"   runs: {choice.split(': ')[1][:160] if ': ' in choice else choice}")
            if history:
                last = history[-1]
                timed = sorted(zip(last["ms"], last["candidates"], strict=True))[:4]
                print("   autotuning: " + "; ".join(f"{ms * 1e3:.1f} {c[:60]}" for ms, c in timed))
            results.append({"shape": [m, n, k], "dtype": dtype, "cublas_allowed": allowed,
                            "gpu_host_ms": runs, "choice": choice,
                            "autotuning": history[-1] if history else None})  # fmt: skip
    if args.out:
        (Path(args.out) / "probe_public_outliers.json").write_text(
            json.dumps({"device": cuda.device_name(), "results": results}, indent=1, default=str)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
