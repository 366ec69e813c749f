"""Calls from 8 threads at once, each on streams of its own (CuPy and PyCUDA), mixing host and
device operands, give results bit-equal to the same calls made one at a time (issue 14, 9):

    python -m pytest -q tests/gpu/test_threads_streams.py
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import uniform

import tunedgemm as tg

pytestmark = pytest.mark.gpu
THREADS = 8
ROUNDS = 3
SHAPES = [(257, 129, 65), (512, 512, 512), (64, 1000, 33), (1031, 17, 700)]


@pytest.fixture
def deterministic(monkeypatch):
    """Every call on the GPU with a choice that timing cannot change (no refinement, no
    cuBLAS), so that one call gives the same bits however it is scheduled."""
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
    monkeypatch.setenv("TUNEDGEMM_REFINE", "0")


def _calls(seed: int):
    """A thread's calls: (kind, dtype, a, b, c, trans) with host operands (the device copies
    are made in the thread, on its stream)."""
    rng = np.random.default_rng(seed)
    calls = []
    for i, (m, n, k) in enumerate(SHAPES):
        dtype = np.float32 if (i + seed) % 2 else np.float64
        kind = ("host", "cupy", "pycuda", "mixed")[(i + seed) % 4]
        ta, tb = (i + seed) % 3 == 0, (i + seed) % 2 == 0
        a = uniform(rng, (k, m) if ta else (m, k), dtype)
        b = uniform(rng, (n, k) if tb else (k, n), dtype, "F")
        c = uniform(rng, (m, n), dtype, "F")
        calls.append((kind, dtype, a, b, c, (int(ta), int(tb))))
    return calls


def _run(call, streams=None) -> np.ndarray:
    """One call; device operands on the thread's stream; the result brought to the host."""
    kind, _, a, b, c, (ta, tb) = call
    if kind == "host":
        return tg.gemm(0.5, a, b, -1.0, c, ta, tb)
    if kind == "cupy":
        cupy = pytest.importorskip("cupy")
        stream = streams["cupy"] if streams else cupy.cuda.Stream(non_blocking=True)
        with stream:
            da, db, dc = (cupy.asarray(x, order="F" if x.flags.f_contiguous else "C")
                          for x in (a, b, c))  # fmt: skip
            out = tg.gemm(0.5, da, db, -1.0, dc, ta, tb, overwrite_c=1, stream=stream)
            result = out.get(stream=stream)
            stream.synchronize()
        return result
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    stream = streams["pycuda"] if streams else drv.Stream()
    da = gpuarray.to_gpu_async(np.ascontiguousarray(a), stream=stream)
    db = b if kind == "mixed" else gpuarray.to_gpu_async(np.ascontiguousarray(b), stream=stream)
    dc = gpuarray.to_gpu_async(np.ascontiguousarray(c), stream=stream)
    out = tg.gemm(0.5, da, db, -1.0, dc, ta, tb, overwrite_c=1, stream=stream)
    result = out.get(stream=stream)
    stream.synchronize()
    return result


def test_threads_on_their_own_streams_match_calls_one_at_a_time(deterministic):
    from tunedgemm import cuda

    cuda.context()
    plans = [_calls(seed) for seed in range(THREADS)]
    alone = [[_run(call) for call in calls] for calls in plans]
    results: dict[int, list[list[np.ndarray]]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        try:
            import pycuda.driver as drv

            cuda.ensure_current(cuda.context())
            streams = {"pycuda": drv.Stream()}
            try:
                import cupy

                streams["cupy"] = cupy.cuda.Stream(non_blocking=True)
            except ImportError:
                pass
            start.wait()
            results[index] = [[_run(call, streams=streams) for call in plans[index]]
                              for _ in range(ROUNDS)]  # fmt: skip
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for index in range(THREADS):
        for round_results in results[index]:
            for got, want in zip(round_results, alone[index], strict=True):
                assert got.tobytes() == want.tobytes()


def test_workspaces_of_a_destroyed_stream_are_retired_without_touching_it(monkeypatch):
    """A plan's per-stream workspace outlives the caller's stream: dropping the plan must not
    record an event on that stream's dead handle (the driver crashed so, 2026-11-23)."""
    import gc

    import pycuda.driver as drv

    from tunedgemm import cuda

    cuda.context()
    monkeypatch.setattr(cuda, "RETIRED_LIMIT", 1 << 40)  # (earlier tests' retirees stay put)
    spaces = cuda.StreamWorkspaces(1 << 20)
    stream = drv.Stream()
    address = spaces(stream.handle)
    del stream
    gc.collect()  # the stream is destroyed now
    before = len(cuda._retired)
    del spaces
    gc.collect()
    assert any(int(b) == address for b in cuda._retired[before:])
    cuda.context().synchronize()
    assert cuda.release_pool() >= 0


def _run_to_the_end(code: str) -> str:
    """Run code in a fresh Python process that must print 'ended cleanly' and exit 0; its
    standard error."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code + "print('ended cleanly')\n"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ended cleanly" in done.stdout
    return done.stderr


def test_a_thread_that_meets_the_gpu_first_may_end():
    """The first CUDA use of a process in a worker thread (autoprimaryctx pushes its context
    there) must not leave that thread's context stack full as it ends: PyCUDA then aborts the
    whole process (bench_tf32_wgmma's precompile pool did, 2026-11-23)."""
    _run_to_the_end("import threading, tunedgemm.cuda as c\n"
                    "for first in (c.arch, c.context):\n"
                    "    t = threading.Thread(target=first); t.start(); t.join()\n"
                    "c.allocate(1024)\n")  # fmt: skip


def test_a_main_thread_that_never_met_the_gpu_exits_cleanly():
    """All GPU work in a worker thread (a dask client's): the process exits without a failed
    pop in autoprimaryctx's exit hook. (PyCUDA still warns for an allocation that outlives
    the exit hooks, as it does in a single-threaded script.)"""
    stderr = _run_to_the_end("import threading, tunedgemm.cuda as c\n"
                             "kept = []\n"
                             "work = lambda: kept.append(c.allocate(1 << 20))\n"
                             "t = threading.Thread(target=work)\n"
                             "t.start(); t.join()\n")  # fmt: skip
    assert "Exception ignored" not in stderr, stderr[-2000:]
