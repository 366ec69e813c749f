"""Beyond one GPU: host products on 1..N GPUs, and tunedgemm.dask against dask.array's own matmul.

Usage: python benchmarks/bench_multigpu.py [--gpus N] [--quick] [--repeats 3] [--out DIR]
           [--skip host|dask] [--sizes N ...] [--dtypes float32 float64]
       python benchmarks/bench_multigpu.py --dry-run      (prints the plan; needs no GPU)

1. Host to host: sgemm/dgemm on square C-ordered NumPy arrays of 8192^2, 16384^2 and 32768^2
   (--quick: 4096^2 and 8192^2), in one subprocess per GPU count k = 1..N, run with
   TUNEDGEMM_DEVICES=0..k-1. Wall-clock medians (a host call is complete when it returns).
   Peer, in the k = 1 process: CuPy's plain path on one GPU,
   cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b)). After the timed calls, one more result
   is checked against a float64 reference on 256 random rows and columns.
2. Dask: 32768^2 float32 in chunks of 8192 (--quick: 16384^2 in chunks of 4096), CuPy blocks
   made on the workers, on a cluster of k = 1..N GPU workers (one process per GPU,
   tunedgemm.dask.local_gpu_cluster): tunedgemm.dask.matmul(x, y), in IEEE arithmetic and
   with precision="3xtf32", with transfer="auto" (CUDA IPC between the workers
   where there are two or more: tunedgemm/dask_ipc.py) and, in IEEE arithmetic, with
   transfer="comm" (blocks through distributed's TCP comm, as before IPC), against
   dask.array's own x @ y (always the comm), each timed from graph submission
   until the result is persisted on the workers and their GPUs are idle (persist, wait, then
   a device synchronise on every worker; the next waits until the scheduler has forgotten
   the last); medians of --repeats runs, the order alternated. Each result is checked
   against a float64 reference on a sample of blocks (tunedgemm.dask.check_sample).

Prints tables, writes bench_multigpu.json and multigpu.png (benchmarks/plot_results.py) to
--out. Exits 1, saying why, where no GPU (or no CuPy) is usable.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HOST_SIZES, HOST_SIZES_QUICK = (8192, 16384, 32768), (4096, 8192)
DASK_SHAPE, DASK_SHAPE_QUICK = (32768, 8192), (16384, 4096)  # (edge, chunk)
DTYPES = ("float32", "float64")


def plan(args: argparse.Namespace, gpus: int) -> list[str]:
    sizes = args.sizes or (HOST_SIZES_QUICK if args.quick else HOST_SIZES)
    n, chunk = DASK_SHAPE_QUICK if args.quick else DASK_SHAPE
    routines = ", ".join({"float32": "sgemm", "float64": "dgemm"}[d] for d in args.dtypes)
    steps = []
    for k in range(1, gpus + 1):
        peer = " and CuPy's plain path" if k == 1 else ""
        steps.append(f"host: TUNEDGEMM_DEVICES={','.join(map(str, range(k)))}: {routines}"
                     f"{peer} at {', '.join(f'{s}^2' for s in sizes)}; median of {args.repeats}, "
                     "checked on sampled rows and columns")
    for k in range(1, gpus + 1):
        steps.append(f"dask: {k} GPU worker(s): tunedgemm.dask.matmul (transfer auto and "
                     f"comm) vs x @ y, {n}^2 float32 in chunks of {chunk}; median of "
                     f"{args.repeats}, checked on sampled blocks")  # fmt: skip
    return steps


# 1. Host to host, in a child process per GPU count -----------------------------------------


def host_child(sizes: list[int], dtypes: list[str], repeats: int, peer: bool,
               panels: int | None) -> None:  # fmt: skip
    """Time sgemm/dgemm (and CuPy's plain path when `peer`) in this process; prints each row
    as a line "ROW {json}" as soon as it is measured (a run cut short keeps what it has).
    panels: tunedgemm.pipeline.PANELS_PER_GPU for this process (None: as shipped)."""
    from tunedgemm import pipeline

    if panels is not None:
        pipeline.PANELS_PER_GPU = panels
    knobs = pipeline_knobs()
    for n in sizes:
        for dtype in dtypes:
            row = host_row(n, dtype, repeats, peer)
            row["panels_per_gpu"] = pipeline.PANELS_PER_GPU
            if knobs:
                row["pipeline"] = knobs
            print("ROW " + json.dumps(row), flush=True)


KNOBS_ENV = "BENCH_PIPELINE"


def pipeline_knobs() -> dict[str, int]:
    """Set tunedgemm.pipeline constants from BENCH_PIPELINE ("NAME=INT,NAME=INT": e.g.
    SPLIT_FIRST_PANEL=0), to compare settings on one machine; the ones set."""
    from tunedgemm import pipeline

    knobs: dict[str, int] = {}
    for item in filter(None, os.environ.get(KNOBS_ENV, "").split(",")):
        name, _, value = item.partition("=")
        if not hasattr(pipeline, name.strip()):
            raise SystemExit(f"{KNOBS_ENV}: tunedgemm.pipeline has no {name.strip()!r}")
        knobs[name.strip()] = int(value)
        setattr(pipeline, name.strip(), type(getattr(pipeline, name.strip()))(int(value)))
    return knobs


def host_row(n: int, dtype: str, repeats: int, peer: bool) -> dict[str, Any]:
    import tunedgemm
    from tunedgemm.timing import wall_median_ms

    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n), dtype=dtype) for _ in range(2))
    for x in (a, b):  # uniform(-1, 1), in place: no temporaries of 8 GiB at 32768^2 float64
        x *= 2
        x -= 1
    routine = tunedgemm.sgemm if dtype == "float32" else tunedgemm.dgemm
    row: dict[str, Any] = {"dtype": dtype, "n": n}
    row["tunedgemm_ms"] = wall_median_ms(lambda: routine(1.0, a, b), reps=repeats)
    # One more call, untimed, to check: keeping a timed call's result alive would change how
    # the next one allocates its result.
    row["check"] = sampled_check(routine(1.0, a, b), a, b)
    if peer:
        import cupy

        plain = lambda: cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b))  # noqa: E731
        row["cupy_ms"] = wall_median_ms(plain, reps=repeats)
        cupy.get_default_memory_pool().free_all_blocks()
    return row


def sampled_check(result: np.ndarray, a: np.ndarray, b: np.ndarray, lines: int = 256,
                  seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """A host product a @ b checked on `lines` random rows and columns of its result against
    a float64 reference (tunedgemm.checks): only those rows of a and columns of b are
    multiplied, so it serves products too large for a float64 reference whole."""
    from tunedgemm import checks

    rng = np.random.default_rng(seed)
    rows, cols = (np.sort(rng.choice(extent, min(lines, extent), replace=False))
                  for extent in result.shape)  # fmt: skip
    passed, error, tolerance = checks.check(result[np.ix_(rows, cols)], 1.0, a[rows],
                                            b[:, cols], 0.0, None, result.dtype)  # fmt: skip
    return {"passed": bool(passed), "error": error, "tolerance": float(tolerance)}


def host_table_row(row: dict[str, Any], k: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A child's row on k GPUs, with its speed-up over one GPU (from `rows`), printed."""
    row["gpus"] = k
    one = row if k == 1 else next(
        (r for r in rows if (r["gpus"], r.get("dtype"), r.get("n"))
         == (1, row["dtype"], row["n"])), {})  # fmt: skip
    nan = float("nan")
    row["speedup_vs_1"] = one.get("tunedgemm_ms", nan) / row["tunedgemm_ms"]
    n = row["n"]
    cupy_ms = one.get("cupy_ms", nan)
    print(f"{row['dtype']:8} {n:6d} {k:4d} {row.get('panels_per_gpu', 0):6d} "
          f"{row['tunedgemm_ms']:10.1f} "
          f"{2 * n**3 / row['tunedgemm_ms'] / 1e9:8.1f} {row['speedup_vs_1']:8.2f} "
          f"{cupy_ms:9.1f} {row['tunedgemm_ms'] / cupy_ms:9.2f} "
          f"{check_text(row.get('check'))}", flush=True)  # fmt: skip
    return row


def check_text(check: dict[str, Any] | None) -> str:
    if check is None:
        return "-"
    return f"{'ok' if check['passed'] else 'WRONG'} ({check['error']:.1e})"


def host_products(args: argparse.Namespace, gpus: int) -> list[dict[str, Any]]:
    sizes = args.sizes or (HOST_SIZES_QUICK if args.quick else HOST_SIZES)
    rows: list[dict[str, Any]] = []
    print(f"\n{'dtype':8} {'n':>6} {'GPUs':>4} {'panels':>6} {'ms':>10} {'TFLOP/s':>8} "
          f"{'x 1 GPU':>8} "
          f"{'CuPy ms':>9} {'ours/CuPy':>9} check")  # fmt: skip
    # One GPU once; on several, a child per PANELS_PER_GPU asked for (--panels-per-gpu).
    runs = [(k, panels) for k in range(1, gpus + 1)
            for panels in ([None] if k == 1 else args.panels_per_gpu or [None])]  # fmt: skip
    for k, panels in runs:
        env = dict(os.environ, TUNEDGEMM_DEVICES=",".join(map(str, range(k))))
        command = [sys.executable, __file__, "--host-child", "--repeats", str(args.repeats),
                   "--sizes", *map(str, sizes), "--dtypes", *args.dtypes
                   ] + (["--peer"] if k == 1 else [])  # fmt: skip
        if panels is not None:
            command += ["--panels-per-gpu", str(panels)]
        with tempfile.TemporaryFile("w+") as errors:  # (a pipe could fill and stall it)
            child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors,
                                     text=True)  # fmt: skip
            assert child.stdout is not None
            for line in child.stdout:  # each row as it comes: a run cut short keeps them
                if line.startswith("ROW "):
                    rows.append(host_table_row(json.loads(line[4:]), k, rows))
            if child.wait() != 0:
                errors.seek(0)
                tail = errors.read()[-3000:]
                print(f"host products on {k} GPU(s) failed (exit {child.returncode}):\n{tail}",
                      file=sys.stderr)  # fmt: skip
                rows.append({"gpus": k, "error": tail})
    return rows


