"""Timers: CUDA events around device work (median after warm-up), wall clock on the host."""

from __future__ import annotations

import functools
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

# Holds a stream for a given number of nanoseconds. Launched before the timed work, it keeps
# the GPU busy while the host queues every timed launch, so that each launch's events measure
# the GPU's time alone and not the host's cost of launching (which would otherwise dominate
# kernels of tens of microseconds). Kept here, not in kernels/: it is no GEMM template, and
# kernels/ is hashed to detect stale tuning tables.
_HOLD_SOURCE = r"""
extern "C" __global__ void tunedgemm_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""
HOLD_MARGIN = 2.0  # hold for this many times the host's measured cost of queueing the reps
# At least 1 ms: a host that turns slow for a while after the warm-up (the lent machines do)
# must not let the GPU drain the queue and time the gaps between launches.
HOLD_MIN_S, HOLD_MAX_S = 1e-3, 50e-3


def gpu_median_ms(work: Callable[[], Any], warmup: int = 3, reps: int = 10,
                  stream: Any = None) -> float:  # fmt: skip
    """Median milliseconds of `work` (which only enqueues device work, on `stream`: a PyCUDA
    stream, default the legacy default stream), by CUDA events between back-to-back launches
    queued behind a hold (see _HOLD_SOURCE)."""
    return gpu_and_host_ms(work, warmup, reps, stream)[0]


def call_ms(work: Callable[[], Any], warmup: int = 3, reps: int = 10,
            stream: Any = None) -> float:  # fmt: skip
    """What `work` costs per call in a run of calls: its GPU time, or the host's time to queue
    it where that is longer (calls of a few microseconds are bound by their launches)."""
    return max(gpu_and_host_ms(work, warmup, reps, stream))


def gpu_and_host_ms(work: Callable[[], Any], warmup: int = 3, reps: int = 10,
                    stream: Any = None) -> tuple[float, float]:  # fmt: skip
    """(GPU, host) milliseconds of `work`: the median by CUDA events around each launch on the
    GPU, and the least by the host clock around each call queueing it (the host's noise
    only ever adds: other threads, the collector, a busy lent machine)."""
    gpu_ms, host_ms = samples(work, warmup, reps, stream)
    return statistics.median(gpu_ms), min(host_ms)


def samples(work: Callable[[], Any], warmup: int, reps: int,
            stream: Any) -> tuple[list[float], list[float]]:  # fmt: skip
    """Per-launch GPU and host milliseconds of `work`, its launches queued behind a hold."""
    import pycuda.driver as drv

    for _ in range(warmup):
        work()
    t0 = time.perf_counter()
    work()  # one more warm-up, timed on the host to size the hold
    host_s = time.perf_counter() - t0
    hold_s = min(max(HOLD_MARGIN * reps * host_s, HOLD_MIN_S), HOLD_MAX_S)
    events = [drv.Event() for _ in range(reps + 1)]
    host_ms = []
    _hold(hold_s, stream)
    events[0].record(stream)
    for event in events[1:]:
        t0 = time.perf_counter()
        work()
        host_ms.append((time.perf_counter() - t0) * 1e3)
        event.record(stream)
    events[-1].synchronize()
    return [b.time_since(a) for a, b in itertools.pairwise(events)], host_ms


def _hold(seconds: float, stream: Any) -> None:
    """Keep `stream` busy for `seconds`; without the kernel (it failed to build), nothing."""
    kernel = _hold_kernel()
    if kernel is not None:
        import numpy as np

        kernel(np.uint64(seconds * 1e9), block=(1, 1, 1), grid=(1, 1), stream=stream)


def _hold_kernel() -> Any:
    """The hold kernel in the context of this thread's GPU (a function belongs to one)."""
    from . import cuda

    return _hold_kernel_in(cuda._thread.__dict__.get("bound_ordinal"))


@functools.cache
def _hold_kernel_in(bound_ordinal: int | None) -> Any:
    from . import cuda

    try:
        from pycuda.compiler import SourceModule

        from .compiler import cache_dir

        cuda.context()
        return SourceModule(_HOLD_SOURCE, no_extern_c=True, arch=cuda.arch(),
                            cache_dir=cache_dir()).get_function("tunedgemm_hold")  # fmt: skip
    except Exception:  # timings then include launch gaps, as they did before the hold
        return None


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
