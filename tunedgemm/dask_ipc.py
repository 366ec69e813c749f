"""CuPy blocks handed between worker processes of one host through CUDA IPC: only a handle travels.

`share(block)` wraps a block in a SharedBlock. Pickled for another process, a SharedBlock
exports a CUDA IPC handle of the allocation holding its block (plus the offset, layout, host
and GPU); unpickled, it opens the handle (or finds it kept open from an earlier block of the
same allocation), copies the block device to device (over NVLink between two GPUs) into a
fresh local array and wraps the copy. So no array refers to the producer's memory once
deserialisation has returned; only kept mappings do (HANDLES_KEPT, below).

Why that is safe with distributed: the producer's `Worker.get_data` handler keeps the
values it sends in its local `data` dict until the requester replies "OK", and the
requester (`get_data_from_worker`, distributed/worker.py, read in distributed 2026.8.0)
writes "OK" only after `send_recv` returned, i.e. after the comm's `read` has deserialised
the message (TCP.read -> from_frames, deserialize=True for a worker's rpc pool). The
block is alive for the whole copy. When the Active Memory Manager later drops the
producer's replica, the receiver's copy is its own: dropping it is harmless.

Outside a comm (distributed spilling a SharedBlock to disk, which serialises it without a
recipient), the block's bytes are written instead: a handle to memory that the spilled
wrapper no longer keeps alive would dangle. A block that cannot be exported (NumPy, empty,
memory CUDA IPC does not cover) is pickled as it is.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import itertools
import logging
import os
import pickle
import socket
import threading
import time
import weakref
from typing import Any

logger = logging.getLogger(__name__)


class SharedBlock:
    """A block (`array`) and the CUDA event after which its producer's work on it is done
    (`ready`, None where there is nothing to wait for)."""

    __slots__ = ("__weakref__", "array", "ready")

    def __init__(self, array: Any, ready: Any = None) -> None:
        self.array, self.ready = array, ready

    def __reduce__(self) -> tuple[Any, ...]:
        array = self.array
        if not _exportable(array):
            return SharedBlock, (array,)
        if self.ready is not None:  # another process reads it: the producer must be done
            self.ready.synchronize()
        try:
            payload = _export(array)
        except Exception as exc:  # e.g. managed or stream-ordered memory: no IPC handle
            _warn_once(f"tunedgemm.dask_ipc: a block could not be exported ({exc}); "
                       "sending its bytes instead")  # fmt: skip
            return SharedBlock, (array,)
        token = next(_tokens)
        _exported[token] = self
        payload.update(host=host_identity(), pid=os.getpid(), token=token, shape=array.shape,
                       dtype=array.dtype.str, strides=array.strides)  # fmt: skip
        return _receive, (payload,)


def share(block: Any) -> SharedBlock:
    """`block` wrapped, with an event recorded on the current stream (never waits: the
    wait happens only if the block is sent to another process)."""
    return SharedBlock(block, _record(block))


def unwrap(value: Any) -> Any:
    """The block a SharedBlock holds; anything else as it is."""
    return value.array if isinstance(value, SharedBlock) else value


@functools.lru_cache(maxsize=1)
def host_identity() -> str:
    """This machine, for as long as it runs: host name and boot id (an IPC handle is
    only valid on the machine, and since the boot, that made it)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            boot = file.read().strip()
    except OSError:
        boot = "unknown-boot"
    return f"{socket.gethostname()}/{boot}"


@functools.lru_cache(maxsize=64)
def gpu_identity(ordinal: int | None = None) -> str | None:
    """The UUID (else PCI bus id) of GPU `ordinal` of this process (default: the current
    device); None without CuPy or without a usable GPU."""
    try:
        import cupy

        runtime = cupy.cuda.runtime
        ordinal = cupy.cuda.Device().id if ordinal is None else ordinal
        uuid = runtime.getDeviceProperties(ordinal).get("uuid")
        return bytes(uuid).hex() if uuid else cupy.cuda.Device(ordinal).pci_bus_id
    except Exception:  # no CuPy, no driver, no device: this process has no GPU to share
        return None


Report = tuple[str, str | None, tuple[str | None, ...]]


def identity() -> Report:
    """(host, its GPU, every GPU it sees) of the process it runs in: what a worker reports."""
    own = gpu_identity()
    if own is None:
        return host_identity(), None, ()
    return host_identity(), own, tuple(sorted(gpu for gpu in _visible_gpus() if gpu))


