"""Where a host product's time goes on each GPU: first product, busy and idle time, staging rate.

Usage: TUNEDGEMM_DEVICES=0,1 python benchmarks/profile_multigpu_host.py [--n 16384]
           [--dtype float32] [--repeats 2] [--out DIR]

Runs sgemm/dgemm on C-ordered NumPy operands of n^2 (a warm-up, then --repeats calls) with
every pipeline (tunedgemm.pipeline._Run, one per GPU) instrumented: CUDA events around each
tile product on its GPU's compute stream, timed from an event recorded when the pipeline
was made, and the host spans of tunedgemm.pipeline's trace, by thread. Prints per GPU of the
last call: first product start, product time, idle time between products, the end of its
last product, the call's wall time, and the host's staging rate. Writes
profile_multigpu_host-<gpus>.json to --out. Needs the GPU (PyCUDA).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def instrument(calls: list[dict[str, Any]]) -> None:
    """Wrap tunedgemm.pipeline._Run so that each pipeline records its products' spans and
    its transfers' (uploads of A, B or C blocks, and copies of B panels from another GPU)."""
    from tunedgemm import pipeline

    lock = threading.Lock()
    made, closing = pipeline._Run.__init__, pipeline._Run.close
    uploading, copying = pipeline._Run._upload, pipeline._Run._copy_panel

    def on_upload_stream(kind: Any, method: Any) -> Any:
        """`method` with events around what it queues on the upload stream (the span
        includes its waits: for the stream's earlier work, and for another GPU's upload)."""

        def wrapped(self: Any, *args: Any) -> Any:
            entry = self.__dict__.get("profile")
            if entry is None:
                return method(self, *args)
            before = self.drv.Event()
            before.record(self.streams.up)
            result = method(self, *args)
            after = self.drv.Event()
            after.record(self.streams.up)
            entry["transfers"].append((kind(self, args), before, after, time.perf_counter()))
            return result

        return wrapped

    def ring_name(run: Any, args: tuple[Any, ...]) -> str:
        ring = args[1]
        return "up A" if ring is run.ring_a else "up B" if ring is run.ring_b else "up C"

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        drv, launch = self.drv, self.launch
        start = drv.Event()
        start.record(self.streams.compute)
        thread = threading.current_thread().name
        entry = {"thread": thread, "t0": time.perf_counter(), "start": start, "events": [],
                 "transfers": []}  # fmt: skip

        def timed(form: Any, alpha: float, beta: float, stream: Any) -> Any:
            before = drv.Event()
            before.record(stream)
            result = launch(form, alpha, beta, stream)
            after = drv.Event()
            after.record(stream)
            entry["events"].append((before, after, time.perf_counter()))
            return result

        if hasattr(launch, "reserve"):
            timed.reserve = launch.reserve  # type: ignore[attr-defined]
        self.launch = timed
        self.profile = entry

    def close(self: Any, before_free: Any = None) -> None:
        entry = self.__dict__.pop("profile", None)
        if entry is not None:  # (events are read and dropped here, in the pipeline's thread)
            self.streams.compute.synchronize()
            start = entry.pop("start")
            entry["products_ms"] = [(start.time_till(b), start.time_till(a), queued)
                                    for b, a, queued in entry.pop("events")]  # fmt: skip
            self.streams.up.synchronize()
            entry["transfers_ms"] = [(kind, start.time_till(b), start.time_till(a), queued)
                                     for kind, b, a, queued in entry.pop("transfers")]  # fmt: skip
            with lock:
                calls[-1]["pipelines"].append(entry)
        closing(self, before_free)

    def traced(what: str, work: Any) -> Any:
        begin = time.perf_counter()
        result = work()
        with lock:
            calls[-1]["host"].append((threading.current_thread().name, what, begin,
                                      time.perf_counter()))  # fmt: skip
        return result

    pipeline._Run.__init__ = init  # type: ignore[method-assign]
    pipeline._Run._upload = on_upload_stream(ring_name, uploading)  # type: ignore[method-assign]
    pipeline._Run._copy_panel = on_upload_stream(lambda run, args: "copy B", copying)  # type: ignore[method-assign]
    pipeline._Run.close = close  # type: ignore[method-assign]
    pipeline._traced = traced


