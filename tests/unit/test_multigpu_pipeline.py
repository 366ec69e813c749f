"""Host calls over several GPUs, on CPU: pipeline.gemm's real planning and scheduling with
NumPy stand-ins for the per-GPU workers (of different speeds), and the one-GPU guarantee."""

from __future__ import annotations

import collections
import math
import sys
import threading
import time
import types
from typing import ClassVar

import numpy as np
import pytest
from helpers import FakeContext, assert_gemm, uniform

from tunedgemm import cuda, pipeline, plans, selection
from tunedgemm._args import normalise
from tunedgemm.panel_exchange import Published
from tunedgemm.tile_queue import Assignment, Tile

# With 256-wide panels: 2 x 2 tiles on one GPU, 6 x 4 on two or three (the panels per
# dimension grow with the GPUs, so that there are tiles to balance, up to whole 256-wide
# quanta).
SHAPE = (2900, 2000, 96)


class NumpyGpu:
    """A stand-in for pipeline._GpuWorker (same constructor): computes its tiles of C with
    NumPy, k slice by k slice as the device does, taking `SECONDS[index]` per tile."""

    SECONDS: ClassVar[dict[int, float]] = {}
    FAIL_AT: ClassVar[dict[int, int]] = {}  # index -> the tile number at which it raises
    made: ClassVar[list[NumpyGpu]] = []

    def __init__(self, index, problem, plan, launch, direct_out, copy_threads=1,
                 exchange=None):  # fmt: skip
        self.name, self.index, self.problem, self.plan = f"gpu{index}", index, problem, plan
        self.exchange = exchange
        self.uploaded: list[int] = []  # B panels this stand-in "uploaded" (not copied)
        self.copied: list[int] = []
        self.done: list[tuple[int, int]] = []
        self.thread = None
        self.closed = False
        NumpyGpu.made.append(self)

    def open(self):
        self.thread = threading.current_thread()
        if self.exchange is not None:
            self.exchange.join(self.index, context=1 + self.index)

    def run(self, assignment: Assignment):
        assert threading.current_thread() is self.thread
        if len(self.done) == self.FAIL_AT.get(self.index):
            raise RuntimeError(f"{self.name}: launch failed")
        col = assignment.tile.col
        if self.exchange is not None and assignment.upload_col:  # as _Run._shared_panel
            if self.exchange.take(col, self.index) is None:
                self.uploaded.append(col)
                self.exchange.publish(col, Published(self.index, 0, 0, event=0))
            else:
                self.copied.append(col)
        p, problem = self.plan, self.problem
        (i0, i1) = pipeline.ranges(p.m, p.tm)[assignment.tile.row]
        (j0, j1) = pipeline.ranges(p.n, p.tn)[assignment.tile.col]
        tile = problem.out[i0:i1, j0:j1]
        beta = problem.beta
        for k0, k1 in pipeline.ranges(p.k, p.tk):
            product = problem.alpha * (problem.a[i0:i1, k0:k1] @ problem.b[k0:k1, j0:j1])
            tile[...] = product + (beta * tile if beta != 0.0 else 0.0)
            beta = 1.0
        time.sleep(self.SECONDS.get(self.index, 0.0))
        self.done.append((assignment.tile.row, assignment.tile.col))

    def close(self):
        assert threading.current_thread() is self.thread
        self.closed = True
        if self.exchange is not None:
            self.exchange.leave(self.index)
            self.exchange.wait_all()


@pytest.fixture
def stand_in_gpus(monkeypatch, small_tiles):
    """pipeline.gemm with GPUs 0..count-1 selected, each a NumpyGpu."""

    def install(count, seconds=None, fail_at=None):
        monkeypatch.setattr(pipeline, "_host_gpus", lambda: (0, tuple(range(count))))
        monkeypatch.setattr(pipeline, "_GpuWorker", NumpyGpu)
        monkeypatch.setattr(pipeline, "_straight_down", lambda problem: False)
        monkeypatch.setattr(NumpyGpu, "SECONDS", seconds or {})
        monkeypatch.setattr(NumpyGpu, "FAIL_AT", fail_at or {})
        monkeypatch.setattr(NumpyGpu, "made", [])

    return install


