"""Timers: CUDA events around device work (median after warm-up), wall clock on the host."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def gpu_median_ms(work: Callable[[], Any], warmup: int = 3, reps: int = 10,
                  stream: Any = None) -> float:  # fmt: skip
    """Median milliseconds of `work` (which only enqueues device work, on `stream`: a PyCUDA
    stream, default the legacy default stream), by CUDA events."""
    import pycuda.driver as drv

    for _ in range(warmup):
        work()
    start, stop = drv.Event(), drv.Event()
    times = []
    for _ in range(reps):
        start.record(stream)
        work()
        stop.record(stream)
        stop.synchronize()
        times.append(stop.time_since(start))
    return statistics.median(times)


def wall_median_ms(work: Callable[[], Any], warmup: int = 1, reps: int = 3) -> float:
    """Median wall-clock milliseconds of `work` (host work, or device work it waits for)."""
    for _ in range(warmup):
        work()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        work()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