def summary(call: dict[str, Any], itemsize: int) -> list[dict[str, Any]]:
    """Per pipeline (GPU) of one call: its timeline in ms from the call's start."""
    rows = []
    for entry in call["pipelines"]:
        offset = (entry["t0"] - call["t0"]) * 1e3
        spans = sorted((offset + b, offset + a) for b, a, _ in entry["products_ms"])
        idle = sum(max(0.0, b - previous) for (_, previous), (b, _) in itertools.pairwise(spans))
        thread = entry["thread"]
        staged = [(what, end - begin) for name, what, begin, end in call["host"]
                  if name == thread and what.startswith("stage")]  # fmt: skip
        staged_bytes = sum(itemsize * np.prod(ast.literal_eval(what[6:])) for what, _ in staged)
        staged_s = sum(seconds for _, seconds in staged)
        waits = sum(end - begin for name, what, begin, end in call["host"]
                    if name == thread and what == "wait staging buffer")  # fmt: skip
        panel_waits = sum(end - begin for name, what, begin, end in call["host"]
                          if name == thread and what == "wait for B panel")  # fmt: skip
        t0 = call["t0"]
        # (what, GPU start, GPU end, host queued), ms from the call's start
        transfers = [(kind, round(offset + b, 2), round(offset + a, 2), round((q - t0) * 1e3, 2))
                     for kind, b, a, q in entry["transfers_ms"]]  # fmt: skip
        first_spans = [(what, round((begin - t0) * 1e3, 1), round((end - t0) * 1e3, 1))
                       for name, what, begin, end in call["host"] if name == thread][:6]
        rows.append({"thread": thread, "products": len(spans),
                     "first_product_ms": round(spans[0][0], 2) if spans else None,
                     "products_ms": round(sum(a - b for b, a in spans), 2),
                     "idle_between_ms": round(idle, 2),
                     "last_product_end_ms": round(spans[-1][1], 2) if spans else None,
                     "staged_gib": round(staged_bytes / 2**30, 3),
                     "staging_gb_s": round(staged_bytes / staged_s / 1e9, 1) if staged_s else None,
                     "waiting_for_buffers_ms": round(waits * 1e3, 2),
                     "waiting_for_b_panels_ms": round(panel_waits * 1e3, 2),
                     "first_host_spans_ms": first_spans,
                     "spans_ms": [(round(b, 2), round(a, 2)) for b, a in spans],
                     "transfers_ms": transfers})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    from bench_multigpu import pipeline_knobs

    import tunedgemm
    from tunedgemm import pipeline

    knobs = pipeline_knobs()  # (BENCH_PIPELINE: pipeline constants to compare)
    calls: list[dict[str, Any]] = []
    instrument(calls)
    rng = np.random.default_rng()
    a, b = (rng.uniform(-1, 1, (args.n, args.n)).astype(args.dtype) for _ in range(2))
    routine = tunedgemm.sgemm if args.dtype == "float32" else tunedgemm.dgemm
    gpus = os.environ.get("TUNEDGEMM_DEVICES", "all")
    for repeat in range(args.repeats + 1):
        calls.append({"t0": time.perf_counter(), "pipelines": [], "host": []})
        routine(1.0, a, b)
        calls[-1]["wall_ms"] = (time.perf_counter() - calls[-1]["t0"]) * 1e3
        calls[-1]["spread"] = pipeline.last_spread()
        calls[-1]["panels"] = pipeline.last_panel_traffic()
        print(f"call {repeat} ({'warm-up' if repeat == 0 else 'timed'}): "
              f"{calls[-1]['wall_ms']:.1f} ms, tiles per GPU {calls[-1]['spread']}, "
              f"panels {calls[-1]['panels']}", flush=True)  # fmt: skip
    itemsize = np.dtype(args.dtype).itemsize
    report = {"n": args.n, "dtype": args.dtype, "gpus": gpus, "pipeline": knobs,
              "calls": [{"wall_ms": round(c["wall_ms"], 2), "spread": c["spread"],
                         "pipelines": summary(c, itemsize)} for c in calls[1:]]}  # fmt: skip
    print(f"\n{args.n}^2 {args.dtype}, TUNEDGEMM_DEVICES={gpus} {knobs or ''}, last call "
          f"{report['calls'][-1]['wall_ms']:.1f} ms:")
    print(f"{'thread':>16} {'tiles':>5} {'first':>7} {'busy':>7} {'idle':>7} {'end':>7} "
          f"{'staged GiB':>10} {'GB/s':>6} {'buf wait':>8}")
    for row in report["calls"][-1]["pipelines"]:
        print(f"{row['thread']:>16} {row['products']:5d} {row['first_product_ms']:7.1f} "
              f"{row['products_ms']:7.1f} {row['idle_between_ms']:7.1f} "
              f"{row['last_product_end_ms']:7.1f} {row['staged_gib']:10.3f} "
              f"{row['staging_gb_s'] or 0:6.1f} {row['waiting_for_buffers_ms']:8.1f}")
        print(f"{'':>16} products (ms): {row['spans_ms']}")
        print(f"{'':>16} waiting for B panels {row['waiting_for_b_panels_ms']} ms; first host "
              f"spans (ms): {row['first_host_spans_ms']}")
        print(f"{'':>16} first transfers (what, GPU start, GPU end, queued at): "
              f"{row['transfers_ms'][:8]}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "".join(f"-{k}{v}" for k, v in knobs.items())
    name = f"profile_multigpu_host-{args.n}-{args.dtype}-{gpus.replace(',', '')}{tag}.json"
    (out / name).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
