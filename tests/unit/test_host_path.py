"""The host path's logic without a GPU: tile plans, budgets, the crossover rule, stream
arguments, parallel host copies, pinned-buffer views and the scratch pool."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import types

import numpy as np
import pytest
from helpers import FakeContext

import tunedgemm as tg
from tunedgemm import crossover, cuda, pinned, pipeline, streams


@pytest.mark.parametrize("itemsize", [4, 8])
@pytest.mark.parametrize(
    "m,n,k", [(1000, 900, 700), (8192, 8192, 8192), (16384, 64, 16384), (3000, 5000, 129)]
)
def test_plan_covers_the_problem_within_budget(m, n, k, itemsize):
    budget = 2 << 30
    plan = pipeline.plan(m, n, k, itemsize, budget)
    assert plan.device_bytes <= budget
    for edge, extent in ((plan.tm, m), (plan.tn, n), (plan.tk, k)):
        assert 1 <= edge <= extent
        covered = pipeline.ranges(extent, edge)
        assert covered[0][0] == 0 and covered[-1][1] == extent
        assert all(hi == lo2 for (_, hi), (lo2, _) in itertools.pairwise(covered))
    if itemsize * (m * k + k * n + m * n) <= pipeline.SINGLE_TILE_BYTES:
        assert (plan.tm, plan.tn, plan.tk) == (m, n, k)
    else:
        assert not plan.out_of_core
        assert plan.tm % pipeline.QUANTUM == 0 or plan.tm == m


def test_large_square_is_cut_into_overlapping_tiles():
    plan = pipeline.plan(8192, 8192, 8192, 4, 8 << 30)
    assert (plan.tm, plan.tn, plan.tk) == (4096, 4096, 8192)
    assert plan.tiles == 4 and plan.keep_b
    assert pipeline.plan(4096, 4096, 4096, 4, 8 << 30).tiles == 4


def test_small_budget_goes_out_of_core():
    m = n = k = 4096
    budget = 48 << 20
    plan = pipeline.plan(m, n, k, 4, budget)
    assert plan.out_of_core and not plan.keep_b
    assert plan.device_bytes <= budget
    # Not smaller than needed: the edges are only halved while the plan does not fit.
    assert plan.device_bytes > budget // 8


@pytest.mark.parametrize("panel", [256, 512, 2048])
@pytest.mark.parametrize("budget", [3 << 20, 6 << 20, 40 << 20])
def test_shrinking_always_ends(monkeypatch, panel, budget):
    # The settings of the GPU tests' small-tile fixture once made the shrinking loop spin.
    monkeypatch.setattr(pipeline, "SINGLE_TILE_BYTES", 0)
    monkeypatch.setattr(pipeline, "PANEL", panel)
    try:
        plan = pipeline.plan(900, 800, 1500, 8, budget)
    except MemoryError:
        assert budget < pipeline.device_bytes(900, 800, 1500, 256, 256, 256, False, 8)
    else:
        assert plan.device_bytes <= budget


def test_budget_below_the_smallest_tile_is_a_clear_error():
    with pytest.raises(MemoryError, match=r"needs .* MiB .* smallest tiles"):
        pipeline.plan(4096, 4096, 4096, 8, 1 << 20)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_padded_leading_dimensions_are_16_byte_multiples(itemsize):
    for extent in (1, 3, 4, 5, 127, 128, 1001):
        ld = pipeline.padded(extent, itemsize)
        assert ld >= extent and (ld * itemsize) % 16 == 0 and ld - extent < 16 // itemsize


@pytest.mark.parametrize(
    "text,expected", [("1048576", 1 << 20), ("512M", 512 << 20), ("2G", 2 << 30), ("64k", 64 << 10)]
)
def test_device_memory_setting_parses_sizes(text, expected):
    from tunedgemm import settings

    assert settings.check(pipeline.DEVICE_MEMORY_ENV, text) == expected


@pytest.mark.parametrize("bad", ["lots", "infG", "-1", "0", "nanM", ""])
def test_device_memory_setting_names_the_variable(bad):
    from tunedgemm import settings

    with pytest.raises(ValueError, match=pipeline.DEVICE_MEMORY_ENV):
        settings.check(pipeline.DEVICE_MEMORY_ENV, bad)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("step", [1, 3])
def test_host_copy_in_parallel_matches(rng, order, step):
    src = np.asarray(rng.uniform(-1, 1, (1500, 3000)), order=order)[::step, ::step]
    dst = np.full(src.shape, np.nan, order=order)
    pipeline.host_copy(dst, src)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(1500, 3000), (3, 2), (4000, 1)])
def test_host_copy_reports_each_piece_once_in_order(rng, order, shape):
    """The pipeline uploads each piece as host_copy reports it: the pieces must tile the outer
    dimension, in order, and be copied when reported."""
    src = np.asarray(rng.uniform(-1, 1, shape), order=order)
    dst = np.full(src.shape, np.nan, order=order)
    outer = 0 if dst.strides[0] >= dst.strides[1] else 1  # the dimension of the longer stride
    seen: list[tuple[int, int]] = []

    def each(lo, hi):
        piece = dst[lo:hi] if outer == 0 else dst[:, lo:hi]
        assert not np.isnan(piece).any()
        seen.append((lo, hi))

    pipeline.host_copy(dst, src, each)
    np.testing.assert_array_equal(dst, src)
    assert seen[0][0] == 0 and seen[-1][1] == shape[outer]
    assert all(prev[1] == nxt[0] for prev, nxt in itertools.pairwise(seen))
    assert len(seen) > 1 or dst.nbytes < 2 * pipeline._CHUNK_BYTES


def test_pinned_results_return_their_buffer_after_the_last_view(monkeypatch):
    """A result in a pooled pinned buffer gives it back only when no view of it is left, and
    results never hold more than their cap."""
    import gc

    given = []
    monkeypatch.setattr(pinned, "take", lambda n: np.zeros(pinned._size_class(n), np.uint8))
    monkeypatch.setattr(pinned, "give", lambda buffer: given.append(buffer.nbytes))
    held = pinned._leased_bytes
    result = pinned.result_array((300, 200), np.float32, "F")
    assert result is not None and type(result) is np.ndarray and result.flags.f_contiguous
    assert pinned.lease_of(result) is not None and pinned.lease_of(np.zeros(3)) is None
    view = result.T[5:9]
    assert pinned.lease_of(view) is pinned.lease_of(result)
    del result
    gc.collect()
    assert given == []
    del view
    gc.collect()
    assert given == [pinned._size_class(300 * 200 * 4)] and pinned._leased_bytes == held
    monkeypatch.setattr(pinned, "MAX_RESULT_BYTES", held + 1024)
    assert pinned.result_array((300, 200), np.float32, "F") is None
    monkeypatch.setattr(pinned, "MAX_RESULT_BYTES", 4 << 30)
    monkeypatch.setenv(pinned.PINNED_RESULTS_ENV, "0")
    assert pinned.result_array((300, 200), np.float32, "F") is None
    monkeypatch.setenv(pinned.PINNED_RESULTS_ENV, "1")
    assert pinned.result_array((300, 200), np.float32, "F") is not None


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("most", [1, 4096, 40_000, 1 << 30])
def test_staging_segments_cover_the_block_within_the_buffer(order, most):
    block = np.empty((700, 333), np.float32, order=order)
    extent = block.shape[1] if order == "F" else block.shape[0]
    line = pipeline.padded(block.shape[0] if order == "F" else block.shape[1], 4) * 4
    parts = pipeline._segments(block, order, line, most)
    assert parts[0][0] == 0 and parts[-1][1] == extent
    assert all(lo < hi for lo, hi in parts)
    assert all(left[1] == right[0] for left, right in itertools.pairwise(parts))
    assert all((hi - lo) * line <= max(most, line) for lo, hi in parts)


@pytest.mark.parametrize("order", ["C", "F"])
def test_pinned_view_keeps_the_leading_dimension(rng, order):
    rows, cols, ld = 5, 3, 8
    buffer = np.zeros(ld * 8 * 8, np.uint8)  # stands in for a pinned buffer
    view = pinned.view(buffer, (rows, cols), ld, np.float64, order)
    values = rng.uniform(-1, 1, (rows, cols))
    view[...] = values
    flat = buffer[: ld * max(rows, cols) * 8].view(np.float64)
    for i in range(rows):
        for j in range(cols):
            index = i + j * ld if order == "F" else i * ld + j
            assert flat[index] == values[i, j]


@pytest.mark.parametrize("size", [384, 256])
def test_crossover_squares(size):
    assert crossover.prefer_numpy("float32", size - 1, size - 1, size - 1, size)
    assert not crossover.prefer_numpy("float32", size, size, size, size)


def test_crossover_keeps_skinny_products_on_numpy():
    # A dot product of huge vectors has plenty of work but no reuse.
    assert crossover.prefer_numpy("float32", 1, 1, 10**9, 384)
    assert crossover.prefer_numpy("float32", 100_000, 100_000, 2, 384)
    assert not crossover.prefer_numpy("float32", 4096, 4096, 1024, 384)


def test_crossover_file_is_used_for_its_gpu_only(tmp_path, monkeypatch):
    table = tmp_path / "mine.json"
    monkeypatch.setenv("TUNEDGEMM_TABLE", str(table))
    path = crossover.path_for(table)
    crossover.write(path, {"gpu": "GPU X", "size": {"float32": 100, "float64": 50}}, "test")
    assert crossover.current_path() == path
    found, source = crossover.sizes("GPU X")
    assert found == {"float32": 100, "float64": 50} and "measured" in source
    assert crossover.sizes("GPU Y") == (crossover.DEFAULT_SIZE, "built-in default")


@pytest.mark.parametrize("text", [json.dumps({"schema_version": 1, "gpu": "GPU X"}), "{not"])
def test_malformed_crossover_file_falls_back_to_defaults(tmp_path, monkeypatch, text):
    table = tmp_path / "mine.json"
    monkeypatch.setenv("TUNEDGEMM_TABLE", str(table))
    crossover.path_for(table).write_text(text)
    with pytest.warns(tg.TableWarning, match="crossover file"):
        assert crossover.sizes("GPU X") == (crossover.DEFAULT_SIZE, "built-in default")


def test_crossover_file_is_read_once_per_table(tmp_path, monkeypatch):
    table = tmp_path / "once.json"
    monkeypatch.setenv("TUNEDGEMM_TABLE", str(table))
    crossover.write(crossover.path_for(table), {"gpu": "G", "size": {"float32": 7}}, "test")
    assert crossover.sizes("G")[0]["float32"] == 7
    crossover.path_for(table).unlink()  # a second call must not need the file again
    assert crossover.sizes("G")[0]["float32"] == 7


def test_stream_handles():
    assert streams.handle_of(None) is None
    assert streams.handle_of(0) is None and streams.handle_of(1) is None
    assert streams.handle_of(0x1234) == 0x1234
    assert streams.handle_of(types.SimpleNamespace(ptr=77)) == 77  # CuPy
    assert streams.handle_of(types.SimpleNamespace(cuda_stream=88)) == 88  # PyTorch
    with pytest.raises(TypeError, match="stream"):
        streams.handle_of(True)
    with pytest.raises(TypeError, match="stream"):
        streams.handle_of("default")
    with pytest.raises(ValueError, match="stream"):
        streams.handle_of(-3)


def test_cai_stream_field():
    assert streams.cai_stream({}) is None
    assert streams.cai_stream({"stream": None}) is None
    assert streams.cai_stream({"stream": 1}) is None
    assert streams.cai_stream({"stream": 2}) == 2
    assert streams.cai_stream({"stream": 0xABC}) == 0xABC
    with pytest.raises(ValueError, match="stream"):
        streams.cai_stream({"stream": 0})


def test_bad_stream_argument_leaves_arrays_untouched(rng):
    a = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
    c = np.asfortranarray(rng.uniform(-1, 1, (4, 5)).astype(np.float32))
    before = c.copy()
    for call in (
        lambda: tg.sgemm(1.0, a, b, 1.0, c, overwrite_c=1, stream="s"),
        lambda: tg.dgemm(1.0, a, b, 1.0, c, overwrite_c=1, stream=object()),
        lambda: tg.matmul(a, b, stream=[1]),
    ):
        with pytest.raises(TypeError, match="stream"):
            call()
    np.testing.assert_array_equal(c, before)


class _FakeAllocation:
    """Stands in for pycuda.driver.DeviceAllocation: an address and a free()."""

    def __init__(self, size):
        self.size, self.freed = size, False

    def __int__(self):
        return id(self)

    def free(self):
        self.freed = True


@pytest.fixture
def fake_driver(monkeypatch):
    driver = types.SimpleNamespace(mem_alloc=_FakeAllocation, MemoryError=MemoryError,
                                   Context=FakeContext, Error=RuntimeError)  # fmt: skip
    package = types.ModuleType("pycuda")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return driver


@pytest.mark.parametrize("nbytes", [1, 255, 257, 1000, 1025, 3 << 20, (64 << 20) + 1])
def test_scratch_size_classes_waste_at_most_a_quarter(nbytes):
    size = cuda._ScratchPool.size_class(nbytes)
    assert nbytes <= size <= max(256, nbytes * 1.25)


def test_scratch_buffers_return_to_the_pool_from_any_thread(fake_driver):
    pool = cuda._ScratchPool()
    first = pool.take(1000)
    address = int(first)
    del first  # back to the pool: the next take of its size class reuses it
    assert int(pool.take(900)) == address

    def churn():
        for size in range(500, 5000, 7):
            held = [pool.take(size), pool.take(size * 3)]
            del held

    workers = [threading.Thread(target=churn) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    kept = [alloc for allocations in pool.held.values() for alloc in allocations]
    assert len({id(a) for a in kept}) == len(kept)  # no allocation handed back twice
    pool.free_held()
    assert all(alloc.freed for alloc in kept) and not pool.held


def test_a_thread_pops_the_context_it_pushed_when_it_ends(fake_driver, monkeypatch):
    """PyCUDA aborts the process when a thread ends with a context on its stack."""
    monkeypatch.setattr(cuda, "_thread", threading.local())
    ctx = FakeContext(0xC0)
    stacks = []

    def call():
        cuda.ensure_current(ctx)
        cuda.ensure_current(ctx)  # once per thread
        stacks.append(FakeContext.stack())

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert stacks == [[]]  # pushed once, popped as the thread ended


def test_per_thread_objects_are_released_before_the_context_is_popped(fake_driver, monkeypatch):
    """PyCUDA cannot free a thread's stream once its context is popped (it warns and leaks)."""
    monkeypatch.setattr(cuda, "_thread", threading.local())
    ctx = FakeContext(0xC1)
    seen = []

    class Resource:
        def __del__(self):
            seen.append(("released", FakeContext.get_current()))

    def call():
        cuda.ensure_current(ctx)
        first = cuda.per_thread("thing", Resource)
        assert cuda.per_thread("thing", Resource) is first  # one per thread
        seen.append(("made", id(first)))

    workers = [threading.Thread(target=call) for _ in range(2)]
    for worker in workers:
        worker.start()
        worker.join()
    made = [what for what, _ in seen if what == "made"]
    released = [current for what, current in seen if what == "released"]
    assert len(made) == 2 and released == [ctx, ctx]  # each released with ctx current


