"""Page-locking host operands in place against staging them: could host products skip copies?

A development probe, not a benchmark (issue 20). Two GPUs' host products at 16384^2 float32
are bound by the copies into pinned staging: both GPUs together stage at about 30 GB/s, and
a call copies 3 GiB (A and B in, C out). Page-locking the caller's own arrays in place
(cuMemHostRegister) would let the DMA engines read them directly, with a third of the
memory traffic, if locking is cheap enough. This measures, on a touched 1 GiB float32
array: locking and unlocking it whole and in 64 MiB pieces on 1, 4 and 16 threads; uploads
from it once locked (contiguous, on GPU 0 alone and on two GPUs at once, and a strided
column panel as a B panel is); and, for comparison, staging copies into pinned memory on one
and on two GPUs at once (pipeline.host_copy, as the pipeline stages).

Usage: python benchmarks/probe_register.py [--out DIR]
Writes probe_register.json to --out. Needs a GPU (PyCUDA); the two-GPU cases need two.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import itertools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

N = 16384  # the array is N x N float32: 1 GiB
PIECE = 64 << 20
PORTABLE = 1  # CU_MEMHOSTREGISTER_PORTABLE: locked for every context, both GPUs'


def pieces(ptr: int, nbytes: int, step: int) -> list[tuple[int, int]]:
    """[lo, hi) address ranges covering ptr..ptr+nbytes, cut at multiples of step (page
    aligned, so that no two pieces share a page)."""
    cuts = range((ptr // step + 1) * step, ptr + nbytes, step)
    return list(itertools.pairwise([ptr, *cuts, ptr + nbytes]))


class Locker:
    """cuMemHostRegister and cuMemHostUnregister through ctypes (the GIL released), on a
    pool of threads each with GPU 0's primary context current."""

    def __init__(self, ctx: Any) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.ctx = ctx

    def _in_context(self, call: Any) -> int:
        from tunedgemm import cuda

        with cuda.current_in_this_thread(self.ctx):
            return int(call())

    def lock(self, span: tuple[int, int]) -> int:
        lo, hi = span
        return self._in_context(lambda: self.lib.cuMemHostRegister_v2(
            ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), ctypes.c_uint(PORTABLE)))  # fmt: skip

    def unlock(self, span: tuple[int, int]) -> int:
        return self._in_context(lambda: self.lib.cuMemHostUnregister(ctypes.c_void_p(span[0])))

    def timed(self, what: str, spans: list[tuple[int, int]], threads: int) -> float:
        call = self.lock if what == "lock" else self.unlock
        with ThreadPoolExecutor(threads) as pool:
            start = time.perf_counter()
            codes = list(pool.map(call, spans))
            seconds = time.perf_counter() - start
        if any(codes):
            raise RuntimeError(f"{what}: CUDA error codes {sorted(set(codes))}")
        return seconds * 1e3


