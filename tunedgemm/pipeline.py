"""Host operands through the GPU: pinned staging, and tiles of C whose uploads, products and
downloads overlap on three streams (in the manner of cuBLASXt).

C is cut into row panels x column panels. Row panel i needs the A panel i, column panel j
the B panel j; B's panels stay on the device once uploaded (when they fit), A's live in a
ring of two. While tile (i, j) is multiplied on the compute stream, the next panels go up
on the upload stream and the previous tile comes down on the download stream; host threads
copy between the caller's arrays and pinned buffers in parallel. When the operands do not
fit in device memory the tiles shrink and k is cut into slices too (out of core), each
slice accumulated into the tile with beta = 1.

Device tiles get leading dimensions padded to 16 bytes, so the aligned (vectorised) kernel
variants run whatever the caller's shapes are.

With several GPUs selected (TUNEDGEMM_DEVICES), each has a worker thread with its own
pipeline as above, taking tiles from a shared queue (tunedgemm/tile_queue.py; `spread`); with
one, the process's own, the pipeline runs in the caller's thread as it always did.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import _driver, settings, streaming
from ._args import GemmProblem
from ._layout import BlasForm, DeviceMatrix, blas_form
from .panel_exchange import PanelExchange, Published
from .tile_queue import Assignment, Tile, TileWorker, WorkerStats, run_tiles

# each_segment(block, lo, hi, event): lines lo:hi of a block being uploaded are on the device
# after `event` (_Run._upload)
Segment = Callable[[DeviceMatrix, int, int, Any], None]

SINGLE_TILE_BYTES = 48 << 20  # below this, one tile: overlap would not repay its extra steps
PANEL = 2048  # target edge of a C tile; a few panels per dimension give overlap
# Per dimension. More tiles overlap better in theory, but each adds host copies that contend
# for host memory with the DMA engines: at 8192^3 (float32, H100 machine, 2026-11-22) tiles
# of 4096 took 58 ms, of 2048 83 ms, of 1024 80 ms (benchmarks/profile_calls.py).
MAX_PANELS = 2
# Several GPUs: panels per dimension per GPU. Two H100s (2026-11-25 22:09 UTC, B panels
# shared): 16384^2 float32 ran 1.55x one GPU with 2, 1.39x with 4 (a first row of thinner
# tiles computes for less time than its share of B takes to stage); 32768^2 1.85x with
# either. Cutting k in 4 slices held on the device, so that products start sooner, was
# slower again (1.33x at 16384^2, about 22:40) and was reverted.
PANELS_PER_GPU = 2
# ... and more where C is large: panels per dimension of about this edge. Two H200s
# (2026-11-26 about 00:37 UTC, bench_multigpu.py --panels-per-gpu 2 3 4): 32768^2 float32 ran
# 1.91x / 2.03x / 1.97x one GPU with tiles of 8192 / 5632 / 4096; 16384^2 1.72x / 1.47x /
# 1.56x with 4096 / 2816 / 2048 (thinner first rows compute for less time than their B
# panels take to stage). This edge gives 4096 at 16384^2 and 5632 at 32768^2.
MULTI_GPU_EDGE = 5632
# Several GPUs only for products of at least this edge cubed (m n k), per itemsize: below,
# the process's own GPU alone. 8192^2 float32 ran 0.74-0.99x one GPU on two GPUs (two
# H100s 2026-11-25, two H200s 2026-11-26), 16384^2 1.37-1.82x; float64 8192^2 1.06x and
# 0.89x (two H100s, 2026-11-25 and 2026-11-26 06:05 UTC), 16384^2 1.23x. Between 8192 and
# 16384 neither is measured: 10240 is a guess in between.
SPREAD_FROM = {4: 10240, 8: 10240}
# Several GPUs: a worker takes its next tile only when its GPU has at most this many tiles'
# products unfinished. Taking tiles as fast as it could queue them, the worker whose host
# work ran faster took more: on two H200s (2026-11-26) one GPU computed 9 tiles of 16384^2
# float32 and finished 30 ms after the other, which had 7. With 1 the next tile's panels are
# staged while the GPU computes the last one queued.
TILES_AHEAD = 1
# (Taking the next tile at once after a row's last one, so that the new row's A panel is
# staged while the GPU computes two tiles, ran 118.7 ms against 119.2 at 16384^2 float32 on
# two H200s, 2026-11-26 03:19 UTC: both GPUs stage their new A panels together, at about 16
# GB/s each, whenever they start. It was removed.)
# Several GPUs sharing B panels: the first B panel goes up in parts, one staged by each GPU
# (tunedgemm/panel_exchange.py). Whole, it was staged by one GPU while another staged its
# first A panel, and that GPU staged its own A panel only then: on two H200s (2026-11-26
# 02:49 UTC, 16384^2 float32) the first products started at 20.4 and 32.2 ms. Making each
# worker wait until every GPU had queued its first tile before staging a second one
# (FIRST_TILES_FIRST, since removed) moved them to 20.8 and 27.9 ms but ran 1.71x one GPU
# against 1.76x without it: GPU 0 then waited for its second B panel. Split (03:00 UTC), both
# started at 30.4 ms and the medians were equal (123.9 ms either way); with streaming stores
# too (03:19), at 23.0 and 22.8 ms. Kept for the even start; the total is bound by the
# host's staging rate (docs/multigpu.md).
SPLIT_FIRST_PANEL = True
# Host copies of large blocks (into pinned staging, and C tiles out) use streaming stores
# (tunedgemm/_streamcopy.c, where it is built): an ordinary store reads each destination line
# before writing it. On the two-H200 machine (2026-11-26, profile_multigpu_host.py) two GPUs
# staging their first A panels (256 MiB each) at once took 15.5 ms with NumPy's copies and
# 11.9 ms with these (about 33 and 43 GB/s together); 16384^2 float32 on two GPUs, 125.5 ms
# against 122.8 (03:13 UTC, same session), and one GPU 209.9 against 207.6.
STREAM_STORES = True
# A tile whose A panel goes up in this call, after its B panel is on the device, is
# multiplied segment by segment of that panel (row blocks of the tile, as staging buffers
# land) instead of after the whole panel: the first products of a call, and those after a
# row switch, start on the first segment (on one GPU, B goes up first for that). Two H100s
# (2026-11-26 05:42 UTC, multigpu-ab, float32, medians of 3): 16384^2 on two GPUs 124.4 ms
# without, 116.2 with (first products at 30-31 and 23-24 ms), one GPU 206.4 and 199.1;
# 32768^2 796.8 and 751.6 on two, 1503.2 and 1427.1 on one.
EARLY_PRODUCTS = True
# Pinned staging buffers hold at most this much (or one line of a block): a block larger than
# that goes up, or comes down, in several segments through the ring. Buffers the size of
# whole panels (3 GiB at 16384^2 float64) outgrew the pinned pool, which then re-pinned
# gigabytes on every call: 2.8 s for a 0.4 s product (two-H100 machine, 2026-11-25).
STAGE_BYTES = 128 << 20
# The upload ring keeps three blocks in flight, as it did with one buffer per block, within
# this much pinned memory: with three segments only, the host copied no further ahead than
# the kernels freeing device blocks, and 8192^2 float64 took 81 ms instead of 44.
STAGE_RING_BYTES = 1536 << 20
QUANTUM = 256  # tile edges are multiples of this: whole kernel block tiles inside
MIN_EDGE = 256  # the smallest tile edge out of core; below it the problem cannot run
BUDGET_FRACTION = 0.8  # of free device memory a call may plan to use
DEVICE_MEMORY_ENV = "TUNEDGEMM_DEVICE_MEMORY"  # bytes (suffix K, M or G) a call may use
# One host call at a time per process: each already uses every copy thread and the whole GPU,
# so little is lost (docs/host.md, "Threads").
_host_calls = threading.Lock()
UNQUERIED_BYTES = 256 << 20  # operands this small skip the free-memory query (unless capped)
_ALIGN_BYTES = 16
# The product of one tile: launch(form, alpha, beta, stream), given by the caller (the GPU
# backend decides what runs, through its plans); the pipeline only moves data. A launch with
# a `reserve(form, stream, reads_c=...)` method is asked to allocate before the first tile
# (_Run._reserve).
Launch = Callable[[BlasForm, float, float, Any], Any]
# A list to append (what, start, end) perf_counter spans of host work to; None: no tracing.
# benchmarks/profile_calls.py sets it to see where a large call's time goes.
TRACE: list[tuple[str, float, float]] | None = None


def _traced(what: str, work: Callable[[], Any]) -> Any:
    if TRACE is None:
        return work()
    start = time.perf_counter()
    result = work()
    TRACE.append((what, start, time.perf_counter()))
    return result


@dataclass(frozen=True)
class Plan:
    """Tile edges (tm x tn of C, tk of k) and whether every B block stays on the device."""

    m: int
    n: int
    k: int
    tm: int
    tn: int
    tk: int
    keep_b: bool
    itemsize: int

    @property
    def out_of_core(self) -> bool:
        return self.tk < self.k

    @property
    def tiles(self) -> int:
        return len(ranges(self.m, self.tm)) * len(ranges(self.n, self.tn))

    @property
    def device_bytes(self) -> int:
        return device_bytes(self.m, self.n, self.k, self.tm, self.tn, self.tk, self.keep_b,
                            self.itemsize)  # fmt: skip


def padded(extent: int, itemsize: int) -> int:
    """A leading dimension >= extent whose byte size is a multiple of 16."""
    step = max(1, _ALIGN_BYTES // itemsize)
    return max(step, -(-extent // step) * step)


def ranges(total: int, step: int) -> list[tuple[int, int]]:
    return [(start, min(start + step, total)) for start in range(0, total, max(step, 1))]


def block_elements(rows: int, cols: int, itemsize: int) -> int:
    """Elements of a padded (rows, cols) block in either memory order."""
    return max(padded(rows, itemsize) * cols, padded(cols, itemsize) * rows)


def device_bytes(m: int, n: int, k: int, tm: int, tn: int, tk: int, keep_b: bool,
                 itemsize: int) -> int:  # fmt: skip
    """Device memory a plan holds: two A blocks, the B blocks (all, or two), two C tiles."""
    b_slots = len(ranges(n, tn)) * len(ranges(k, tk)) if keep_b else 2
    return itemsize * (2 * block_elements(tm, tk, itemsize)
                       + b_slots * block_elements(tk, tn, itemsize)
                       + 2 * block_elements(tm, tn, itemsize))  # fmt: skip


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _edge(extent: int, most: int = MAX_PANELS) -> int:
    """A tile edge giving up to `most` panels of about PANEL (whole QUANTUMs)."""
    panels = min(most, max(1, extent // PANEL))
    return min(extent, _round_up(-(-extent // panels), QUANTUM))


def _halve(edge: int) -> int:
    return max(MIN_EDGE, _round_up(edge // 2, QUANTUM))


def plan(m: int, n: int, k: int, itemsize: int, budget: int,
         panels: int = MAX_PANELS) -> Plan:  # fmt: skip
    """Tile edges for a host problem within `budget` bytes of (each GPU's) device memory, up
    to `panels` panels per dimension.

    Raises MemoryError (saying how much is needed) when even the smallest tiles do not fit."""
    if itemsize * (m * k + k * n + m * n) <= SINGLE_TILE_BYTES:
        tm, tn, tk = m, n, k
    else:
        tm, tn, tk = _edge(m, panels), _edge(n, panels), k
    while True:
        for keep_b in (True, False):
            if device_bytes(m, n, k, tm, tn, tk, keep_b, itemsize) <= budget:
                return Plan(m, n, k, tm, tn, tk, keep_b, itemsize)
        edges = {"tm": tm, "tn": tn, "tk": tk}
        # Smaller C tiles first, down to half a panel: cutting k (out of core) uploads every
        # panel once per tile instead of once.
        shrinkable = [e for e in ("tm", "tn") if edges[e] > max(PANEL // 2, MIN_EDGE)] or [
            e for e in edges if edges[e] > MIN_EDGE
        ]  # every edge named is above MIN_EDGE, so halving it makes progress
        if not shrinkable:
            need = device_bytes(m, n, k, tm, tn, tk, False, itemsize)
            raise MemoryError(
                f"tunedgemm: a {m}x{n}x{k} product needs {need / 2**20:.1f} MiB of device "
                f"memory for its smallest tiles ({tm}x{tn}x{tk}), but only "
                f"{budget / 2**20:.1f} MiB may be used ({DEVICE_MEMORY_ENV} or free memory)"
            )
        name = max(shrinkable, key=edges.__getitem__)
        tm, tn, tk = (min(_halve(v), extent) if e == name else v
                      for (e, v), extent in zip(edges.items(), (m, n, k), strict=True))  # fmt: skip


def device_budget(release_pool: bool = False, gpus: tuple[int, ...] = ()) -> int:
    """Bytes a call may plan to use on each GPU: TUNEDGEMM_DEVICE_MEMORY, else a share of free
    memory (of the process's GPU, or the least of `gpus`)."""
    cap = settings.get(DEVICE_MEMORY_ENV)
    if cap is not None:
        return int(cap)
    from . import cuda

    if not gpus:
        return int(cuda.free_bytes(release_pool) * BUDGET_FRACTION)
    return int(min(cuda.free_bytes_of(g, release_pool) for g in gpus) * BUDGET_FRACTION)


# Host copies -------------------------------------------------------------------------------

_CHUNK_BYTES = 2 << 20  # parallel copies split into pieces of about this size
# Copies into pinned memory reached 11 GB/s on one thread and 50 GB/s on 16 (H100 machine).
_WORKERS = max(1, min(16, os.cpu_count() or 1))
_MAX_PIECES = 2 * _WORKERS  # enough to keep every worker busy and the pieces' uploads close
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(name: str, workers: int) -> ThreadPoolExecutor:
    with _pools_lock:
        if name not in _pools:
            _pools[name] = ThreadPoolExecutor(workers, thread_name_prefix=f"tunedgemm-{name}")
        return _pools[name]


def copy_threads(gpus: int) -> int:
    """Copy threads per GPU of a host call: each GPU's worker copies on its own threads, the
    machine's cores shared out (one shared pool of 16 served both GPUs of a 32-core machine)."""
    return max(1, min(16, (os.cpu_count() or 1) // max(gpus, 1)))


def host_copy(dst: np.ndarray, src: np.ndarray,
              each: Callable[[int, int], None] | None = None,
              copies: ThreadPoolExecutor | None = None) -> None:  # fmt: skip
    """dst[...] = src, split across threads for large blocks (NumPy releases the GIL).

    The pieces are ranges lo:hi of dst's outer dimension (that of the larger stride, so each
    piece keeps long runs and is one stretch of memory when dst is dense). `each(lo, hi)`,
    when given, is called in this thread, in order, as soon as a piece is copied: the
    pipeline queues a piece's upload there while the next pieces are still being copied."""
    axis = 0 if abs(dst.strides[0]) >= abs(dst.strides[1]) else 1
    extent = dst.shape[axis]
    parts = min(_MAX_PIECES, dst.nbytes // _CHUNK_BYTES, extent)
    if parts < 2 or dst.ndim != 2:
        np.copyto(dst, src)
        if each is not None:
            each(0, extent)
        return
    bounds = [int(x) for x in np.linspace(0, extent, parts + 1)]
    pieces = [(slice(lo, hi), slice(None)) if axis == 0 else (slice(None), slice(lo, hi))
              for lo, hi in itertools.pairwise(bounds)]  # fmt: skip
    pool = copies or _pool("copy", _WORKERS)
    copy = streaming.copy if STREAM_STORES else np.copyto
    futures = [pool.submit(copy, dst[p], src[p]) for p in pieces]
    for future, lo, hi in zip(futures, bounds[:-1], bounds[1:], strict=True):
        future.result()
        if each is not None:
            each(lo, hi)


def _order_of(arr: np.ndarray) -> str:
    """The memory order whose copies are cheapest: 'C' when rows are the long runs."""
    return "C" if abs(arr.strides[1]) < abs(arr.strides[0]) else "F"


def _stage_up(drv: Any, staged: np.ndarray, src: np.ndarray, buffer: np.ndarray,
              device_ptr: int, ld: int, stream: Any,
              copies: ThreadPoolExecutor | None = None) -> None:  # fmt: skip
    """Copy src into staged (its view in pinned `buffer`, leading dimension ld) on the copy
    threads, queueing each piece's upload to device_ptr on `stream` as soon as it is copied."""
    line = ld * staged.itemsize  # bytes per unit of the outer dimension

    def upload_piece(lo: int, hi: int) -> None:
        drv.memcpy_htod_async(device_ptr + lo * line, buffer[lo * line : hi * line], stream)

    host_copy(staged, src, upload_piece, copies)


def _download_2d(drv: Any, tile: np.ndarray, c_mat: DeviceMatrix, stream: Any) -> None:
    """Queue the copy of device block c_mat into host tile (a block of a pinned result) as
    one 2-D transfer: the device's padded leading dimension in, the result's out."""
    s = tile.itemsize
    copy = drv.Memcpy2D()
    copy.set_src_device(c_mat.ptr)
    copy.src_pitch = max(c_mat.strides) * s
    copy.set_dst_host(tile)
    rows, cols = tile.shape
    # (Along a dimension of extent 1 NumPy's stride means nothing: the pitch is the width.)
    if c_mat.strides[0] == 1:  # column-major, as sgemm's results are
        pitch = tile.strides[1] if cols > 1 else rows * s
        copy.dst_pitch, copy.width_in_bytes, copy.height = pitch, rows * s, cols
    else:
        pitch = tile.strides[0] if rows > 1 else cols * s
        copy.dst_pitch, copy.width_in_bytes, copy.height = pitch, cols * s, rows
    copy(stream)


def _straight_down(problem: GemmProblem) -> bool:
    """Whether the product can come down from the device straight into problem.out: it lies
    in a pinned result (tunedgemm's own, or put in place of a new host result here) with
    unit stride along its memory order."""
    from . import pinned

    out = problem.out
    assert isinstance(out, np.ndarray)
    if pinned.lease_of(out) is not None:
        axis = 0 if _order_of(out) == "F" else 1
        return out.strides[axis] == out.itemsize or out.shape[axis] == 1
    if not problem.new_host_out:
        return False
    order: Literal["C", "F"] = "F" if out.flags.f_contiguous else "C"
    pinned_out = pinned.result_array(out.shape, out.dtype, order)
    if pinned_out is None:
        return False
    problem.out = problem.result = pinned_out
    problem.new_host_out = False
    return True


# The pipeline ------------------------------------------------------------------------------


class _Streams:
    """Upload, compute and download streams."""

    def __init__(self) -> None:
        import pycuda.driver as drv

        self.up, self.compute, self.down = drv.Stream(), drv.Stream(), drv.Stream()


def _streams() -> _Streams:
    """This host thread's streams (made on first use: concurrent calls never share them)."""
    from . import cuda

    return cuda.per_thread("pipeline streams", _Streams)


@dataclass
class _Slot:
    """A device block in a ring: what it holds, and the event after which it may be reused."""

    matrix: DeviceMatrix | None = None
    key: tuple[int, ...] | None = None
    free: Any = None  # event: the last kernel reading it (or download of it) has finished


class _Ring:
    """Device blocks of one size, reused round-robin; a hit returns the block already there."""

    def __init__(self, size: int, nbytes: int) -> None:
        self.slots = [_Slot() for _ in range(size)]
        self.nbytes = nbytes
        self.turn = 0

    def find(self, key: tuple[int, ...]) -> _Slot | None:
        return next((s for s in self.slots if s.key == key), None)

    def next(self) -> _Slot:
        slot = self.slots[self.turn % len(self.slots)]
        self.turn += 1
        return slot


class _Staging:
    """Pinned buffers in a ring; each remembers the event after which it may be refilled."""

    def __init__(self, count: int, nbytes: int) -> None:
        from . import pinned

        self.buffers = [pinned.take(nbytes) for _ in range(count)]
        self.nbytes = nbytes
        self.events: list[Any] = [None] * count
        self.jobs: list[Future[Any] | None] = [None] * count
        self.turn = 0

    def next(self) -> int:
        index = self.turn % len(self.buffers)
        self.turn += 1
        if self.jobs[index] is not None:
            self.jobs[index].result()  # type: ignore[union-attr]
            self.jobs[index] = None
        if self.events[index] is not None:
            self.events[index].synchronize()
        return index

    def release(self) -> None:
        """Wait for every copy job, then give the buffers back (a job's error after)."""
        from concurrent.futures import wait

        from . import pinned

        jobs = [job for job in self.jobs if job is not None]
        wait(jobs)  # all of them, even when one failed: none may write a buffer given back
        for buffer in self.buffers:
            pinned.give(buffer)
        self.buffers = []
        for job in jobs:
            job.result()


class _Run:
    """One host problem through the pipeline (see the module docstring)."""

    def __init__(self, problem: GemmProblem, plan: Plan, launch: Launch,
                 direct_out: bool = False, copy_out: str = "copy-out",
                 copies: ThreadPoolExecutor | None = None,
                 exchange: tuple[PanelExchange, int] | None = None):  # fmt: skip
        import pycuda.driver as drv

        from . import cuda

        self.drv = drv
        self.problem, self.plan, self.launch = problem, plan, launch
        self.rows, self.cols = ranges(plan.m, plan.tm), ranges(plan.n, plan.tn)
        self.copy_out = copy_out  # the name of the thread pool that copies C tiles out
        self.copies = copies  # the threads that copy pieces of blocks (None: the shared ones)
        # (the B panels this call's GPUs share, and this GPU's ordinal): plans keeping B only
        self.exchange = exchange
        self.direct_out = direct_out  # out is pinned: tiles come down straight into it
        self.dtype = problem.dtype
        self.streams = _streams()
        s = self.dtype.itemsize
        a_bytes = s * block_elements(plan.tm, plan.tk, s)
        b_bytes = s * block_elements(plan.tk, plan.tn, s)
        c_bytes = s * block_elements(plan.tm, plan.tn, s)
        b_slots = len(ranges(plan.n, plan.tn)) * len(ranges(plan.k, plan.tk))
        self.ring_a = _Ring(2, a_bytes)
        self.ring_b = _Ring(b_slots if plan.keep_b else 2, b_bytes)
        self.ring_c = _Ring(2, c_bytes)
        # Pinned buffers stage any block on the way up, and C tiles on the way down, in
        # segments of at most STAGE_BYTES (or one line of the widest block).
        line = s * padded(max(plan.tm, plan.tn, plan.tk), s)
        largest = max(a_bytes, b_bytes, c_bytes)
        stage = max(min(STAGE_BYTES, largest), line)
        in_flight = 3 * -(-largest // stage)  # three blocks' segments
        self.stage_in = _Staging(max(3, min(in_flight, STAGE_RING_BYTES // stage)), stage)
        self.stage_out = _Staging(0 if direct_out else 2, max(min(stage, c_bytes), line))
        self.allocate = cuda.allocate
        self.keep: list[Any] = []
        self.computed: Any = None  # event: the products of the last tile queued are done

    def _device_block(self, ring: _Ring, slot: _Slot, shape: tuple[int, int], order: str
                      ) -> DeviceMatrix:  # fmt: skip
        s = self.dtype.itemsize
        if slot.matrix is None:
            buf = self.allocate(ring.nbytes)
            self.keep.append(buf)
            slot.matrix = DeviceMatrix(int(buf), (0, 0), (1, 1), self.dtype, buf)
        rows, cols = shape
        ld = padded(rows if order == "F" else cols, s)
        strides = (1, ld) if order == "F" else (ld, 1)
        return DeviceMatrix(slot.matrix.ptr, shape, strides, self.dtype, slot.matrix.owner)

    def _upload(self, src: np.ndarray, ring: _Ring, slot: _Slot, order: str,
                lines: tuple[int, int] | None = None,
                each_segment: Segment | None = None) -> DeviceMatrix:  # fmt: skip
        """Stage src (or only the range `lines` of its outer dimension) through the pinned
        ring into slot's device block on the upload stream, a segment per staging buffer;
        each_segment(block, lo, hi, event) as each segment's upload is queued (lines lo:hi
        of the block are on the device after `event`)."""
        from . import pinned

        target = self._device_block(ring, slot, src.shape, order)
        ld = max(target.strides)
        line = ld * self.dtype.itemsize
        up = self.streams.up
        if slot.free is not None:
            up.wait_for_event(slot.free)  # the kernels that read its old contents are done
        first, last = lines or (0, _outer(src, order))
        src = src[first:last] if order == "C" else src[:, first:last]
        for lo, hi in _segments(src, order, line, self.stage_in.nbytes):
            part = src[lo:hi] if order == "C" else src[:, lo:hi]
            index = _traced("wait staging buffer", self.stage_in.next)
            buffer = self.stage_in.buffers[index]
            staged = pinned.view(buffer, part.shape, ld, self.dtype, order)
            address = target.ptr + (first + lo) * line
            piece = (self.drv, staged, part, buffer, address, ld, up, self.copies)
            _traced(f"stage {part.shape}", lambda: _stage_up(*piece))  # noqa: B023
            event = self.drv.Event()
            event.record(up)
            self.stage_in.events[index] = event
            if each_segment is not None:
                each_segment(target, first + lo, first + hi, event)
        self.streams.compute.wait_for_event(event)  # (up runs in order: the last covers all)
        return target

    def _operand(self, ring: _Ring, key: tuple[int, ...], src: Callable[[], np.ndarray],
                 each_segment: Segment | None = None) -> DeviceMatrix:  # fmt: skip
        """The block `key` of a ring on the device: held, or uploaded now (each_segment: see
        _upload; not for panels shared between GPUs)."""
        slot = ring.find(key)
        if slot is not None and slot.matrix is not None:
            return slot.matrix
        slot = ring.next()
        view = src()
        if ring is self.ring_b and self.exchange is not None:
            slot.matrix = self._shared_panel(key, view, slot)
        else:
            slot.matrix = self._upload(view, ring, slot, _order_of(view), None, each_segment)
        slot.key = key
        return slot.matrix

    def _blocks(self, a_key: tuple[int, ...], a_src: Callable[[], np.ndarray],
                b_key: tuple[int, ...], b_src: Callable[[], np.ndarray],
                early: Callable[[DeviceMatrix, DeviceMatrix, int, int, Any], None] | None = None
                ) -> tuple[DeviceMatrix, DeviceMatrix]:  # fmt: skip
        """The A and B blocks of one product on the device: A first, unless this GPU has just
        claimed the B panel in the exchange (no GPU holds it or is uploading it), or the
        panel goes up in parts: then B first, for the other GPUs wait for it, while they
        stage their own A panels. B first too where `early` is given and B is held, or comes
        from the host with no other GPU to wait for: then early(a_block, b_block, lo, hi,
        event) as each segment of an A upload is queued."""
        exchange, ordinal = self.exchange or (None, 0)
        held = self.ring_b.find(b_key)
        claimed = exchange is not None and held is None and (
            exchange.parts_of(b_key) > 1 or exchange.claim(b_key, ordinal))
        b_ready = exchange is None or (held is not None and held.matrix is not None)
        if claimed or (early is not None and b_ready):
            b_mat = self._operand(self.ring_b, b_key, b_src)
            hook: Segment | None = None
            if early is not None:
                def hook(block: DeviceMatrix, lo: int, hi: int, event: Any) -> None:
                    early(block, b_mat, lo, hi, event)
            return self._operand(self.ring_a, a_key, a_src, hook), b_mat
        a_mat = self._operand(self.ring_a, a_key, a_src)
        return a_mat, self._operand(self.ring_b, b_key, b_src)

    def _shared_panel(self, key: tuple[int, ...], view: np.ndarray, slot: _Slot) -> DeviceMatrix:
        """A B panel through the exchange (tunedgemm/panel_exchange.py): copied from the GPU
        that uploaded it, over the GPUs' link, or uploaded here and published; or, split,
        in parts from each."""
        assert self.exchange is not None
        exchange, ordinal = self.exchange
        order = _order_of(view)
        parts = exchange.parts_of(key)
        if parts > 1:
            return self._panel_in_parts(key, parts, view, slot, order)
        found = _traced("wait for B panel", lambda: exchange.take(key, ordinal))
        if found is not None:
            return self._copy_or_upload(found, view, slot, order)
        return self._publish(key, view, slot, order)

    def _panel_in_parts(self, key: tuple[int, ...], parts: int, view: np.ndarray,
                        slot: _Slot, order: str) -> DeviceMatrix:  # fmt: skip
        """A B panel split along its outer dimension: this GPU uploads and publishes the
        parts it claims (one, or more where a GPU has not come for its own yet), then
        copies the others' parts from where they were published."""
        assert self.exchange is not None
        exchange, ordinal = self.exchange
        bounds = [int(x) for x in np.linspace(0, _outer(view, order), parts + 1)]
        mine = []
        while (index := exchange.claim_part(key, parts, ordinal)) is not None:
            self._publish((key, index), view, slot, order, (bounds[index], bounds[index + 1]))
            mine.append(index)
        for index in sorted(set(range(parts)) - set(mine)):
            part, lines = (key, index), (bounds[index], bounds[index + 1])
            found = _traced("wait for B part", lambda: exchange.take(part, ordinal))  # noqa: B023
            if found is None:  # its claimant gave up: take(...) claimed it for this GPU
                self._publish(part, view, slot, order, lines)
            else:
                self._copy_or_upload(found, view, slot, order, lines)
        return self._device_block(self.ring_b, slot, view.shape, order)

    def _publish(self, key: Any, view: np.ndarray, slot: _Slot, order: str,
                 lines: tuple[int, int] | None = None) -> DeviceMatrix:  # fmt: skip
        """Upload a claimed panel (or the lines of one part) and publish it for the other
        GPUs; a failed upload hands the claim back."""
        assert self.exchange is not None
        exchange, ordinal = self.exchange
        try:
            target = self._upload(view, self.ring_b, slot, order, lines)
        except BaseException:
            exchange.abandon(key, ordinal)
            raise
        line = max(target.strides) * self.dtype.itemsize
        first, last = lines or (0, _outer(view, order))
        nbytes = _extent_bytes(target) if lines is None else (last - first) * line
        exchange.publish(key, Published(ordinal, target.ptr + first * line, nbytes,
                                        _driver.record(self.streams.up.handle)),
                         part=lines is not None)  # fmt: skip
        return target

    def _copy_or_upload(self, found: Published, view: np.ndarray, slot: _Slot, order: str,
                        lines: tuple[int, int] | None = None) -> DeviceMatrix:  # fmt: skip
        """A published panel (or part) copied from its GPU over their link, or, where the
        GPUs have no link, uploaded here from the host."""
        assert self.exchange is not None
        exchange, ordinal = self.exchange
        context = exchange.context_of(found.ordinal)
        if context and _driver.enable_peer_access(ordinal, found.ordinal, context):
            exchange.copied(ordinal)
            return self._copy_panel(found, view.shape, order, slot, (lines or (0, 0))[0])
        return self._upload(view, self.ring_b, slot, order, lines)  # no link: an own copy

    def _copy_panel(self, found: Published, shape: tuple[int, int], order: str, slot: _Slot,
                    first: int = 0) -> DeviceMatrix:  # fmt: skip
        """Queue the copy of a published panel (or part, from line `first` of the outer
        dimension) into slot's block on the upload stream, after the publisher's upload;
        the panel has this block's layout (one plan, one shape)."""
        target = self._device_block(self.ring_b, slot, shape, order)
        offset = first * max(target.strides) * self.dtype.itemsize
        up = self.streams.up
        if slot.free is not None:
            up.wait_for_event(slot.free)
        handle = int(up.handle)
        _driver.wait_event(handle, found.event)
        nbytes = min(found.nbytes, _extent_bytes(target) - offset)
        _driver.copy_device(target.ptr + offset, found.ptr, nbytes, handle)
        copied = self.drv.Event()
        copied.record(up)
        self.streams.compute.wait_for_event(copied)
        return target

    def _reserve(self) -> None:
        """Allocate every device block, and what the launches of every tile shape need
        (tunedgemm/gpu_backend.py TileLauncher.reserve), before the first tile: running out of
        device memory then stops the call before any tile is written into the caller's c."""
        p, problem = self.plan, self.problem
        a, b, out = problem.a, problem.b, problem.out
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
        assert isinstance(out, np.ndarray)
        for ring in (self.ring_a, self.ring_b, self.ring_c):
            for slot in ring.slots:
                self._device_block(ring, slot, (1, 1), "F")
        reserve = getattr(self.launch, "reserve", None)
        if reserve is None:
            return
        orders = (_order_of(a), _order_of(b), _order_of(out))
        blocks = (self.ring_a.slots[0], self.ring_b.slots[0], self.ring_c.slots[0])
        shapes = {(rows, j1 - j0, k1 - k0) for i0, i1 in ranges(p.m, p.tm)
                  for rows in {i1 - i0, *self._segments_of_a(i1 - i0)}
                  for j0, j1 in ranges(p.n, p.tn) for k0, k1 in ranges(p.k, p.tk)}  # fmt: skip
        # A tile's first k slice reads C where beta != 0, its later slices always (they
        # accumulate): the plans of both kinds of launch (tunedgemm/plans.py GemmKey.reads_c).
        reads = {problem.beta != 0.0} | ({True} if len(ranges(p.k, p.tk)) > 1 else set())
        for rows, cols, depth in sorted(shapes):
            a_mat, b_mat, c_mat = (
                self._device_block(ring, slot, shape, order)
                for ring, slot, shape, order in zip(
                    (self.ring_a, self.ring_b, self.ring_c), blocks,
                    ((rows, depth), (depth, cols), (rows, cols)), orders, strict=True))  # fmt: skip
            for reads_c in sorted(reads):
                reserve(blas_form(a_mat, b_mat, c_mat), self.streams.compute, reads_c=reads_c)

    def execute(self) -> None:
        """Every tile, row by row (one GPU)."""
        self._reserve()
        for ti in range(len(self.rows)):
            for tj in range(len(self.cols)):
                self.tile(ti, tj)

    def tile(self, ti: int, tj: int) -> None:
        """Queue tile (ti, tj) of C: its panels up (unless held), its products, its download."""
        p, problem = self.plan, self.problem
        a, b, out = problem.a, problem.b, problem.out
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
        assert isinstance(out, np.ndarray)
        compute = self.streams.compute
        (i0, i1), (j0, j1) = self.rows[ti], self.cols[tj]
        c_slot = self.ring_c.next()
        if c_slot.free is not None:
            compute.wait_for_event(c_slot.free)  # its last tile has been downloaded
        tile = out[i0:i1, j0:j1]
        if problem.beta != 0.0:
            c_mat = self._upload(tile, self.ring_c, c_slot, _order_of(out))
        else:
            c_mat = self._device_block(self.ring_c, c_slot, tile.shape, _order_of(out))
        beta = problem.beta
        early_rows: list[tuple[int, int]] = []

        def early(a_block: DeviceMatrix, b_block: DeviceMatrix, lo: int, hi: int,
                  event: Any) -> None:  # fmt: skip
            """Rows lo:hi of the tile, as soon as those of its A panel are up."""
            compute.wait_for_event(event)
            form = blas_form(_rows(a_block, lo, hi), b_block, _rows(c_mat, lo, hi))
            self.launch(form, problem.alpha, problem.beta, compute)
            early_rows.append((lo, hi))

        for kc, (k0, k1) in enumerate(ranges(p.k, p.tk)):
            a_mat, b_mat = self._blocks((ti, kc), lambda: a[i0:i1, k0:k1],  # noqa: B023
                                        (kc, tj), lambda: b[k0:k1, j0:j1],  # noqa: B023
                                        early if self._segments_of_a(i1 - i0) else None)
            if early_rows:  # (every segment's rows: one k slice, A's rows its outer lines)
                assert early_rows[0][0] == 0 and early_rows[-1][1] == i1 - i0, early_rows
            else:
                self.launch(blas_form(a_mat, b_mat, c_mat), problem.alpha, beta, compute)
            beta = 1.0  # later k slices accumulate
            used = self.drv.Event()
            used.record(compute)
            for ring, key in ((self.ring_a, (ti, kc)), (self.ring_b, (kc, tj))):
                slot = ring.find(key)
                assert slot is not None
                slot.free = used
        self._download(c_mat, tile, c_slot)

    def _segments_of_a(self, rows: int) -> list[int]:
        """Where EARLY_PRODUCTS may multiply a tile of `rows` rows segment by segment of its
        A panel, the segments' row counts (see _upload), else []: one k slice, A's rows its
        outer lines, more than one segment, and each segment's rows of C at a 16-byte
        boundary (the kernels' vector loads)."""
        p, problem = self.plan, self.problem
        assert isinstance(problem.a, np.ndarray) and isinstance(problem.out, np.ndarray)
        s = self.dtype.itemsize
        if not EARLY_PRODUCTS or p.tk < p.k or _order_of(problem.a) != "C":
            return []
        # (the A block's lines: rows of k, padded)
        segments = _ranges_within(rows, padded(p.k, s) * s, self.stage_in.nbytes)
        row_bytes = s if _order_of(problem.out) == "F" else 0  # (C-ordered rows: padded)
        if len(segments) < 2 or any(lo * row_bytes % _ALIGN_BYTES for lo, _ in segments):
            return []
        return [hi - lo for lo, hi in segments]

    def _download(self, c_mat: DeviceMatrix, tile: np.ndarray, c_slot: _Slot) -> None:
        from . import pinned

        computed = self.drv.Event()
        computed.record(self.streams.compute)
        self.computed = computed
        down = self.streams.down
        down.wait_for_event(computed)
        if self.direct_out:
            _download_2d(self.drv, tile, c_mat, down)
            c_slot.free = self.drv.Event()
            c_slot.free.record(down)
            return
        order = "F" if c_mat.strides[0] == 1 else "C"
        ld = max(c_mat.strides)
        line = ld * self.dtype.itemsize
        for lo, hi in _segments(tile, order, line, self.stage_out.nbytes):
            part = tile[lo:hi] if order == "C" else tile[:, lo:hi]
            index = _traced("wait download buffer", self.stage_out.next)
            buffer = self.stage_out.buffers[index]
            staged = pinned.view(buffer, part.shape, ld, self.dtype, order)
            self.drv.memcpy_dtoh_async(buffer[: (hi - lo) * line], c_mat.ptr + lo * line, down)
            done = self.drv.Event()
            done.record(down)
            self.stage_out.events[index] = done
            # The copy thread gets an event of its own, a raw handle: a PyCUDA event must be
            # freed in this thread, where its GPU's context is current.
            event = _driver.record(down.handle)
            copies = _pool(self.copy_out, 2)
            self.stage_out.jobs[index] = copies.submit(_copy_out, event, part, staged,
                                                       self.copies)  # fmt: skip
        c_slot.free = done

    def close(self, before_free: Callable[[], None] | None = None) -> None:
        """Wait for every transfer and copy, then (after `before_free`) hand the buffers
        back, also when a wait fails: the first error is raised after."""
        try:
            for stream in (self.streams.up, self.streams.compute, self.streams.down):
                stream.synchronize()
        finally:
            try:
                if before_free is not None:
                    before_free()
            finally:
                try:
                    self.stage_out.release()
                finally:
                    self.stage_in.release()
                    self.keep.clear()


def _rows(block: DeviceMatrix, lo: int, hi: int) -> DeviceMatrix:
    """Rows lo:hi of a device block."""
    offset = lo * block.strides[0] * block.dtype.itemsize
    return dataclasses.replace(block, ptr=block.ptr + offset, shape=(hi - lo, block.shape[1]))


def _extent_bytes(block: DeviceMatrix) -> int:
    """Bytes from a device block's first element to the end of its last line."""
    rows, cols = block.shape
    outer = cols if block.strides[0] == 1 else rows
    return max(block.strides) * outer * block.dtype.itemsize


def _outer(block: np.ndarray, order: str) -> int:
    """The extent of block's outer dimension (columns for order 'F', rows for 'C')."""
    return block.shape[1] if order == "F" else block.shape[0]


def _segments(block: np.ndarray, order: str, line: int, most: int) -> list[tuple[int, int]]:
    """Ranges of block's outer dimension (columns for order 'F', rows for 'C') of at most
    `most` bytes each, at `line` bytes per unit (at least one unit each)."""
    return _ranges_within(_outer(block, order), line, most)


def _ranges_within(extent: int, line: int, most: int) -> list[tuple[int, int]]:
    """Ranges of 0:extent of at most `most` bytes each, at `line` bytes per unit (at least
    one unit each): how a block goes through the staging buffers (_segments)."""
    step = max(1, most // line)
    return [(lo, min(lo + step, extent)) for lo in range(0, max(extent, 1), step)]


def _copy_out(event: int, tile: np.ndarray, staged: np.ndarray,
              copies: ThreadPoolExecutor | None) -> None:  # fmt: skip
    """On a copy thread: wait for a segment's download (a raw event of _driver's pool, given
    back here), then copy it out."""
    _traced("wait download", lambda: _driver.synchronize(event))
    _driver.events.give(event)
    _traced(f"copy out {tile.shape}", lambda: host_copy(tile, staged, None, copies))


def _single_tile(problem: GemmProblem, launch: Launch,
                 direct_out: bool = False) -> None:  # fmt: skip
    """A problem of one tile, in order on one stream: stage and upload A, B (and C), multiply,
    download, copy out. Nothing to overlap, so none of the pipeline's bookkeeping, whose
    Python costs more than the transfers at these sizes."""
    import pycuda.driver as drv

    from . import cuda, pinned

    a, b, out = problem.a, problem.b, problem.out
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert isinstance(out, np.ndarray)
    stream = _streams().compute
    itemsize = problem.dtype.itemsize
    held: list[Any] = []
    on_device: list[DeviceMatrix] = []
    try:
        sources = (a, b, out) if problem.beta != 0.0 else (a, b)
        for src in sources:
            order = _order_of(src)
            ld = padded(src.shape[0] if order == "F" else src.shape[1], itemsize)
            nbytes = ld * (src.shape[1] if order == "F" else src.shape[0]) * itemsize
            host = pinned.take(nbytes)
            held.append(host)
            device = cuda.allocate(nbytes)
            held.append(device)
            staged = pinned.view(host, src.shape, ld, problem.dtype, order)
            _stage_up(drv, staged, src, host, int(device), ld, stream)
            strides = (1, ld) if order == "F" else (ld, 1)
            on_device.append(DeviceMatrix(int(device), src.shape, strides, problem.dtype, device))
        if problem.beta == 0.0:
            order = _order_of(out)
            ld = padded(out.shape[0] if order == "F" else out.shape[1], itemsize)
            nbytes = ld * (out.shape[1] if order == "F" else out.shape[0]) * itemsize
            device = cuda.allocate(nbytes)
            held.append(device)
            strides = (1, ld) if order == "F" else (ld, 1)
            on_device.append(DeviceMatrix(int(device), out.shape, strides, problem.dtype, device))
        c = on_device[2]
        launch(blas_form(on_device[0], on_device[1], c), problem.alpha, problem.beta, stream)
        if direct_out:
            _download_2d(drv, out, c, stream)
            stream.synchronize()
            return
        ld = max(c.strides)
        order = "F" if c.strides[0] == 1 else "C"
        nbytes = ld * (out.shape[1] if order == "F" else out.shape[0]) * itemsize
        host = pinned.take(nbytes)
        held.append(host)
        drv.memcpy_dtoh_async(host[:nbytes], c.ptr, stream)
        stream.synchronize()
        host_copy(out, pinned.view(host, out.shape, ld, problem.dtype, order))
    finally:
        stream.synchronize()
        for item in held:
            if isinstance(item, np.ndarray):
                pinned.give(item)


def gemm(problem: GemmProblem, launch: Launch,
         budget: int | None = None) -> Plan:  # fmt: skip
    """problem.out = alpha a @ b + beta out for host a, b, out (alpha != 0, k > 0), on the
    GPUs TUNEDGEMM_DEVICES selects (tunedgemm/devices.py)."""
    m, n, k = problem.shape
    itemsize = problem.dtype.itemsize
    home, gpus = _host_gpus()
    if len(gpus) > 1 and m * n * k < SPREAD_FROM.get(itemsize, 0) ** 3:
        gpus = (home,) if home in gpus else gpus[:1]  # too small to gain from several
    if gpus == (home,):  # one GPU, the process's own: the single-GPU pipeline, as it was
        return _on_one_gpu(problem, launch, budget, home)
    chosen = _plan(m, n, k, itemsize, budget, gpus, multi_gpu_panels(m, n, len(gpus)))
    with _host_calls:
        direct_out = _straight_down(problem)
        if chosen.tiles == 1 and not chosen.out_of_core and home in gpus:
            _single_tile(problem, launch, direct_out)
            _record({home: 1})
        else:
            threads = copy_threads(len(gpus))
            exchange = PanelExchange(SPLIT_FIRST_PANEL) if chosen.keep_b else None
            _last_exchange[0] = exchange
            spread(problem, chosen, gpus, lambda g: _GpuWorker(
                g, problem, chosen, launch, direct_out, threads, exchange))  # fmt: skip
    return chosen


def multi_gpu_panels(m: int, n: int, gpus: int) -> int:
    """Panels per dimension (at most) of a host call on `gpus` GPUs: PANELS_PER_GPU per
    GPU, or more to keep tiles near MULTI_GPU_EDGE where both dimensions are large (one
    count serves both: a long, narrow C keeps the narrow side's tiles wide)."""
    return max(PANELS_PER_GPU * gpus, round(min(m, n) / MULTI_GPU_EDGE))


def _on_one_gpu(problem: GemmProblem, launch: Launch, budget: int | None, home: int) -> Plan:
    """The single-GPU pipeline: in the caller's thread, on its context and streams."""
    m, n, k = problem.shape
    chosen = _plan(m, n, k, problem.dtype.itemsize, budget, (), MAX_PANELS)
    with _host_calls:
        direct_out = _straight_down(problem)
        if chosen.tiles == 1 and not chosen.out_of_core:
            _single_tile(problem, launch, direct_out)
        else:
            run = _Run(problem, chosen, launch, direct_out)
            try:
                run.execute()
            finally:
                run.close()
        _record({home: chosen.tiles})
    return chosen


def _plan(m: int, n: int, k: int, itemsize: int, budget: int | None, gpus: tuple[int, ...],
          panels: int) -> Plan:  # fmt: skip
    """The tiles of a call: within `budget`, else within what every GPU of `gpus` (() the
    process's) has free."""
    small = itemsize * (m * k + k * n + m * n) <= UNQUERIED_BYTES
    if budget is None and small and settings.get(DEVICE_MEMORY_ENV) is None:
        budget = UNQUERIED_BYTES * 4  # fits on any GPU we build for: skip asking the driver
    if budget is not None:
        return plan(m, n, k, itemsize, budget, panels)
    chosen = plan(m, n, k, itemsize, device_budget(gpus=gpus), panels)
    if chosen.out_of_core and settings.get(DEVICE_MEMORY_ENV) is None:
        # Memory the pool holds for reuse counts as free once handed back.
        chosen = plan(m, n, k, itemsize, device_budget(True, gpus), panels)
    return chosen


def _host_gpus() -> tuple[int, tuple[int, ...]]:
    """(the process's GPU, the ordinals of the GPUs host calls use): TUNEDGEMM_DEVICES."""
    from . import cuda, devices

    home = cuda.ordinal()
    return home, tuple(g.index for g in devices.selected()) or (home,)


# Several GPUs ------------------------------------------------------------------------------

_last: list[dict[int, int]] = [{}]


def _record(tiles: dict[int, int]) -> None:
    _last[0] = tiles


_last_exchange: list[PanelExchange | None] = [None]


def last_panel_traffic() -> dict[str, dict[int, int]]:
    """Of the last multi-GPU host call of this process that shared B panels: per GPU, the
    panels it uploaded from the host, the parts of split panels it uploaded, and the panels
    or parts it copied from another GPU (empty: none)."""
    exchange = _last_exchange[0]
    if exchange is None:
        return {}
    return {"uploads": dict(exchange.uploads), "parts": dict(exchange.parts),
            "copies": dict(exchange.copies)}  # fmt: skip


def last_spread() -> dict[int, int]:
    """The tiles of C each GPU (by ordinal) computed in the last host call through the GPU
    pipeline of this process (host calls run one at a time)."""
    return dict(_last[0])


class _GpuWorker:
    """One GPU's share of a call (a TileWorker): in its own thread, bound to the GPU's primary
    context, with its own streams, rings of device blocks, pinned staging, plans and host
    copy threads (`copy_threads` of them)."""

    def __init__(self, index: int, problem: GemmProblem, plan: Plan, launch: Launch,
                 direct_out: bool, copy_threads: int = _WORKERS,
                 exchange: PanelExchange | None = None) -> None:  # fmt: skip
        self.name = f"gpu{index}"
        self.index, self.problem, self.plan = index, problem, plan
        self.launch, self.direct_out = launch, direct_out
        self.copy_threads = copy_threads
        self.exchange = exchange  # the B panels the call's GPUs share (None: each uploads B)
        self.pipeline: _Run | None = None
        self.unfinished: collections.deque[Any] = collections.deque()  # tiles' events

    def open(self) -> None:
        from . import cuda

        try:
            cuda.bind(self.index)
            if self.exchange is not None:
                self.exchange.join(self.index, _driver.current_context())
            copies = _pool(f"copy-{self.index}", self.copy_threads)
            shared = None if self.exchange is None else (self.exchange, self.index)
            self.pipeline = _Run(self.problem, self.plan, self.launch, self.direct_out,
                                 copy_out=f"copy-out-{self.index}", copies=copies,
                                 exchange=shared)  # fmt: skip
            # Before any worker takes a tile (run_tiles waits until every worker has opened):
            # running out of memory on any GPU stops the call before a tile reaches c.
            self.pipeline._reserve()
        except BaseException:
            # (close is not called after a failed open: hand back what was made here)
            pipeline, self.pipeline = self.pipeline, None
            try:
                if pipeline is not None:
                    pipeline.close()
            finally:
                if self.exchange is not None:
                    self.exchange.leave(self.index)
            raise

    def run(self, assignment: Assignment) -> None:
        assert self.pipeline is not None
        self.pipeline.tile(assignment.tile.row, assignment.tile.col)
        self.unfinished.append(self.pipeline.computed)
        while len(self.unfinished) > TILES_AHEAD:
            self.unfinished.popleft().synchronize()

    def close(self) -> None:
        """In the worker's thread: waits for its work, then drops its streams, events and
        blocks here, where its GPU's context is current (PyCUDA cannot free them elsewhere)."""
        pipeline, self.pipeline = self.pipeline, None
        self.unfinished.clear()  # (events are freed here, in the worker's thread)
        if pipeline is not None:
            pipeline.close(None if self.exchange is None else self._after_the_others)
        elif self.exchange is not None:
            self.exchange.leave(self.index)

    def _after_the_others(self) -> None:
        """Before this GPU's blocks are freed: other GPUs may still be copying panels out
        of them."""
        assert self.exchange is not None
        self.exchange.leave(self.index)
        self.exchange.wait_all()
        self.exchange.give_events(self.index)


def spread(problem: GemmProblem, chosen: Plan, gpus: tuple[int, ...],
           worker: Callable[[int], TileWorker]) -> list[WorkerStats]:  # fmt: skip
    """Every tile of `chosen` done once, over one worker (thread) per GPU taking tiles from a
    shared queue (tunedgemm/tile_queue.py): each keeps two A panels, as the pipeline's ring,
    and all its B panels where the plan keeps B. A worker's error stops the others after
    their current tile and is raised here once all have closed."""
    rows, cols = len(ranges(chosen.m, chosen.tm)), len(ranges(chosen.n, chosen.tn))
    tiles = [Tile(r, c) for r in range(rows) for c in range(cols)]
    stats = run_tiles(tiles, [worker(g) for g in gpus], row_slots=2,
                      col_slots=None if chosen.keep_b else 2, own_threads=True)  # fmt: skip
    _record({g: len(s.tiles) for g, s in zip(gpus, stats, strict=True)})
    return stats