def test_pipeline_allocates_everything_before_the_first_tile():
    """Every device block of the rings, and each tile shape's launch needs (reserve), are
    allocated before the first tile, so that running out of device memory stops a call
    before any tile reaches the caller's c (docs/semantics.md)."""
    taken: list[int] = []

    class Buffer(int):
        pass

    def allocate(nbytes: int) -> Buffer:
        taken.append(nbytes)
        return Buffer(0x1000_0000 * len(taken))

    reserved = []
    reads = []
    launcher = types.SimpleNamespace(reserve=lambda form, stream, reads_c: (
        reserved.append(form), reads.append(reads_c)))  # fmt: skip
    m, n, k = 700, 601, 333
    plan = pipeline.Plan(m, n, k, 512, 512, 256, True, 4)  # 2 x 2 tiles, 2 k-slices
    run = pipeline._Run.__new__(pipeline._Run)
    run.problem = types.SimpleNamespace(a=np.zeros((m, k), np.float32),
                                        b=np.zeros((k, n), np.float32, order="F"),
                                        out=np.zeros((m, n), np.float32, order="F"), beta=0.0)
    run.plan, run.launch, run.dtype, run.keep = plan, launcher, np.dtype(np.float32), []
    run.allocate = allocate
    run.streams = types.SimpleNamespace(compute="the compute stream")
    run.ring_a, run.ring_c = pipeline._Ring(2, 1 << 20), pipeline._Ring(2, 1 << 20)
    run.ring_b = pipeline._Ring(4, 1 << 20)
    run._reserve()
    assert taken == [1 << 20] * 8
    for ring in (run.ring_a, run.ring_b, run.ring_c):
        assert all(slot.matrix is not None for slot in ring.slots)
    shapes = {(f.m, f.n, f.k) for f in reserved}
    # rows {512, 188} x cols {512, 89} x k {256, 77}, each at beta 0 (a tile's first k slice)
    # and reading C (the second slice adds to the first)
    assert len(reserved) == 2 * len(shapes) == 16 and reads == [False, True] * 8
    assert shapes == set(itertools.product((512, 188), (512, 89), (256, 77)))
    for f in reserved:  # as execute lays the blocks out: padded leading dimensions
        assert f.ldc == pipeline.padded(f.m, 4) and not f.trans_b
        assert f.trans_a and f.lda == pipeline.padded(f.k, 4)  # a is C-ordered: A^T stored