def one_host_with_gpus(reports: list[Report]) -> bool:
    """Whether workers reporting these identities can hand blocks over through CUDA IPC:
    two or more (with one nothing moves), all on one host, each with a GPU that every other
    sees (CUDA_VISIBLE_DEVICES of one GPU per worker hides the others)."""
    gpus = {gpu for _, gpu, _ in reports}
    return (len(reports) >= 2 and len({host for host, _, _ in reports}) == 1
            and None not in gpus and all(gpus <= set(seen) for _, _, seen in reports))  # fmt: skip


# The producer's side ----------------------------------------------------------------------

_tokens = itertools.count()
# Exported wrappers by token, weakly: a handle unpickled in its own process (which CUDA
# cannot open there) finds its block here while the wrapper lives.
_exported: weakref.WeakValueDictionary[int, SharedBlock] = weakref.WeakValueDictionary()
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def _exportable(array: Any) -> bool:
    return type(array).__module__.split(".")[0] == "cupy" and array.size > 0


def _record(block: Any) -> Any:
    if not _exportable(block):
        return None
    import cupy

    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record()  # on the current stream, where the block's producer queued its work
    return event


def _export(array: Any) -> dict[str, Any]:
    """The IPC handle of the allocation holding `array`, the offset of its first element
    there, and its GPU. CuPy's pool hands out pieces of larger allocations, and an IPC
    handle opens at the allocation's base."""
    import cupy

    from . import _driver

    runtime, ordinal = cupy.cuda.runtime, array.device.id
    previous = runtime.getDevice()
    # The driver call needs this GPU's context current in this thread (often distributed's
    # event loop, where CUDA may not have run yet): cudaSetDevice makes it so (CUDA >= 12),
    # where CuPy's Device() would skip the call for the device already selected.
    runtime.setDevice(ordinal)
    try:
        base, _ = _driver.allocation_of(array.data.ptr)
        handle = runtime.ipcGetMemHandle(base)
    finally:
        runtime.setDevice(previous)
    return {"handle": handle, "offset": array.data.ptr - base, "gpu": gpu_identity(ordinal)}


# The receiver's side ----------------------------------------------------------------------

_lock = threading.Lock()  # one receive at a time: opening one allocation twice fails
_received = 0  # blocks copied in through a handle by this process (the GPU test reads it)
_opens = 0  # handles opened (not found kept) by this process (the GPU test reads it)
_timings: collections.deque[tuple[float, float]] = collections.deque(maxlen=4096)
# Handles kept open for the next block of the same allocation: opening one maps the
# producer's allocation into this process, the dear part of a receive (21 ms against 0.8 ms
# for a 256 MiB block, two H200s, 2026-11-26). It pays when blocks of the same allocations
# come again (products repeated on persisted operands: CuPy's pool keeps its allocations);
# the first receive of each still opens. CUDA leaves it undefined if the producer frees an
# allocation another process has open; CuPy's pool frees its allocations only in
# free_all_blocks (when an allocation fails, or when asked) and at exit. So only this many
# are kept, the oldest closed first, none unused for longer than HANDLE_IDLE_S (checked at
# each receive and every TIDY_S by a thread of this module), and all at exit. 0: close each
# handle after its copy, as before.
HANDLES_KEPT = 32
HANDLE_IDLE_S = 60.0
TIDY_S = 1.0
# (sender's pid, handle) -> (mapped address, this process's GPU it was opened on, last use)
_opened: collections.OrderedDict[tuple[int, bytes], tuple[int, int, float]] = (
    collections.OrderedDict())  # fmt: skip


def _receive(payload: dict[str, Any]) -> SharedBlock:
    """A SharedBlock of a local copy of the exported block (the unpickling side)."""
    if payload["host"] != host_identity():
        raise RuntimeError(
            f"tunedgemm.dask_ipc: a CUDA IPC handle from host {payload['host']} reached "
            f"host {host_identity()}; IPC transfers work between processes of one host "
            "only (use transfer='comm' on clusters of several machines)"
        )
    if payload["pid"] == os.getpid():
        mine = _exported.get(payload["token"])
        if mine is None:
            raise RuntimeError("tunedgemm.dask_ipc: a block pickled in this process is gone")
        return SharedBlock(mine.array, mine.ready)
    global _received
    asked = time.perf_counter()
    with _lock:
        started = time.perf_counter()
        block = SharedBlock(_open_copy(payload))
        _received += 1
        _timings.append((started - asked, time.perf_counter() - started))
    return block