def uploads(drv: Any, contexts: list[Any], arr: np.ndarray, column_panel: bool) -> float:
    """ms to upload arr (split in equal row blocks, one per context, each on its own thread
    and stream, in 64 MiB pieces), or, with column_panel, its first N/4 columns as one
    strided 2-D copy per context's share of rows."""
    from tunedgemm import cuda

    share = arr.shape[0] // len(contexts)
    barrier = threading.Barrier(len(contexts) + 1)
    done: list[float] = []

    def upload(index: int, ctx: Any) -> None:
        block = arr[index * share : (index + 1) * share]
        with cuda.current_in_this_thread(ctx):
            width = block.shape[1] // 4 if column_panel else block.shape[1]
            device = drv.mem_alloc(block.shape[0] * width * block.itemsize)
            stream = drv.Stream()
            barrier.wait()
            if column_panel:
                copy = drv.Memcpy2D()
                copy.set_src_host(block)
                copy.src_pitch = block.strides[0]
                copy.set_dst_device(device)
                copy.dst_pitch = copy.width_in_bytes = width * block.itemsize
                copy.height = block.shape[0]
                copy(stream)
            else:
                flat = block.reshape(-1).view(np.uint8)
                for lo in range(0, flat.nbytes, PIECE):
                    drv.memcpy_htod_async(int(device) + lo, flat[lo : lo + PIECE], stream)
            stream.synchronize()
            done.append(time.perf_counter())
            device.free()

    threads = [threading.Thread(target=upload, args=(i, c)) for i, c in enumerate(contexts)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return (max(done) - start) * 1e3


def staging(arr: np.ndarray, gpus: int) -> float:
    """ms for `gpus` threads to copy their share of arr into pinned buffers at once, each
    with its own pool of pipeline.copy_threads(gpus) threads, as each GPU's worker does."""
    from tunedgemm import pinned, pipeline

    share = arr.shape[0] // gpus
    buffers = [pinned.take(share * arr.shape[1] * arr.itemsize) for _ in range(gpus)]
    pools = [ThreadPoolExecutor(pipeline.copy_threads(gpus)) for _ in range(gpus)]

    def stage(index: int) -> None:
        src = arr[index * share : (index + 1) * share]
        dst = buffers[index][: src.nbytes].view(arr.dtype).reshape(src.shape)
        pipeline.host_copy(dst, src, copies=pools[index])

    best = float("inf")
    for _ in range(3):
        with ThreadPoolExecutor(gpus) as outer:
            start = time.perf_counter()
            list(outer.map(stage, range(gpus)))
            best = min(best, (time.perf_counter() - start) * 1e3)
    for pool in pools:
        pool.shutdown()
    for buffer in buffers:
        pinned.give(buffer)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    import pycuda.driver as drv

    from tunedgemm import cuda

    cuda.context()
    contexts = [cuda.primary_context(i) for i in range(min(2, cuda.device_count()))]
    arr = np.random.default_rng().uniform(-1, 1, (N, N)).astype(np.float32)
    gib = arr.nbytes / 2**30
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {cuda.device().name()} x {len(contexts)}, {date}: {gib:.0f} GiB float32, "
          "ms (GB/s)")  # fmt: skip
    record: dict[str, Any] = {"device": cuda.device().name(), "gpus": len(contexts),
                              "date": date, "bytes": arr.nbytes, "cases": {}}  # fmt: skip

    def note(case: str, ms: float, nbytes: int = arr.nbytes) -> None:
        record["cases"][case] = ms
        print(f"{case:52} {ms:8.1f} ms  {nbytes / ms / 1e6:6.1f} GB/s")

    for gpus in range(1, len(contexts) + 1):
        note(f"stage into pinned, {gpus} GPU(s) at once", staging(arr, gpus))
    locker = Locker(contexts[0])
    whole = [(arr.ctypes.data, arr.ctypes.data + arr.nbytes)]
    split = pieces(arr.ctypes.data, arr.nbytes, PIECE)
    for spans, threads in ((whole, 1), (split, 1), (split, 4), (split, 16)):
        label = "whole" if spans is whole else f"{len(spans)} pieces"
        note(f"lock, {label}, {threads} thread(s)", locker.timed("lock", spans, threads))
        # The uploads from locked memory, before unlocking: within one locked range (a copy
        # across two ranges locked apart failed, "invalid argument", two H100s 2026-11-26).
        if spans is whole:
            for count in range(1, len(contexts) + 1):
                note(f"upload locked, contiguous, {count} GPU(s)",
                     uploads(drv, contexts[:count], arr, column_panel=False))  # fmt: skip
                ms = uploads(drv, contexts[:count], arr, column_panel=True)
                note(f"upload locked, N x N/4 column panel, {count} GPU(s)", ms, arr.nbytes // 4)
        note(f"unlock, {label}, {threads} thread(s)", locker.timed("unlock", spans, threads))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe_register.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
