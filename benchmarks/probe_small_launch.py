"""At small shapes, do own kernels lose to cuBLASLt in GPU time or in host time a launch?

Usage: python benchmarks/probe_small_launch.py [--dtype float32 float64] [--shapes 64x64x64,...]

Issue 15: at the shipped table's smallest shapes (cuBLAS under 12 us) cuBLAS keeps the entry
by 10-40%: cuBLASLt 4.1-8.3 us a call against 6.3-11.8 for the best own config, as the tuner
times them (back-to-back launches over rotated operand sets). cuBLASLt calls that repeat are
replayed as captured graphs (1.7 us of host time); own kernels go through cuLaunchKernel.
For each shape's own config (the table's) and cuBLAS, NN on padded operands, this prints:

- tuner: the tuner's median (tunedgemm.tuning.runner.Runner);
- planned: host us per call and CUDA-event us per call of 50 back-to-back calls on one
  operand set as a planned call makes them (plans.launcher; since 2026-11-27 own launches
  too are replayed as graphs where a call repeats, unless TUNEDGEMM_GRAPHS=0);
- replay: the same for a one-call graph captured here once and replayed (cuGraphLaunch);
- GPU: CUDA-event us per call of a graph of 20 calls replayed once, which no host cost
  reaches: the GPU time of back-to-back calls.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_call_cost import run_us
from probe_graph_launch import _driver, _ok, captured

SHAPES = "64x64x64,128x128x128,256x256x256,128x128x384,512x64x512,1024x128x128,384x384x128"


def _gpu_us(driver: ctypes.CDLL, run, form, calls: int = 20) -> float:
    """Events us per call of `calls` calls captured into one graph, replayed: the least of 5."""
    import pycuda.driver as drv

    stream = drv.Stream()
    handle = int(stream.handle)
    run(form.a, form.b, form.c, 1.0, 0.0, handle)  # a split-K workspace for this stream first
    stream.synchronize()

    def queue(s: int) -> None:
        for _ in range(calls):
            run(form.a, form.b, form.c, 1.0, 0.0, s)

    graph = captured(driver, queue, handle)
    best = float("inf")
    for _ in range(5):
        start, stop = drv.Event(), drv.Event()
        start.record(stream)
        _ok(driver.cuGraphLaunch(graph, ctypes.c_void_p(handle)), "cuGraphLaunch")
        stop.record(stream)
        stop.synchronize()
        best = min(best, stop.time_since(start) * 1e3 / calls)
    return best


def _replay(driver: ctypes.CDLL, run, form) -> tuple[float, float]:
    """(host us, events us) per call of one call captured once and replayed on its stream."""
    import pycuda.driver as drv

    stream = drv.Stream()
    handle = int(stream.handle)
    run(form.a, form.b, form.c, 1.0, 0.0, handle)
    stream.synchronize()
    graph = captured(driver, lambda s: run(form.a, form.b, form.c, 1.0, 0.0, s), handle)
    launch, raw = driver.cuGraphLaunch, ctypes.c_void_p(handle)
    return run_us(lambda: launch(graph, raw))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--shapes", default=SHAPES)
    args = parser.parse_args()

    from tunedgemm import cuda, plans, table
    from tunedgemm.tuning.runner import Runner
    from tunedgemm.tuning.space import Shape

    cuda.context()
    driver = _driver()
    shipped = table.load(table.shipped_path()).devices[0]
    print(f"# {cuda.device_name()}; NN, padded operands; us per call")
    print(f"{'dtype':8} {'shape':>14} {'kernel':6} {'tuner':>6} {'planned host/ev':>15} "
          f"{'replay host/ev':>15} {'GPU':>6}")  # fmt: skip
    for dtype in args.dtype:
        entries = {e.shape: e for e in shipped.entries[table.key(dtype, False, False)]}
        for text in args.shapes.split(","):
            m, n, k = (int(v) for v in text.split("x"))
            entry = entries.get((m, n, k))
            if entry is None or entry.own is None:
                print(f"{dtype:8} {text:>14} not in the table")
                continue
            runner = Runner(dtype, False, False, Shape(m, n, k))
            form = runner.sets[0].form
            for name, config in (("own", entry.own), ("cublas", table.CUBLAS)):
                run = plans.launcher(runner.key, config)
                tuner = runner._planned_ms(config) * 1e3
                planned = run_us(lambda r=run, f=form: r(f.a, f.b, f.c, 1.0, 0.0, 0))
                replay = _replay(driver, run, form)
                gpu = _gpu_us(driver, run, form)
                print(f"{dtype:8} {text:>14} {name:6} {tuner:6.2f} {planned[0]:7.2f} "
                      f"{planned[1]:7.2f} {replay[0]:7.2f} {replay[1]:7.2f} {gpu:6.2f}",
                      flush=True)  # fmt: skip
            del runner
    return 0


if __name__ == "__main__":
    sys.exit(main())