def receive_timings(reset: bool = False) -> list[tuple[float, float]]:
    """Of each block this process received through a handle: (seconds waiting for another
    receive, seconds opening, copying and closing), in order (bench_multigpu reads them)."""
    found = list(_timings)
    if reset:
        _timings.clear()
    return found


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """(lowest byte offset from the first element, bytes spanned) of a strided layout."""
    low = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    return low, high - low + itemsize


# Received blocks are copied on a stream of their own (non-blocking: the legacy default stream,
# where the worker's products queue, does not order it). On the default stream a copy, and
# so the deserialising thread (distributed's event loop: a handle is a small message) waited
# behind every product already queued on the GPU. False: the default stream, as before.
RECEIVE_STREAM = True


def _open_copy(payload: dict[str, Any]) -> Any:
    """Open the handle (or take it kept open), copy the block's bytes to this process's
    current GPU, wait for the copy, keep the handle (HANDLES_KEPT); the copy with the
    block's layout."""
    import cupy

    runtime = cupy.cuda.runtime
    if payload["gpu"] not in _visible_gpus():
        raise RuntimeError(
            "tunedgemm.dask_ipc: the producer's GPU is not visible in this process; every "
            "worker must see every GPU (CUDA_VISIBLE_DEVICES: its own first, then the "
            "others, as tunedgemm.dask.local_gpu_cluster sets it)"
        )
    dtype = cupy.dtype(payload["dtype"])
    low, span = _extent(payload["shape"], payload["strides"], dtype.itemsize)
    stream = _receive_stream() if RECEIVE_STREAM else cupy.cuda.get_current_stream()
    _tidy()
    with stream:  # CuPy's pool: memory from this stream's arena, safe to write on it
        local = cupy.empty(span, dtype=cupy.uint8)
    key = (payload["pid"], bytes(payload["handle"]))
    device = runtime.getDevice()
    remote, _, _ = _opened.pop(key, (None, device, 0.0))
    if remote is None:
        global _opens
        remote = runtime.ipcOpenMemHandle(payload["handle"])  # lazy peer access (CuPy's)
        _opens += 1
    try:
        source = remote + payload["offset"] + low
        runtime.memcpyAsync(local.data.ptr, source, span, runtime.memcpyDefault, stream.ptr)
        stream.synchronize()  # the handle may close next: the copy must be done
    except BaseException:
        with contextlib.suppress(Exception):  # (the copy's error is the one to raise)
            runtime.ipcCloseMemHandle(remote)
        raise
    _opened[key] = (remote, device, time.monotonic())
    _close_kept(float("-inf"), HANDLES_KEPT)
    _start_tidying()
    memory = local.data if not RECEIVE_STREAM else _leased(local)
    return cupy.ndarray(payload["shape"], dtype, memptr=memory + (-low),
                        strides=payload["strides"])  # fmt: skip


_streams: dict[int, Any] = {}


def _receive_stream() -> Any:
    import cupy

    device = cupy.cuda.runtime.getDevice()
    if device not in _streams:
        _streams[device] = cupy.cuda.Stream(non_blocking=True)
    return _streams[device]


# Blocks received on the receive stream go back to CuPy's pool (its arena for that stream)
# only once the work queued before they were dropped has finished: CuPy trusts a stream's
# order, and the next copy on the receive stream is not ordered after the products that may
# still read them. Dropped ones wait here with an event recorded on the legacy default
# stream, which covers work on it and on every blocking stream (CuPy's and PyCUDA's default
# kind, and the per-thread default streams); a consumer that reads a received block on a
# non-blocking stream of its own must finish with it before dropping it, as with any block
# of CuPy's pool. A deque: __del__ may run inside _reclaim (a garbage collection), so it
# takes no lock, and appends are atomic.
_deferred: collections.deque[tuple[Any, Any]] = collections.deque()


class _Lease:
    """Keeps a received block's memory (`local`) until it is dropped, then defers its return."""

    __slots__ = ("local",)

    def __init__(self, local: Any) -> None:
        self.local = local

    def __del__(self) -> None:
        try:
            import cupy

            with cupy.cuda.Device(self.local.device.id):
                event = cupy.cuda.Event(block=False, disable_timing=True)
                event.record(cupy.cuda.Stream.null)
        except Exception:  # interpreter shutdown, or the device is gone: keep it
            event = None
        _deferred.append((self.local, event))


