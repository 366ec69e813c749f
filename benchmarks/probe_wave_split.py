"""Would a split-K launch of only the last few tiles take back the DGEMM squares' last wave?

Usage: python benchmarks/probe_wave_split.py [--shapes 8192x8192x8192,...] [--out DIR]

At 8192^3 dmma's 128 x 128 tile makes 4096 blocks: 31 waves of 132 and 4 blocks more, so the
last wave idles 128 SMs for a tile's time (about 3% of the product). dmma's stream-K, which
should take it back, lost 9-15% there (bench_kernels.py --dmma-tail, H100, 2026-11-28). This
times, beside one launch of the config over all of C, the same config over three parts of C
on three streams: C but its last block column (R1), that column but its last q tiles (R2, q =
the blocks over whole waves), and those q tiles split in k, SMs // q slices (T, with its
reduction; tunedgemm/tail_split.py's parts). R1's part-filled last wave and R2 then fill a
wave, and T's short blocks one more.
Each element of C is one kernel's sum, the same from run to run (T's are split-K sums: other
bits than the whole tile's). NN, padded operands, the dmma default with the cursors (the
config a call ran at 8192^3 on 2026-11-28); timed as bench_kernels times (CUDA-event medians,
in turn, twice) and in long runs of each as bench_device's calls run (forwards, then
backwards), beside cuBLAS.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPES = "8192x8192x8192,8192x8192x4096"
LONG_RUN = 40  # calls in the long run of each


def long_run_ms(work: Any, stream: Any, calls: int = LONG_RUN) -> float:
    """ms a call in a run of `calls` back-to-back calls (after two), by events on `stream`."""
    import pycuda.driver as drv

    work(), work()
    start, stop = drv.Event(), drv.Event()
    start.record(stream)
    for _ in range(calls):
        work()
    stop.record(stream)
    stop.synchronize()
    return stop.time_since(start) / calls


def probe(shape: tuple[int, int, int]) -> dict[str, Any]:
    import pycuda.driver as drv

    from tunedgemm import cuda, gpu_backend, launch, reference, tail_split
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, "float64", padded=True)
    family = FAMILIES["dmma"]
    params = {**family.default_config("float64").as_dict(), "ADVANCE": 1}
    whole = KernelConfig.make("dmma", params)
    split = tail_split.parts(problem.form, family.block_tile(params), cuda.sm_count())
    row: dict[str, Any] = {"m": m, "n": n, "k": k, "config": str(whole)}
    if split is None:
        row["skipped"] = "tail_split.parts does not apply here"
        return row
    streams = [drv.Stream() for _ in split]
    launches, held = [], []
    for (form, slices), stream in zip(split, streams, strict=True):
        config = KernelConfig.make("dmma", {**params, "SPLIT_K": slices})
        nbytes = launch.workspace_bytes(config, problem.dtype, form)
        held.append(cuda.allocate(nbytes) if nbytes else None)
        launches.append((form, config, stream, int(held[-1] or 0)))
    row["parts"] = [{"m": f.m, "n": f.n, "split": s} for f, s in split]
    joined, done = drv.Event(), [drv.Event() for _ in split]

    def one() -> None:
        gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, whole, stream=streams[0])

    def three() -> None:
        joined.record(streams[0])
        for stream in streams[1:]:
            stream.wait_for_event(joined)
        for (form, config, stream, workspace), event in zip(launches, done, strict=True):
            gpu_backend.run(form, problem.dtype, 1.0, 0.0, config, stream=stream,
                            workspace=workspace)  # fmt: skip
            event.record(stream)
        for event in done[1:]:
            streams[0].wait_for_event(event)

    def peer() -> None:
        reference.gemm(problem.form, problem.dtype, 1.0, 0.0, stream=streams[0])

    one(), streams[0].synchronize()
    want = problem.c()
    problem.poison_c()
    three(), streams[0].synchronize()
    got = problem.c()
    row["finite"] = bool(np.isfinite(got).all())
    row["max_rel_diff"] = float(np.abs(got - want).max() / np.abs(want).max())
    runs = {"one": one, "three": three, "cublas": peer}
    for label in runs:
        row[f"{label}_ms"] = np.inf
    for _ in range(2):  # in turn, twice, the lesser median kept
        for label, work in runs.items():
            ms = gpu_median_ms(work, warmup=3, reps=15, stream=streams[0])
            row[f"{label}_ms"] = min(ms, row[f"{label}_ms"])
    # Long runs, forwards then backwards (what ran before a run heats the GPU), the lesser kept.
    order = list(runs)
    for labels in (order, order[::-1]):
        for label in labels:
            ms = long_run_ms(runs[label], streams[0])
            row[f"{label}_long_ms"] = min(ms, row.get(f"{label}_long_ms", np.inf))
    return row


def _ratio(row: dict[str, Any], label: str, run: str) -> str:
    """'ms (cuBLAS's ms / ms)' of a row's label in the run ('' or '_long')."""
    ms = row[f"{label}{run}_ms"]
    return f"{ms:.3f} ({row[f'cublas{run}_ms'] / ms:.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from tunedgemm import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"probe_wave_split: needs a GPU ({why})")
        return 1
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {cuda.device().name()}, {stamp}; float64 NN; ms a call; ratio = cuBLAS / ours")
    rows = []
    for text in args.shapes.split(","):
        shape = tuple(int(v) for v in text.split("x"))
        row = probe(shape)  # type: ignore[arg-type]
        rows.append(row)
        if "skipped" in row:
            print(f"{text}: skipped ({row['skipped']})")
            continue
        cells = " ".join(f"{label} {_ratio(row, label, '')}, long {_ratio(row, label, '_long')}"
                         for label in ("one", "three"))  # fmt: skip
        print(f"{text}: {cells}; cuBLAS {row['cublas_ms']:.3f}, long {row['cublas_long_ms']:.3f};"
              f" parts {row['parts']}; finite {row['finite']}, max rel diff "
              f"{row['max_rel_diff']:.2e}", flush=True)  # fmt: skip
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        record = {"date": stamp, "device": cuda.device().name(),
                  "command": " ".join(["python", *sys.argv]), "rows": rows}  # fmt: skip
        (out / "probe_wave_split.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