def test_a_gpu_claiming_a_b_panel_uploads_it_before_its_a_panel():
    """With the B-panel exchange, the GPU that claims a B panel uploads it first (the other
    GPUs wait for it); a GPU whose B panel another is uploading stages its A panel first."""
    from tunedgemm.panel_exchange import PanelExchange

    exchange = PanelExchange()
    order: list[tuple[str, int]] = []

    def pipeline_of(ordinal: int, shared: PanelExchange | None) -> pipeline._Run:
        run = pipeline._Run.__new__(pipeline._Run)
        run.exchange = None if shared is None else (shared, ordinal)
        run.ring_a, run.ring_b = pipeline._Ring(2, 1 << 20), pipeline._Ring(4, 1 << 20)

        def operand(ring, key, src, each_segment=None):
            order.append(("B" if ring is run.ring_b else "A", ordinal))
            return src()

        run._operand = operand  # type: ignore[method-assign]
        return run

    first, second = pipeline_of(0, exchange), pipeline_of(1, exchange)
    assert first._blocks((0, 0), lambda: "a0", (0, 0), lambda: "b0") == ("a0", "b0")
    assert order == [("B", 0), ("A", 0)] and exchange.claims == {(0, 0): 0}
    order.clear()
    assert second._blocks((1, 0), lambda: "a1", (0, 0), lambda: "b0") == ("a1", "b0")
    assert order == [("A", 1), ("B", 1)]  # GPU 0 is uploading B: A first
    order.clear()
    pipeline_of(2, None)._blocks((0, 0), lambda: "a", (0, 0), lambda: "b")  # one GPU
    assert order == [("A", 2), ("B", 2)]