def problem_of(rng, dtype, beta, trans=(0, 0), k=SHAPE[2]):
    m, n, _ = SHAPE
    a = uniform(rng, (k, m) if trans[0] else (m, k), dtype)
    b = uniform(rng, (n, k) if trans[1] else (k, n), dtype, "F")
    c = uniform(rng, (m, n), dtype, "F")
    c0 = c.copy()
    if beta == 0.0:
        c[...] = np.nan  # unwritten tiles show
    problem = normalise(0.5, a, b, beta, c, trans[0], trans[1], 1, dtype)
    return problem, a, b, c, c0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.0, 1.5])
def test_every_tile_once_over_stand_in_gpus(stand_in_gpus, rng, dtype, beta):
    stand_in_gpus(3)
    problem, a, b, c, c0 = problem_of(rng, dtype, beta, trans=(1, 0))
    a0, b0 = a.copy(), b.copy()
    plan = pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    # With beta != 0 a tile computed twice would hold beta^2 c + ...: the check fails.
    assert_gemm(c, 0.5, a.T, b, beta, c0 if beta else None, dtype)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    done = [t for gpu in NumpyGpu.made for t in gpu.done]
    assert sorted(done) == sorted(set(done)) and len(done) == plan.tiles
    assert plan.tiles == 6 * 4
    spread = pipeline.last_spread()
    assert sorted(spread) == [0, 1, 2] and sum(spread.values()) == plan.tiles
    assert all(gpu.closed and gpu.thread is not threading.main_thread() for gpu in NumpyGpu.made)


def test_each_b_panel_goes_up_from_the_host_once_over_all_gpus(stand_in_gpus, rng):
    """With B kept on the devices, the GPUs share its panels: one uploads each, the others
    copy it; they sweep the columns in the same order, so both start on panel 0."""
    stand_in_gpus(2, seconds={0: 0.002, 1: 0.002})
    problem, a, b, c, c0 = problem_of(rng, np.float32, 1.0)
    plan = pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert plan.keep_b
    assert_gemm(c, 0.5, a, b, 1.0, c0, np.float32)
    gpus = NumpyGpu.made
    uploaded = [col for gpu in gpus for col in gpu.uploaded]
    columns = len(pipeline.ranges(plan.n, plan.tn))
    assert sorted(uploaded) == list(range(columns))
    assert all(sorted(gpu.uploaded + gpu.copied) == list(range(columns)) for gpu in gpus
               if gpu.done)  # fmt: skip
    assert gpus[0].done[0][1] == 0 and gpus[1].done[0][1] == 0


def test_out_of_core_tiles_over_stand_in_gpus(stand_in_gpus, rng):
    stand_in_gpus(2)
    problem, a, b, c, c0 = problem_of(rng, np.float32, -1.0, k=600)
    m, n, _ = SHAPE
    budget = pipeline.device_bytes(m, n, 600, 256, 256, 256, False, 4)
    plan = pipeline.gemm(problem, launch=None, budget=budget)  # type: ignore[arg-type]
    assert plan.out_of_core
    assert_gemm(c, 0.5, a, b, -1.0, c0, np.float32)


def test_faster_stand_in_takes_more_tiles(stand_in_gpus, rng):
    # GPU 0 six times as fast; sleeps long beside a busy machine's scheduling delays.
    stand_in_gpus(2, seconds={0: 0.02, 1: 0.12})
    problem, *_ = problem_of(rng, np.float32, 0.0, k=8)  # the sleeps dominate
    plan = pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    spread = pipeline.last_spread()
    assert spread[0] + spread[1] == plan.tiles
    assert spread[0] >= 2 * spread[1] > 0, spread