def _leased(local: Any) -> Any:
    """A memory pointer to `local` whose last reference hands `local` to the deferred list."""
    import cupy

    memory = cupy.cuda.UnownedMemory(local.data.ptr, local.nbytes, _Lease(local),
                                     local.device.id)  # fmt: skip
    return cupy.cuda.MemoryPointer(memory, 0)


def _reclaim() -> None:
    """Hand back to CuPy's pool the deferred blocks whose readers have finished (called by
    receives only, one at a time: the single consumer of the deque)."""
    for _ in range(len(_deferred)):
        item = _deferred.popleft()
        if item[1] is None or not item[1].done:
            _deferred.append(item)
        del item  # (a finished block goes back to the pool here)


def _close_kept(unused_since: float, most: int | None = None) -> None:
    """Close the kept handles last used before `unused_since` (monotonic seconds), and the
    oldest beyond `most` (kept in order of last use: the oldest first)."""
    while _opened:
        key, (remote, device, used) = next(iter(_opened.items()))
        if used >= unused_since and (most is None or len(_opened) <= most):
            return
        del _opened[key]
        # (an error: the producer's context is gone, it exited; nothing is left to unmap)
        with contextlib.suppress(Exception):
            import cupy

            with cupy.cuda.Device(device):  # where it was opened
                cupy.cuda.runtime.ipcCloseMemHandle(remote)


def _tidy() -> None:
    """Under _lock: hand back the blocks whose readers are done, close idle handles."""
    _reclaim()
    _close_kept(time.monotonic() - HANDLE_IDLE_S)


_tidying: list[threading.Thread] = []


def _start_tidying() -> None:
    """A thread that tidies every TIDY_S between receives (after a worker's last receive,
    parked blocks would otherwise stay out of CuPy's pool, and idle handles open); it skips
    a turn while a receive runs, so _reclaim keeps a single consumer."""
    if _tidying:
        return

    def tidy_now_and_then() -> None:
        while True:
            time.sleep(TIDY_S)
            if _lock.acquire(blocking=False):
                try:
                    _tidy()
                except Exception:  # e.g. interpreter shutdown: a receive tidies anyway
                    pass
                finally:
                    _lock.release()

    thread = threading.Thread(target=tidy_now_and_then, name="tunedgemm-ipc-tidy", daemon=True)
    _tidying.append(thread)
    thread.start()


def _close_all_kept() -> None:
    """Close every kept handle (at exit; not while a receive is copying through one)."""
    if _lock.acquire(timeout=5.0):  # (a receive stuck in its copy must not hang the exit)
        try:
            _close_kept(float("inf"))
        finally:
            _lock.release()


atexit.register(_close_all_kept)


@functools.lru_cache(maxsize=1)
def _visible_gpus() -> frozenset[str | None]:
    import cupy

    return frozenset(gpu_identity(i) for i in range(cupy.cuda.runtime.getDeviceCount()))


# distributed's serialisation --------------------------------------------------------------


def _dumps(block: SharedBlock, context: dict[str, Any] | None = None) -> tuple[dict, list]:
    """A handle for a comm between two processes of this host; the bytes otherwise (a
    spill to disk has no recipient; a peer on another host could not open a handle)."""
    if context and _same_host(context):
        return {"ipc": True}, [pickle.dumps(block, protocol=5)]
    return {"ipc": False}, [pickle.dumps(block.array, protocol=5)]


def _loads(header: dict[str, Any], frames: list[Any]) -> SharedBlock:
    value = pickle.loads(frames[0])
    return value if header["ipc"] else SharedBlock(value)


def _same_host(context: dict[str, Any]) -> bool:
    from distributed.comm import get_address_host

    try:
        ends = context["sender"]["address"], context["recipient"]["address"]
        return bool(get_address_host(ends[0]) == get_address_host(ends[1]))
    except (KeyError, TypeError, ValueError):
        return False


def _register() -> None:
    """Teach distributed (where installed) to send SharedBlocks by _dumps, and dask to
    size them as their block (a received one holds a real copy)."""
    try:
        from dask.sizeof import sizeof
        from distributed.protocol import dask_deserialize, dask_serialize
    except ImportError:
        return
    dask_serialize.register(SharedBlock)(_dumps)
    dask_deserialize.register(SharedBlock)(_loads)
    sizeof.register(SharedBlock)(lambda block: sizeof(block.array))


_register()