def split_panel_runs(monkeypatch, exchange, log):
    """_Run stand-ins for GPUs 0 and 1 whose uploads and peer copies are logged, not done:
    block (100 x 64 float32, rows outer) at 0x10000 on GPU 0 and 0x20000 on GPU 1."""
    from tunedgemm._layout import DeviceMatrix

    monkeypatch.setattr(pipeline._driver, "record", lambda handle: 0)
    monkeypatch.setattr(pipeline._driver, "enable_peer_access", lambda *args: True)

    def run_of(ordinal: int, before_upload=lambda: None) -> pipeline._Run:
        run = pipeline._Run.__new__(pipeline._Run)
        run.exchange, run.dtype = (exchange, ordinal), np.dtype(np.float32)
        run.ring_a, run.ring_b = pipeline._Ring(2, 1 << 20), pipeline._Ring(4, 1 << 20)
        run.streams = types.SimpleNamespace(up=types.SimpleNamespace(handle=0))
        block = DeviceMatrix(0x10000 * (ordinal + 1), (100, 64), (64, 1), run.dtype)

        def upload(view, ring, slot, order, lines=None, each_segment=None):
            before_upload()
            log.append(("up", ordinal, lines))
            return block

        def copy(found, shape, order, slot, first=0):
            log.append(("copy", ordinal, first, found.ptr, found.nbytes))
            return block

        run._device_block = lambda ring, slot, shape, order: block  # type: ignore[method-assign]
        run._upload, run._copy_panel = upload, copy  # type: ignore[method-assign]
        return run

    return run_of