def test_a_failing_gpu_stops_the_call_and_leaves_inputs_untouched(stand_in_gpus, rng):
    stand_in_gpus(3, seconds={0: 0.03, 1: 0.001, 2: 0.03}, fail_at={1: 2})  # 1 fails early
    problem, a, b, *_ = problem_of(rng, np.float64, 2.0, k=8)
    a0, b0 = a.copy(), b.copy()
    with pytest.raises(RuntimeError, match="gpu1: launch failed"):
        pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    assert all(gpu.closed for gpu in NumpyGpu.made)  # every worker closed before the raise
    assert not [t for t in threading.enumerate() if t.name.startswith("tunedgemm-gpu")]
    done = sum(len(gpu.done) for gpu in NumpyGpu.made)
    # the others stopped soon after (each closes only once all have left the B-panel
    # exchange: the failing one must stop the queue before its close waits for them)
    assert NumpyGpu.made[0].exchange is not None
    assert done <= NumpyGpu.made[0].plan.tiles // 2, done  # (all but one without the stop)


def test_one_gpu_is_the_single_gpu_pipeline_in_the_callers_thread(monkeypatch, small_tiles, rng):
    """The structural guarantee: one GPU (the process's) runs _Run.execute in the caller's
    thread, with no queue, no worker thread and no worker object."""
    ran = []

    class Recorder:
        def __init__(self, problem, plan, launch, direct_out=False):
            self.plan = plan

        def execute(self):
            ran.append(("execute", threading.current_thread(), self.plan.tiles))

        def close(self):
            ran.append(("close", threading.current_thread(), 0))

    def no_spread(*args, **kwargs):
        raise AssertionError("one GPU must not go through the multi-GPU path")

    monkeypatch.setattr(pipeline, "_host_gpus", lambda: (0, (0,)))
    monkeypatch.setattr(pipeline, "_Run", Recorder)
    monkeypatch.setattr(pipeline, "spread", no_spread)
    monkeypatch.setattr(pipeline, "_GpuWorker", no_spread)
    monkeypatch.setattr(pipeline, "_straight_down", lambda problem: False)
    problem, *_ = problem_of(rng, np.float32, 0.0)
    threads = threading.active_count()
    plan = pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert [r[0] for r in ran] == ["execute", "close"]
    assert all(r[1] is threading.current_thread() for r in ran)
    assert threading.active_count() == threads
    assert plan.tiles == 2 * 2  # today's tiles
    assert pipeline.last_spread() == {0: plan.tiles}


def test_one_other_gpu_gets_a_worker_thread(stand_in_gpus, monkeypatch, rng):
    """TUNEDGEMM_DEVICES naming one GPU that is not the process's: a worker bound to it."""
    stand_in_gpus(1)
    monkeypatch.setattr(pipeline, "_host_gpus", lambda: (0, (1,)))
    problem, a, b, c, c0 = problem_of(rng, np.float32, 1.0)
    pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert_gemm(c, 0.5, a, b, 1.0, c0, np.float32)
    (gpu,) = NumpyGpu.made
    assert gpu.index == 1 and gpu.thread is not threading.main_thread()
    assert pipeline.last_spread() == {1: len(gpu.done)}


def test_budget_is_the_least_free_memory_of_the_gpus(monkeypatch):
    monkeypatch.delenv(pipeline.DEVICE_MEMORY_ENV, raising=False)
    free = {0: 70 << 30, 1: 30 << 30, 2: 50 << 30}
    monkeypatch.setattr(cuda, "free_bytes_of", lambda g, release_pool=False: free[g])
    expected = int((30 << 30) * pipeline.BUDGET_FRACTION)
    assert pipeline.device_budget(gpus=(0, 1, 2)) == expected


def bound_thread(ordinal, work):
    """work() in a thread marked as bound to GPU `ordinal` (as cuda.bind marks it)."""

    def body():
        cuda._thread.bound_ordinal = ordinal
        return work()

    return in_thread(body)


def in_thread(work):
    out = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def test_each_gpu_has_its_own_plans(monkeypatch):
    home = plans.cache_here()
    assert home is plans.device_plans
    other = bound_thread(1, plans.cache_here)
    assert other is not home and bound_thread(1, plans.cache_here) is other
    assert bound_thread(2, plans.cache_here) is not other
    other.put("key", "plan")
    plans.clear()
    assert other.get("key") is None  # a setting change drops every GPU's plans


