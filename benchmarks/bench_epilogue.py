"""dmma's epilogues (issue 15, item 4): one config with EPILOGUE=0 (C stored from the mma
fragments) and EPILOGUE=1 (staged in shared memory, 16-byte stores along m), against cuBLAS
DGEMM on the same device operands; CUDA-event medians, beta 0 and 1 (beta != 0 reads C).

Usage: python benchmarks/bench_epilogue.py [--config "dmma(BK=16,...)"] [--shapes 8192x8192x128 ...]
                                          [--beta 0 1] [--reps 15] [--out DIR]
Without --config, each shape times the table's own-kernel choice there (when it is a dmma
config) and dmma's default. Each pair's outputs are compared bit for bit (beta = 1).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

# Small k (writing C dominates: 8192^2 doubles are 512 MiB against 16 MiB of A and B), and a
# square one where the main loop does.
SHAPES = [(8192, 8192, 128), (1500, 1500, 64), (4096, 4096, 64), (4096, 4096, 4096)]


def parse_shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def configs_at(shape: tuple[int, int, int], given: str | None) -> list[Any]:
    """The dmma configs to time at this shape, each with EPILOGUE as recorded or defaulted
    (both values are timed)."""
    import os

    from tunedgemm import selection
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning.writer import config_from_text

    if given:
        config = config_from_text(given)
        if config is None or config.family != "dmma":
            raise SystemExit(f"--config {given!r} is not a dmma config")
        return [config]
    os.environ[selection.CUBLAS_ENV] = "0"  # the table's best own kernel, not cuBLAS
    try:
        tuned = selection.choose("float64", *shape, warn=False).config
    finally:
        del os.environ[selection.CUBLAS_ENV]
    picked = [tuned] if isinstance(tuned, KernelConfig) and tuned.family == "dmma" else []
    return list(dict.fromkeys([*picked, FAMILIES["dmma"].default_config("float64")]))


def with_epilogue(config: Any, value: int) -> Any:
    """config with EPILOGUE=value; the staged epilogue (1) with the mma unswapped (SWAP_AB=0:
    a swapped config's 16-byte pairs are stored from the fragments)."""
    from tunedgemm.params import KernelConfig

    swap = {"SWAP_AB": 0} if value else {}
    return KernelConfig.make(config.family, {**config.as_dict(), "EPILOGUE": value, **swap})


def label(config: Any) -> str:
    """The config as printed, without its EPILOGUE (both are timed)."""
    return str(with_epilogue(config, 0)).replace(",EPILOGUE=0", "")


def time_shape(shape: tuple[int, int, int], configs: list[Any], betas: list[float],
               reps: int) -> list[dict[str, Any]]:  # fmt: skip
    from tunedgemm import gpu_backend, reference
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, "float64")
    problem.set_c(np.full((m, n), 0.5))  # finite C (made NaN) for beta != 0
    rows = []
    for beta in betas:
        cublas_ms = float("nan")
        if reference.status()[0]:
            cublas_ms = gpu_median_ms(
                lambda b=beta: reference.gemm(problem.form, problem.dtype, 1.0, b),
                warmup=3, reps=reps)  # fmt: skip
        for config in configs:
            times = {}
            for value in (0, 1):
                variant = with_epilogue(config, value)
                times[value] = gpu_median_ms(
                    lambda c=variant, b=beta: gpu_backend.run(problem.form, problem.dtype,
                                                              1.0, b, c),
                    warmup=3, reps=reps)  # fmt: skip
            rows.append({"m": m, "n": n, "k": k, "beta": beta,
                         "config": label(config),
                         "ms_epilogue0": times[0], "ms_epilogue1": times[1],
                         "cublas_ms": cublas_ms, "vs_cublas0": cublas_ms / times[0],
                         "vs_cublas1": cublas_ms / times[1],
                         "speedup": times[0] / times[1]})  # fmt: skip
    return rows


def bit_equal(shape: tuple[int, int, int], config: Any) -> bool:
    """EPILOGUE 0 and 1 of config give the same bits (beta = 1, so C is read too)."""
    from tunedgemm import gpu_backend
    from tunedgemm.tuning import problems

    problem = problems.make(*shape, "float64")
    start = np.full(shape[:2], 0.25)
    outs = []
    for value in (0, 1):
        problem.set_c(start)
        gpu_backend.run(problem.form, problem.dtype, 1.5, 1.0, with_epilogue(config, value))
        outs.append(problem.c().tobytes())
    return outs[0] == outs[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="one dmma config as printed (EPILOGUE is overridden)")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=SHAPES)
    parser.add_argument("--beta", nargs="+", type=float, default=[0.0, 1.0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from tunedgemm import cuda, reference

    ok, why = cuda.status()
    if not ok:
        print(f"bench_epilogue: needs a GPU ({why})")
        return 1
    device = cuda.device().name()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {device}, {stamp}, {reference.status()[1]}; ms are CUDA-event medians of "
          f"{args.reps}; vs cuBLAS = cuBLAS ms / ours (> 1: ours faster)")  # fmt: skip
    print(f"{'m x n x k':>16} {'beta':>4} {'EPI=0 ms':>9} {'EPI=1 ms':>9} {'cuBLAS':>8} "
          f"{'vs cuB 0':>8} {'vs cuB 1':>8} {'1 vs 0':>6} {'bits':>5}  config")  # fmt: skip
    rows = []
    for shape in args.shapes:
        configs = configs_at(shape, args.config)
        checked = {label(config): bit_equal(shape, config) for config in configs}
        for row in time_shape(shape, configs, args.beta, args.reps):
            row["bit_equal"] = checked[row["config"]]
            rows.append(row)
            print(f"{'x'.join(map(str, shape)):>16} {row['beta']:4g} {row['ms_epilogue0']:9.3f} "
                  f"{row['ms_epilogue1']:9.3f} {row['cublas_ms']:8.3f} {row['vs_cublas0']:8.2f} "
                  f"{row['vs_cublas1']:8.2f} {row['speedup']:6.2f} "
                  f"{'same' if row['bit_equal'] else 'DIFF':>5}  {row['config']}",
                  flush=True)  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"device": device, "date": stamp, "reference": reference.status()[1],
              "command": " ".join(["python", *sys.argv]), "rows": rows}  # fmt: skip
    (out / "bench_epilogue.json").write_text(json.dumps(record, indent=1))
    return 0 if all(row["bit_equal"] for row in rows) else 2


if __name__ == "__main__":
    sys.exit(main())