def test_the_first_b_panel_goes_up_half_from_each_gpu_and_each_copies_the_other_half(
        monkeypatch):  # fmt: skip
    from tunedgemm.panel_exchange import PanelExchange

    exchange, log = PanelExchange(split_first=True), []
    exchange.join(0, 100), exchange.join(1, 101)

    def until_gpu1_claims() -> None:  # GPU 1 comes for the panel while GPU 0 uploads
        for _ in range(500):
            if ((0, 0), 1) in exchange.claims or ((0, 0), 1) in exchange.panels:
                return
            threading.Event().wait(0.01)

    run_of = split_panel_runs(monkeypatch, exchange, log)
    runs = run_of(0, until_gpu1_claims), run_of(1)
    view = np.zeros((100, 64), np.float32)
    threads = [threading.Thread(target=run._operand, args=(run.ring_b, (0, 0), lambda: view))
               for run in runs]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    half = 50 * 64 * 4
    assert sorted(log) == [("copy", 0, 50, 0x20000 + half, half), ("copy", 1, 0, 0x10000, half),
                           ("up", 0, (0, 50)), ("up", 1, (50, 100))]  # fmt: skip
    assert exchange.parts == {0: 1, 1: 1} and exchange.copies == {0: 1, 1: 1}
    assert not exchange.uploads
    log.clear()  # the next panel goes up whole, from one GPU
    assert exchange.parts_of((0, 1)) == 1