# 2. Dask on CuPy blocks --------------------------------------------------------------------


def device_block(block_info: Any = None, seed: int = 0, dtype: str = "float32") -> Any:
    """A uniform(-1, 1) CuPy block, made on the worker's GPU, seeded by its place."""
    import cupy

    info = block_info[None]
    i, j = info["chunk-location"]
    rng = cupy.random.default_rng(seed * 1_000_003 + i * 1009 + j)
    return rng.random(info["chunk-shape"], dtype=dtype) * 2 - 1


def synchronize() -> None:
    import cupy

    cupy.cuda.runtime.deviceSynchronize()


def receive_settings(new: bool) -> None:
    """On a worker: how blocks are received through CUDA IPC (tunedgemm.dask_ipc): on a
    stream of their own with handles kept open, or (new=False) on the default stream with
    each handle closed after its copy, as before 2026-11-26 (the share tasks' priority and
    the rest of the graph as today). Handles kept by earlier runs stay: timed runs repeat a
    product on the same persisted operands, whose allocations the warm-up opened."""
    from tunedgemm import dask_ipc

    dask_ipc.RECEIVE_STREAM = new
    dask_ipc.HANDLES_KEPT = 32 if new else 0
    dask_ipc.receive_timings(reset=True)


def receives(client: Any) -> dict[str, float]:
    """The workers' receives through IPC handles since the last receive_settings: how many,
    the median and total seconds each spent opening, copying and closing, and the total
    seconds they waited for one another (one receive at a time per worker)."""
    from tunedgemm import dask_ipc

    found = [t for ts in client.run(dask_ipc.receive_timings).values() for t in ts]
    busy = [b for _, b in found]
    return {"receives": len(found), "receive_median_s": round(statistics.median(busy or [0]), 4),
            "receive_total_s": round(sum(busy), 4),
            "receive_waits_s": round(sum(w for w, _ in found), 4)}  # fmt: skip