def test_table_lookup_takes_the_workers_gpu(monkeypatch):
    names = {0: ("NVIDIA H100 80GB HBM3", "9.0"), 1: ("NVIDIA A100-SXM4-80GB", "8.0")}
    monkeypatch.setattr(cuda, "status", lambda: (True, "stand-in"))
    monkeypatch.setattr(cuda, "ordinal", lambda: 0)
    monkeypatch.setattr(cuda, "_identity_of", names.__getitem__)
    seen = []
    monkeypatch.setattr(selection, "_choose", lambda *args: seen.append(args[6:8]))
    selection.choose("float32", 512, 512, 512)
    bound_thread(1, lambda: selection.choose("float32", 512, 512, 512))
    assert seen == [names[0], names[1]]


@pytest.fixture
def stand_in_driver(monkeypatch):
    """A stand-in pycuda.driver with a context stack per thread and GPUs 0 (the process's,
    an H100) and 1 (an A100), each with a primary context; mem_alloc hands out numbered
    blocks that remember the context current when they were made."""

    class Context(FakeContext):
        stacks: ClassVar[dict[int, list]] = {}  # (its own: no other test's stacks)

        def __init__(self, index):
            super().__init__(1000 + index)
            self.index = index

    class Block(int):
        def free(self):
            pass

    allocated = []

    def mem_alloc(size):
        block = Block(len(allocated) + 1)
        block.context = Context.get_current()
        allocated.append(block)
        return block

    class Device:
        models: ClassVar = [("NVIDIA H100 80GB HBM3", (9, 0)), ("NVIDIA A100-SXM4-40GB", (8, 0))]

        def __init__(self, index):
            self.index = index

        def retain_primary_context(self):
            return Context(self.index)

        def compute_capability(self):
            return self.models[self.index][1]

        def name(self):
            return self.models[self.index][0]

    driver = types.SimpleNamespace(Context=Context, Device=Device, mem_alloc=mem_alloc,
                                   MemoryError=MemoryError, Error=RuntimeError)  # fmt: skip
    package = types.ModuleType("pycuda")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    home = Context(0)
    monkeypatch.setattr(cuda, "_context", [home])
    monkeypatch.setattr(cuda, "ordinal", lambda: 0)
    monkeypatch.setattr(cuda, "_primaries", {})
    monkeypatch.setattr(cuda, "_bound_pools", {})
    monkeypatch.setattr(cuda, "_scratch", cuda._ScratchPool())
    for cached in (cuda._arch_of, cuda._identity_of):
        cached.cache_clear()
    yield home
    for cached in (cuda._arch_of, cuda._identity_of):
        cached.cache_clear()


def test_a_bound_thread_works_in_its_gpus_context_and_pool(stand_in_driver):
    home = stand_in_driver

    def on_gpu(index):
        cuda.bind(index)
        ctx = cuda.context()
        block = cuda.allocate(1 << 20)
        return (ctx.index, block.allocation.context.index, block.pool, cuda.arch(),
                cuda.gpu_identity()[1], cuda.current_ordinal())  # fmt: skip

    other = in_thread(lambda: on_gpu(1))
    assert other[:2] == (1, 1) and other[3:] == ("sm_80", "8.0", 1)
    assert other[2] is cuda._bound_pools[1] and other[2] is not cuda._scratch
    mine = in_thread(lambda: on_gpu(0))
    assert mine[:2] == (0, 0) and mine[2] is cuda._scratch and mine[3] == "sm_90"
    assert cuda.context() is home  # the caller's thread is not touched


def test_a_thread_that_used_a_gpu_cannot_be_bound_to_another(stand_in_driver):
    def used_then_bound():
        cuda.context()
        with pytest.raises(RuntimeError, match="cannot be bound"):
            cuda.bind(1)
        return True

    assert in_thread(used_then_bound)