def test_a_gpu_alone_at_the_first_panel_uploads_every_part(monkeypatch):
    """The other GPU has not come for its part when this one has uploaded its own: it takes
    that part too, rather than wait for a GPU whose first tile may need another panel."""
    from tunedgemm.panel_exchange import PanelExchange

    exchange, log = PanelExchange(split_first=True), []
    exchange.join(0, 100), exchange.join(1, 101)
    run = split_panel_runs(monkeypatch, exchange, log)(0)
    view = np.zeros((100, 64), np.float32)
    run._blocks((0, 0), lambda: view, (0, 0), lambda: view)
    assert log == [("up", 0, (0, 50)), ("up", 0, (50, 100)), ("up", 0, None)]  # B, then A
    assert exchange.parts == {0: 2} and not exchange.copies


def early_run(m: int, n: int, k: int, stage_bytes: int, launched: list) -> pipeline._Run:
    """A _Run of one k slice over host stand-ins whose uploads report segments of
    `stage_bytes` (as _upload's staging buffers cut them) and whose launches are logged."""

    class Buffer(int):
        pass

    allocated: list[int] = []

    def allocate(nbytes: int) -> Buffer:
        allocated.append(nbytes)
        return Buffer(0x1000_0000 * len(allocated))

    run = pipeline._Run.__new__(pipeline._Run)
    run.problem = types.SimpleNamespace(a=np.zeros((m, k), np.float32),
                                        b=np.zeros((k, n), np.float32, order="F"),
                                        out=np.zeros((m, n), np.float32, order="F"),
                                        alpha=2.0, beta=0.0)  # fmt: skip
    run.plan = pipeline.Plan(m, n, k, m, n, k, True, 1)
    run.rows, run.cols = pipeline.ranges(m, m), pipeline.ranges(n, n)
    run.dtype, run.keep, run.allocate, run.exchange = np.dtype(np.float32), [], allocate, None
    run.ring_a, run.ring_b, run.ring_c = (pipeline._Ring(2, 1 << 24) for _ in range(3))
    run.stage_in = types.SimpleNamespace(nbytes=stage_bytes)
    log = launched
    compute = types.SimpleNamespace(wait_for_event=lambda event: log.append(("wait", event)))
    run.streams = types.SimpleNamespace(compute=compute)
    run.drv = types.SimpleNamespace(Event=lambda: types.SimpleNamespace(record=lambda s: None))
    run.launch = lambda form, alpha, beta, stream: log.append(("launch", form.m, form.n, form))
    run._download = lambda c_mat, tile, slot: None  # type: ignore[method-assign]

    def upload(src, ring, slot, order, lines=None, each_segment=None):
        target = run._device_block(ring, slot, src.shape, order)
        line = max(target.strides) * 4
        for number, (lo, hi) in enumerate(pipeline._segments(src, order, line, stage_bytes)):
            if each_segment is not None:
                each_segment(target, lo, hi, f"segment {number}")
        return target

    run._upload = upload  # type: ignore[method-assign]
    return run