def transfer_times(records: list[dict[str, Any]]) -> dict[str, float]:
    """Transfers between workers in a task stream: how many, their total and longest
    seconds (a transfer that waits behind queued GPU work shows here)."""
    parts = [part for record in records for part in record.get("startstops", ())]
    spans = [part["stop"] - part["start"] for part in parts if part.get("action") == "transfer"]
    return {"count": len(spans), "total_s": round(sum(spans), 4),
            "max_s": round(max(spans, default=0.0), 4)}


def scheduler_tasks(client: Any) -> int:
    """How many tasks the scheduler holds (results kept in memory included)."""
    return int(client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)))


def forgotten(client: Any, baseline: int, timeout: float = 60.0) -> None:
    """Wait until the scheduler has forgotten the last product: persisting a graph whose keys
    are still held returns at once (a tunedgemm run of 0.01 s at 32768^2 on 2026-11-23)."""
    deadline = time.perf_counter() + timeout
    while scheduler_tasks(client) > baseline:
        if time.perf_counter() > deadline:
            raise RuntimeError("the scheduler kept the previous product's tasks")
        time.sleep(0.05)


def products_per_worker(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many block products (tunedgemm's, or dask's own) each worker ran, from a task
    stream: the balance between GPUs."""
    counts: dict[str, int] = {}
    for record in records:
        key = record.get("key")
        name = key[0] if isinstance(key, tuple) else str(key)
        if "partial" in name or name.startswith(("matmul", "dot")):
            counts[record["worker"]] = counts.get(record["worker"], 0) + 1
    return counts


def dask_products(args: argparse.Namespace, gpus: int) -> list[dict[str, Any]]:
    import cupy
    import dask.array as da
    import distributed

    import tunedgemm.dask as tgd

    n, chunk = DASK_SHAPE_QUICK if args.quick else DASK_SHAPE
    chunks = da.core.normalize_chunks(chunk, (n, n))
    meta = cupy.empty((0, 0), np.float32)
    # 3xtf32: float32 accuracy on the tensor cores (docs/precision.md); IEEE float32 cannot
    # beat dask's own product by much on one GPU, which runs cuBLAS SGEMM near the FFMA ceiling.
    methods = {"tunedgemm": lambda x, y: tgd.matmul(x, y, transfer="auto"),
               "dask": lambda x, y: x @ y,
               "tunedgemm 3xtf32": lambda x, y: tgd.matmul(x, y, precision="3xtf32",
                                                           transfer="auto"),
               "tunedgemm comm": lambda x, y: tgd.matmul(x, y, transfer="comm")}
    if gpus > 1:  # blocks received as before 2026-11-26: default stream, each handle closed
        methods["tunedgemm receive as before"] = methods["tunedgemm"]
    rows = []
    print(f"\n{'workers':>7} {'transfer':>8} {'tunedgemm s':>11} {'dask s':>8} {'speedup':>8} "
          f"{'3xtf32 s':>9} {'speedup':>8} {'comm s':>8} {'check':>30}")  # fmt: skip
    for k in range(1, gpus + 1):
        started = time.perf_counter()
        with tgd.local_gpu_cluster(gpus=range(k)) as cluster, \
                distributed.Client(cluster) as client:  # fmt: skip
            print(f"  {k} worker(s) up after {time.perf_counter() - started:.1f} s", flush=True)
            x, y = (da.map_blocks(device_block, chunks=chunks, dtype=np.float32, meta=meta,
                                  seed=seed).persist() for seed in (1, 2))  # fmt: skip
            distributed.wait([x, y])
            client.run(synchronize)
            print(f"  {k} worker(s): operands made after {time.perf_counter() - started:.1f} s",
                  flush=True)  # fmt: skip
            transfer = "ipc" if tgd._use_ipc("auto", [x, y]) else "comm"  # what auto picks
            baseline = scheduler_tasks(client)
            seconds: dict[str, list[float]] = {name: [] for name in methods}
            checks: dict[str, tuple[bool, float, float]] = {}
            spread: dict[str, dict[str, int]] = {}
            transfers: dict[str, dict[str, float]] = {}
            for run in range(args.repeats + 1):  # the first of each is a warm-up
                for name in list(methods)[:: 1 if run % 2 else -1]:
                    if k == 1 and "as before" in name:
                        continue  # nothing is received on one worker
                    client.run(receive_settings, "as before" not in name)
                    start = time.perf_counter()
                    with distributed.get_task_stream(client) as stream:
                        product = methods[name](x, y).persist()
                        distributed.wait(product)
                        client.run(synchronize)
                    elapsed = time.perf_counter() - start
                    if run == 1:
                        spread[name] = products_per_worker(stream.data)
                        transfers[name] = transfer_times(stream.data)
                        transfers[name].update(receives(client))
                    print(f"  {k} worker(s) run {run} {name}: {elapsed:.2f} s", flush=True)
                    if run:
                        seconds[name].append(elapsed)
                    else:
                        checks[name] = tgd.check_sample(x, y, product, blocks=2, seed=k)
                    del product
                    forgotten(client, baseline)
        ours, theirs, fast, comm = (statistics.median(seconds[name]) for name in list(methods)[:4])
        row = {"workers": k, "n": n, "chunk": chunk, "tunedgemm_s": ours, "dask_s": theirs,
               "speedup": theirs / ours, "tunedgemm_3xtf32_s": fast,
               "speedup_3xtf32": theirs / fast, "transfer": transfer,
               "tunedgemm_comm_s": comm, "samples": seconds, "products_per_worker": spread,
               "transfers": transfers,
               "check": {name: {"passed": c[0], "error": c[1], "tolerance": c[2]}
                         for name, c in checks.items()}}  # fmt: skip
        rows.append(row)
        print(f"  block products per worker (run 1): {spread}", flush=True)
        print(f"  transfers (run 1): {transfers}", flush=True)
        for name in [name for name in list(methods)[4:] if seconds[name]]:
            print(f"  {name}: median {statistics.median(seconds[name]):.2f} s", flush=True)
        verdict = ", ".join(f"{name} {'ok' if c[0] else 'WRONG'} ({c[1]:.1e})"
                            for name, c in checks.items())  # fmt: skip
        print(f"{k:7d} {transfer:>8} {ours:11.2f} {theirs:8.2f} {theirs / ours:8.2f} "
              f"{fast:9.2f} {theirs / fast:8.2f} {comm:8.2f} {verdict:>30}",
              flush=True)  # fmt: skip
    return rows


# Driver ------------------------------------------------------------------------------------


def usable_gpus() -> tuple[int, str]:
    """(how many GPUs, why none) for this run."""
    from tunedgemm import cuda, devices

    ok, why = cuda.status()
    if not ok:
        return 0, why
    try:
        import cupy  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        return 0, f"{exc.name} is not importable (pip install cupy, 'tunedgemm[dask]')"
    return len(devices.selected()), "TUNEDGEMM_DEVICES selects none"


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--gpus", type=int, default=None, help="up to this many (default all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=".", help="folder for the JSON and the plot")
    parser.add_argument("--skip", choices=["host", "dask"], default=None)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("--host-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*",
                        help="host product edges (default 8192 16384 32768)")  # fmt: skip
    parser.add_argument("--dtypes", nargs="*", choices=DTYPES, default=list(DTYPES),
                        help="host product dtypes (default both)")  # fmt: skip
    parser.add_argument("--panels-per-gpu", type=int, nargs="*", default=None,
                        help="host products on several GPUs: one run per value of "
                             "tunedgemm.pipeline.PANELS_PER_GPU (default: as shipped)")  # fmt: skip
    args = parser.parse_args()
    if args.host_child:
        panels = args.panels_per_gpu[0] if args.panels_per_gpu else None
        host_child(args.sizes, args.dtypes, args.repeats, args.peer, panels)
        return 0
    if args.dry_run:
        gpus = args.gpus or 2
        print(f"bench_multigpu plan for {gpus} GPU(s) (--gpus sets the count):")
        print("\n".join(f"  {step}" for step in plan(args, gpus)))
        return 0
    found, why = usable_gpus()
    if not found:
        print(f"bench_multigpu: needs a GPU with CuPy and distributed: {why}", file=sys.stderr)
        return 1
    gpus = min(args.gpus or found, found)
    import tunedgemm
    from tunedgemm import devices

    print("\n".join(plan(args, gpus)))
    data: dict[str, Any] = {
        "device": ", ".join(g.name for g in devices.selected()[:gpus]),
        "gpus": gpus,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python", *sys.argv]),
        "tunedgemm_gpus": tunedgemm.info()["gpus"],
    }
    if args.skip != "host":
        data["host_to_host"] = host_products(args, gpus)
    if args.skip != "dask":
        data["dask"] = dask_products(args, gpus)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_multigpu.json").write_text(json.dumps(data, indent=1))
    from plot_results import plot_multigpu

    plot_multigpu(data, out)
    print(f"wrote {out / 'bench_multigpu.json'} and {out / 'multigpu.png'}")
    wrong = [r for r in data.get("dask", []) if not all(c["passed"] for c in r["check"].values())]
    wrong += [r for r in data.get("host_to_host", [])
              if not r.get("check", {}).get("passed", True)]  # fmt: skip
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
