"""Matrix products of dask arrays, every block product computed by tunedgemm on its worker.

Install with ``pip install "tunedgemm[dask]"``. The graph is written out as explicit tasks
(one HighLevelGraph layer), because its shape is the point:

* one task per block product ``op(x)[i, kk] @ op(y)[kk, j]``, calling ``tunedgemm.gemm`` (or
  ``tunedgemm.matmul``) on the blocks themselves: NumPy blocks take tunedgemm's host path
  (the GPU pipeline where there is a GPU, NumPy otherwise), CuPy blocks stay on their GPU;
* then, per output block (i, j), a tree of sums over kk, at most ``split_every`` partial
  products per sum. No task ever holds a whole row panel of x or column panel of y (Dask's
  contraction once concatenated them, dask/dask#6874; its matmul now sums blocks too), and
  a sum holds at most ``split_every`` partials: each task's memory is bounded by the chunk
  size, not by k.

Transposes never move data: with ``trans_a`` the block (kk, i) of x is passed to tunedgemm
with its transpose flag (a ``.T`` of a dask array works too: its blocks are transposed
views). ``beta * c`` is folded into the product of the first kk, so it costs no extra pass.
Nothing here knows where the workers are: the same graph runs on the threaded scheduler, a
``distributed.LocalCluster`` or a cluster of machines (``distributed.Client("tcp://...")``).
One choice depends on them, made when the graph is built (``transfer=``): where every
worker of the active client is a process of one host with a GPU and the blocks are CuPy
arrays, each input block first goes through a ``share`` task on its worker, and block
products and partial sums are shared likewise, so that a block another worker needs moves
through CUDA IPC, device to device (tunedgemm/dask_ipc.py), instead of through host memory
and distributed's TCP comm. Such a graph also deals its output blocks to the workers in turn
(tunedgemm/dask_placement.py): where blocks move that cheaply, an even split beats locality.
The graph builds a legacy ``dask.array.Array`` (the default collection of dask 2026; with
``array.query-planning`` switched on, tunedgemm.dask raises a clear error).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.array.utils import meta_from_array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # the optional extra is not installed
    raise ImportError(
        'tunedgemm.dask needs Dask: pip install "tunedgemm[dask]" '
        f"(dask[array] and distributed); importing it failed: {exc}"
    ) from exc

import tunedgemm

from . import checks, dask_ipc, dask_placement
from ._args import GEMM_DTYPES, as_scalar, as_trans, check_castable
from .precision import check_mode, resolve

__all__ = ["check_sample", "gemm", "local_gpu_cluster", "matmul"]

SPLIT_EVERY = 4  # partial products summed per task: memory per sum is this many blocks
TRANSFERS = ("auto", "ipc", "comm")  # how blocks move between workers (_use_ipc)
# IPC where it applies: on two H100s (2026-11-25) its GPU tests passed and 32768^2 float32 in
# chunks of 8192 took 0.91 s on two workers against 5.96 s through the comm.
DEFAULT_TRANSFER = "auto"


def matmul(x: Any, y: Any, *, precision: str | None = None, split_every: int = SPLIT_EVERY,
           transfer: str = DEFAULT_TRANSFER) -> da.Array:  # fmt: skip
    """x @ y for 2-D arrays (dask arrays, or anything dask.array.asarray takes) as a dask
    array: np.matmul's dtype, each block product computed by tunedgemm.matmul. precision as
    tunedgemm.matmul's, decided here (a `tunedgemm.precision(...)` block around the call
    holds for every worker). transfer: how blocks move between workers: "comm" through
    distributed's comm, "ipc" through CUDA IPC (worker processes of one host whose GPUs see
    each other), "auto" IPC where it applies (see _use_ipc), else comm (the default is
    DEFAULT_TRANSFER)."""
    x, y = _as_dask(x, "x"), _as_dask(y, "y")
    dtype = np.result_type(x.dtype, y.dtype)
    mode = _mode(precision, dtype)
    return _product(_matmul_block, (mode,), x, y, None, False, False, dtype, split_every,
                    "matmul", transfer)  # fmt: skip


def gemm(alpha: Any, x: Any, y: Any, beta: Any = 0.0, c: Any = None, trans_a: int = 0,
         trans_b: int = 0, *, precision: str | None = None, split_every: int = SPLIT_EVERY,
         transfer: str = DEFAULT_TRANSFER) -> da.Array:  # fmt: skip
    """alpha * op(x) @ op(y) + beta * c as a dask array, with tunedgemm.gemm's semantics:
    float64 if x or y is float64 (or an integer type), else float32; trans flags 0, 1 or 2;
    c ignored when beta is 0 and required otherwise; c is never written. precision and
    transfer as in matmul."""
    alpha_f, beta_f = as_scalar(alpha, "alpha"), as_scalar(beta, "beta")
    ta, tb = as_trans(trans_a, "trans_a"), as_trans(trans_b, "trans_b")
    x, y = _as_dask(x, "x"), _as_dask(y, "y")
    check_castable(x.dtype, "x")
    check_castable(y.dtype, "y")
    wide = np.result_type(x.dtype, y.dtype, np.float32).itemsize > 4
    dtype = np.dtype(np.float64 if wide else np.float32)
    if beta_f == 0.0:
        c = None
    elif c is None:
        raise ValueError("c must be given when beta is not zero")
    else:
        c = _as_dask(c, "c")
        check_castable(c.dtype, "c")
    return _product(_gemm_block, (alpha_f, beta_f, _mode(precision, dtype)), x, y, c, ta, tb,
                    dtype, split_every, "gemm", transfer)  # fmt: skip


def _mode(precision: str | None, dtype: np.dtype) -> str | None:
    """The precision mode every block product of dtype runs in (None: not a GEMM dtype, the
    block library's own product)."""
    if np.dtype(dtype) not in GEMM_DTYPES:
        if precision is not None:
            check_mode(precision)
        return None
    return resolve(precision, np.dtype(dtype).name)


def _use_ipc(transfer: str, operands: Sequence[da.Array]) -> bool:
    """Whether this graph shares its blocks through CUDA IPC: transfer="ipc", or "auto"
    with CuPy blocks (the operands' meta) and an active distributed client whose workers
    are two or more processes of one host, each with a GPU the others see
    (dask_ipc.one_host_with_gpus); never for "comm"."""
    if transfer not in TRANSFERS:
        raise ValueError(f"transfer must be one of {', '.join(TRANSFERS)}; got {transfer!r}")
    if transfer != "auto":
        return transfer == "ipc"
    if not all(type(a._meta).__module__.split(".")[0] == "cupy" for a in operands):
        return False
    client = _active_client()
    return client is not None and dask_ipc.one_host_with_gpus(_worker_reports(client))


def _active_client() -> Any:
    """The client a compute would use (`Client.as_current`, else the latest), or None (no
    distributed, or no client)."""
    try:
        from distributed import Client
    except ImportError:
        return None
    try:
        return Client.current()
    except ValueError:  # no client
        return None


_reports: dict[Any, list[dask_ipc.Report]] = {}  # (client id, workers) -> reports


def _worker_reports(client: Any) -> list[dask_ipc.Report]:
    """Each worker's host, GPU and visible GPUs (dask_ipc.identity), asked once per client
    and set of workers."""
    key = (client.id, tuple(sorted(client.scheduler_info().get("workers", {}))))
    if key not in _reports:
        _reports[key] = list(client.run(dask_ipc.identity).values())
    return _reports[key]


def local_gpu_cluster(gpus: Sequence[int] | None = None, threads_per_worker: int = 1,
                      memory_limit: int | str = 0, **scheduler_options: Any) -> Any:  # fmt: skip
    """A distributed.SpecCluster on this machine with one worker process per GPU. Each sees
    its GPU as device 0 and the other workers' GPUs after it (CUDA_VISIBLE_DEVICES set by
    its Nanny before CUDA starts there), since CUDA IPC between workers needs every GPU
    visible; TUNEDGEMM_DEVICES=0 keeps tunedgemm's host calls in a worker on its own GPU.

    gpus: CUDA ordinals of this process (default: TUNEDGEMM_DEVICES, else every visible
    GPU). One thread per worker is enough for device blocks, whose products are queued on
    the GPU without waiting. memory_limit is each worker's host-memory limit (distributed's
    meaning; 0: none): distributed counts CuPy blocks as if they were in host memory, so its
    default limit (a share of host RAM) makes a worker spill device blocks to disk once they
    outgrow that share, which multiplied a 32768^2 product's time on the H100.
    scheduler_options go to distributed.Scheduler (default: the dashboard on any free port).
    Without distributed, ImportError; without GPUs, ValueError."""
    from distributed import Nanny, Scheduler, SpecCluster

    from . import devices

    chosen = [g.index for g in devices.selected()] if gpus is None else list(gpus)
    if not chosen:
        raise ValueError("local_gpu_cluster: no GPU is visible (or gpus is empty)")
    # Ordinals count the GPUs this process sees; a child's CUDA_VISIBLE_DEVICES names the
    # driver's own: translate through ours when it is set.
    ours = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [part.strip() for part in ours.split(",")] if ours else None
    named = [names[index] if names else str(index) for index in chosen]
    workers = {}
    for place, index in enumerate(chosen):
        rotated = named[place:] + named[:place]  # its own GPU first (dask-cuda does the same)
        env = {"CUDA_VISIBLE_DEVICES": ",".join(rotated), "TUNEDGEMM_DEVICES": "0"}
        options = {"nthreads": threads_per_worker, "env": env, "memory_limit": memory_limit}
        workers[f"gpu{index}"] = {"cls": Nanny, "options": options}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0", **scheduler_options}}
    return SpecCluster(workers=workers, scheduler=scheduler, name="tunedgemm-gpus")


def check_sample(x: da.Array, y: da.Array, product: da.Array, blocks: int = 2, lines: int = 256,
                 seed: int | None = None) -> tuple[bool, float, float]:  # fmt: skip
    """(passed, worst scaled error, tolerance) of `product` (x @ y) on up to `lines` rows and
    columns of each of `blocks` random output blocks, against a float64 reference
    (tunedgemm.checks): only those rows of x and columns of y are fetched, so it serves
    products too large for one machine's reference."""
    rng = np.random.default_rng(seed)
    row_ends, col_ends = np.cumsum((0, *product.chunks[0])), np.cumsum((0, *product.chunks[1]))
    grid = product.numblocks
    worst, tol = 0.0, checks.tolerance(x.shape[1], np.dtype(product.dtype))
    for _ in range(blocks):
        i, j = int(rng.integers(grid[0])), int(rng.integers(grid[1]))
        rows = _some(rng, row_ends[i], row_ends[i + 1], lines)
        cols = _some(rng, col_ends[j], col_ends[j + 1], lines)
        a, b, out = dask.compute(x[rows, :], y[:, cols], product[rows, :][:, cols])
        exact, scale = checks.float64_reference(1.0, _host(a), _host(b), 0.0, None)
        worst = max(worst, checks.scaled_error(_host(out), exact, scale))
    return bool(worst <= tol), float(worst), float(tol)


def _some(rng: np.random.Generator, start: int, stop: int, count: int) -> np.ndarray:
    return np.sort(rng.choice(np.arange(start, stop), min(count, stop - start), replace=False))


def _host(value: Any) -> np.ndarray:
    """A NumPy copy of a block of any array library (CuPy's through .get())."""
    if type(value).__module__.split(".")[0] == "cupy":
        return np.asarray(value.get())
    return np.asarray(value)


# Block tasks (module level, so that process workers unpickle them by name) ---------------


def _matmul_block(mode: str | None, a: Any, b: Any, c: Any = None) -> Any:
    a, b = dask_ipc.unwrap(a), dask_ipc.unwrap(b)  # shared blocks (transfer="ipc")
    if mode is not None:
        return tunedgemm.matmul(a, b, precision=mode)
    return a @ b  # ints, float16, bool: the block library's own exact product


def _gemm_block(alpha: float, beta: float, mode: str | None, a: Any, b: Any, c: Any, ta: bool,
                tb: bool) -> Any:  # fmt: skip
    a, b, c = dask_ipc.unwrap(a), dask_ipc.unwrap(b), dask_ipc.unwrap(c)
    return tunedgemm.gemm(alpha, a, b, beta if c is not None else 0.0, c, int(ta), int(tb),
                          precision=mode)  # fmt: skip


def _sum_blocks(parts: list[Any]) -> Any:
    """The sum of partial products, in a new array (inputs are never written: a retried task
    must find them as they were)."""
    parts = [dask_ipc.unwrap(part) for part in parts]
    total = parts[0] + parts[1]
    for part in parts[2:]:
        total += part
    return total


# The graph --------------------------------------------------------------------------------


def _as_dask(value: Any, name: str) -> da.Array:
    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    array = value if isinstance(value, da.Array) else da.asarray(value)
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {array.shape}")
    return array


def _aligned(x: da.Array, y: da.Array, ta: bool, tb: bool) -> tuple[da.Array, da.Array]:
    """x and y with the same chunks along k: the smaller operand is rechunked to the other's."""
    x_axis, y_axis = (0 if ta else 1), (1 if tb else 0)
    if x.chunks[x_axis] == y.chunks[y_axis]:
        return x, y
    if x.nbytes <= y.nbytes:
        return x.rechunk({x_axis: y.chunks[y_axis]}), y
    return x, y.rechunk({y_axis: x.chunks[x_axis]})


def _product(block: Callable[..., Any], head: tuple[Any, ...], x: da.Array, y: da.Array,
             c: da.Array | None, ta: bool, tb: bool, dtype: np.dtype, split_every: int,
             what: str, transfer: str = "comm") -> da.Array:  # fmt: skip
    """The dask array of op(x) @ op(y) (+ c) whose block products are block(*head, a, b, c
    [, ta, tb]) (see the module docstring). With IPC transfers every input block is read
    through a share task (dask_ipc.share: it depends on that block alone, so it runs where
    the block is), and every partial product or sum is returned shared; the output blocks
    stay plain arrays."""
    if dask.config.get("array.query-planning", None):
        raise NotImplementedError(
            "tunedgemm.dask builds a legacy dask.array graph; switch off the "
            "'array.query-planning' config to use it"
        )
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    m, kx = (x.shape[::-1] if ta else x.shape)
    ky, n = (y.shape[::-1] if tb else y.shape)
    if kx != ky:
        raise ValueError(
            f"x and y do not align: op(x) is {m}x{kx} and op(y) is {ky}x{n} "
            f"(trans_a={int(ta)}, trans_b={int(tb)})"
        )
    x, y = _aligned(x, y, ta, tb)
    row_chunks = x.chunks[1] if ta else x.chunks[0]
    col_chunks = y.chunks[0] if tb else y.chunks[1]
    k_blocks = len(x.chunks[0] if ta else x.chunks[1])
    dependencies: list[Any] = [x, y]
    if c is not None:
        if c.shape != (m, n):
            raise ValueError(f"c has shape {c.shape}, expected {(m, n)} for op(x) @ op(y)")
        c = c.rechunk((row_chunks, col_chunks))
        dependencies.append(c)
    ipc = _use_ipc(transfer, [x, y])
    flags = (ta, tb) if block is _gemm_block else ()
    token = tokenize(block, head, x, y, c, ta, tb, split_every, ipc)
    name, partial = f"tunedgemm-{what}-{token}", f"tunedgemm-{what}-partial-{token}"
    client = _active_client() if ipc else None
    if client is not None and dask_placement.deal(client):  # blocks move cheaply: deal out
        columns = len(col_chunks)
        name = dask_placement.dealt_name(name, columns)
        partial = dask_placement.dealt_name(partial, columns)
    layer: dict[Any, Any] = {}

    def source(key: Any) -> Any:
        """The key a product reads input block `key` through: its share task with IPC."""
        if key is None or not ipc:
            return key
        shared = (f"{dask_placement.SHARE_PREFIX}{tokenize(key[0])}", *key[1:])
        layer[shared] = (dask_ipc.share, key)
        return shared

    def task(key: Any, value: tuple[Any, ...]) -> None:
        """A partial result is shared with IPC (a sum elsewhere may need it); an output
        block never is."""
        layer[key] = (dask_ipc.share, value) if ipc and key[0] == partial else value

    for i in range(len(row_chunks)):
        for j in range(len(col_chunks)):
            parts = []
            for kk in range(k_blocks):
                x_key = (x.name, kk, i) if ta else (x.name, i, kk)
                y_key = (y.name, j, kk) if tb else (y.name, kk, j)
                c_key = (c.name, i, j) if c is not None and kk == 0 else None
                key = (name, i, j) if k_blocks == 1 else (partial, i, j, 0, kk)
                task(key, (block, *head, source(x_key), source(y_key), source(c_key), *flags))
                parts.append(key)
            level = 0
            while len(parts) > 1:
                level += 1
                groups = [parts[g : g + split_every] for g in range(0, len(parts), split_every)]
                parts = []
                for g, group in enumerate(groups):
                    if len(group) == 1:  # a last group of one goes up a level as it is
                        parts.append(group[0])
                        continue
                    key = (name, i, j) if len(groups) == 1 else (partial, i, j, level, g)
                    task(key, (_sum_blocks, group))
                    parts.append(key)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=dependencies)
    meta = meta_from_array(x._meta, ndim=2, dtype=dtype)
    return da.Array(graph, name, chunks=(row_chunks, col_chunks), meta=meta)