def test_two_gpus_cut_large_squares_into_panels_per_gpu():
    """On two GPUs a 16384^2 float32 product has PANELS_PER_GPU * 2 panels per dimension
    (4096-wide tiles); a 32768^2 one tiles near MULTI_GPU_EDGE (6 panels of 5632); B kept on
    the devices, k whole."""
    budget = 70 << 30
    one = pipeline.plan(32768, 32768, 32768, 4, budget, pipeline.MAX_PANELS)
    assert (one.tm, one.tn) == (16384, 16384)
    assert pipeline.multi_gpu_panels(16384, 16384, 2) == pipeline.PANELS_PER_GPU * 2 == 4
    assert pipeline.multi_gpu_panels(8192, 8192, 2) == 4
    assert pipeline.multi_gpu_panels(32768, 12288, 2) == 4  # the narrow side keeps 3072
    two = pipeline.plan(32768, 32768, 32768, 4, budget, pipeline.multi_gpu_panels(32768, 32768, 2))
    assert (two.tm, two.tn) == (5632, 5632) and len(pipeline.ranges(32768, two.tm)) == 6
    assert not two.out_of_core and two.keep_b and two.tk == 32768
    mid = pipeline.plan(16384, 16384, 16384, 4, budget, pipeline.multi_gpu_panels(16384, 16384, 2))
    assert (mid.tm, mid.tn) == (4096, 4096)


@pytest.mark.parametrize("cores,gpus,threads", [(32, 2, 16), (16, 2, 8), (64, 2, 16), (2, 4, 1)])
def test_copy_threads_share_the_cores_between_gpus(monkeypatch, cores, gpus, threads):
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: cores)
    assert pipeline.copy_threads(gpus) == threads


def test_a_gpu_worker_takes_its_next_tile_only_when_its_gpu_has_caught_up():
    """A worker waits, after queueing a tile, until all but TILES_AHEAD of its tiles are
    computed: a worker that queued tiles as fast as its host work allowed took more than
    its share of them."""
    waited: list[int] = []

    class Event:
        def __init__(self, tile: int) -> None:
            self.tile = tile

        def synchronize(self) -> None:
            waited.append(self.tile)

    class Pipeline:
        computed = None

        def tile(self, row: int, col: int) -> None:
            self.computed = Event(col)

    worker = pipeline._GpuWorker.__new__(pipeline._GpuWorker)
    worker.pipeline, worker.unfinished = Pipeline(), collections.deque()
    for col in range(4):
        worker.run(Assignment(Tile(0, col), False, False))
    assert pipeline.TILES_AHEAD == 1 and waited == [0, 1, 2]


@pytest.mark.parametrize("gpus,home,used", [((0, 1), 0, (0,)), ((1, 2), 0, (1,))])
def test_products_below_spread_from_run_on_one_gpu(stand_in_gpus, monkeypatch, rng, gpus, home,
                                                   used):  # fmt: skip
    """The process's own GPU where it is selected (the single-GPU pipeline, in the caller's
    thread), else the first selected; at SPREAD_FROM and above, all of them."""
    stand_in_gpus(3)
    monkeypatch.setattr(pipeline, "_host_gpus", lambda: (home, gpus))
    on_own: list[int] = []
    monkeypatch.setattr(pipeline, "_on_one_gpu", lambda problem, launch, budget, g:
                        on_own.append(g) or pipeline.plan(*problem.shape, 4, 1 << 40))  # fmt: skip
    problem, *_ = problem_of(rng, np.float32, 0.0)
    edge = round(math.prod(problem.shape) ** (1 / 3))
    monkeypatch.setattr(pipeline, "SPREAD_FROM", {4: edge + 1})
    pipeline._record({})
    pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert on_own == ([home] if home in gpus else [])
    assert set(pipeline.last_spread()) == (set() if on_own else set(used))
    monkeypatch.setattr(pipeline, "SPREAD_FROM", {4: edge - 1})
    pipeline.gemm(problem, launch=None, budget=1 << 40)  # type: ignore[arg-type]
    assert set(pipeline.last_spread()) == set(gpus)