def test_early_products_multiply_a_new_a_panel_segment_by_segment(monkeypatch):
    """With B on the device, a tile whose A panel goes up is multiplied a block of rows at
    a time, each after its segment's upload: rows and pointers of A and C offset alike."""
    monkeypatch.setattr(pipeline, "EARLY_PRODUCTS", True)
    log: list = []
    m, n, k = 600, 300, 100  # A rows of 100 floats: 400 bytes; segments of 256 rows
    run = early_run(m, n, k, 256 * 400, log)
    assert run._segments_of_a(m) == [256, 256, 88]
    b_slot = run.ring_b.next()  # B panel 0 held
    b_slot.matrix, b_slot.key = run._device_block(run.ring_b, b_slot, (k, n), "F"), (0, 0)
    run.tile(0, 0)
    waits = [entry[1] for entry in log if entry[0] == "wait"]
    launches = [entry for entry in log if entry[0] == "launch"]
    assert waits == ["segment 0", "segment 1", "segment 2"]
    assert [(rows, cols) for _, rows, cols, _ in launches] == [(256, 300), (256, 300), (88, 300)]
    a_block, c_block = run.ring_a.slots[0].matrix, run.ring_c.slots[0].matrix
    for (_, _, _, form), lo in zip(launches, (0, 256, 512), strict=True):
        assert form.c == c_block.ptr + lo * 4  # C is column-major: rows are 4 bytes apart
        assert form.a == a_block.ptr + lo * pipeline.padded(k, 4) * 4
        assert form.b == b_slot.matrix.ptr and form.aligned()
    assert log.index(("wait", "segment 1")) > log.index(launches[0])  # launched as they land


def test_early_products_on_one_gpu_upload_b_first(monkeypatch):
    """With no other GPU to wait for, B goes up before the A panel, whose segments are then
    multiplied as they land."""
    monkeypatch.setattr(pipeline, "EARLY_PRODUCTS", True)
    log: list = []
    run = early_run(600, 300, 100, 256 * 400, log)
    uploads: list[str] = []
    upload = run._upload

    def logged(src, ring, *args, **kwargs):
        uploads.append("B" if ring is run.ring_b else "A")
        return upload(src, ring, *args, **kwargs)

    run._upload = logged  # type: ignore[method-assign]
    run.tile(0, 0)
    assert uploads == ["B", "A"]
    assert [(e[1], e[2]) for e in log if e[0] == "launch"] == [(256, 300), (256, 300), (88, 300)]


@pytest.mark.parametrize("change", ["off", "one segment", "unaligned rows", "b from a peer"])
def test_early_products_only_where_they_apply(monkeypatch, change):
    monkeypatch.setattr(pipeline, "EARLY_PRODUCTS", change != "off")
    log: list = []
    m, n, k = 600, 300, 100
    rows = {"one segment": 600, "unaligned rows": 255}.get(change, 256)
    run = early_run(m, n, k, rows * 400, log)
    if change == "b from a peer":  # another GPU uploads it: A first, while that goes up
        exchange = types.SimpleNamespace(parts_of=lambda key: 1, claim=lambda key, gpu: False)
        run.exchange = (exchange, 1)  # type: ignore[assignment]
        run._shared_panel = lambda key, view, slot: run._device_block(  # type: ignore[method-assign]
            run.ring_b, slot, view.shape, "F")
    else:
        b_slot = run.ring_b.next()
        b_slot.matrix, b_slot.key = run._device_block(run.ring_b, b_slot, (k, n), "F"), (0, 0)
    assert run._segments_of_a(m) == ([] if change != "b from a peer" else [256, 256, 88])
    run.tile(0, 0)
    assert [(e[1], e[2]) for e in log if e[0] == "launch"] == [(600, 300)]  # the whole tile


def test_early_products_reserve_their_segment_shapes_before_the_first_tile(monkeypatch):
    monkeypatch.setattr(pipeline, "EARLY_PRODUCTS", True)
    reserved: list = []
    run = early_run(600, 300, 100, 256 * 400, [])
    run.launch = types.SimpleNamespace(reserve=lambda form, stream, reads_c: reserved.append(
        (form, reads_c)))  # fmt: skip
    run._reserve()
    assert sorted((f.m, f.n, f.k) for f, _ in reserved) == [(88, 300, 100), (256, 300, 100),
                                                            (600, 300, 100)]  # fmt: skip
    assert not any(reads_c for _, reads_c in reserved)  # beta 0, one k slice: C never read
