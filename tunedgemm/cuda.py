"""The CUDA session: whether a GPU is usable (and why not), its primary context, memory pool.

The process works on one GPU (autoprimaryctx's device). The host pipeline's worker threads for
other GPUs (tunedgemm/pipeline.py) are bound to theirs with `bind`: in such a thread
`context`, `arch`, `sm_count`, `gpu_identity` and `allocate` serve the bound GPU (its primary
context and its own memory pool), so compiled kernels, plans and tables follow the device."""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def status() -> tuple[bool, str]:
    """(usable, reason): PyCUDA imports, a device exists, and its primary context opens."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False, "CUDA_VISIBLE_DEVICES is empty"
    try:
        import pycuda.driver as drv
    except Exception as exc:  # ImportError, or a broken install raising anything
        return False, f"PyCUDA is not importable ({type(exc).__name__}: {exc})"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return False, "no CUDA device found"
        _autoprimary()  # retains and pushes the primary context
    except Exception as exc:
        return False, f"CUDA initialisation failed ({type(exc).__name__}: {exc})"
    dev = device()
    return True, f"{dev.name()} (sm_{''.join(map(str, dev.compute_capability()))})"


def _hold_in_main_thread(ctx: Any) -> None:
    """At exit, where the main thread never used the GPU: push the context there, for
    autoprimaryctx's exit hook to pop, and for PyCUDA objects made in other threads to be freed
    (the dask benchmark's exit printed a failed pop and two clean-up warnings without it)."""
    if _thread.__dict__.get("pushed") is None:
        with contextlib.suppress(Exception):
            ctx.push()
            _thread.pushed = ctx


def device() -> Any:
    return _autoprimary().device


def _autoprimary() -> Any:
    """pycuda.autoprimaryctx, imported once for every module here: its import pushes the
    primary context in the importing thread only, which must pop it again if it ends before
    the process, or PyCUDA aborts the process (a precompile thread pool that asked for the
    GPU's architecture first did so, 2026-11-23)."""
    with _context_lock:
        if _context[0] is None:
            import pycuda.autoprimaryctx

            imported = pycuda.autoprimaryctx.context
            _thread.pushed = imported  # on PyCUDA's stack of this thread
            if threading.current_thread() is not threading.main_thread():
                _thread.pop_at_exit = _PopAtThreadExit(imported, _owned())
                # Exit hooks run last-in first-out: this one, before autoprimaryctx's pop.
                atexit.register(_hold_in_main_thread, imported)
            _context[0] = imported
    import pycuda.autoprimaryctx

    return pycuda.autoprimaryctx


@functools.lru_cache(maxsize=1)
def device_count() -> int:
    """GPUs this process sees (after CUDA_VISIBLE_DEVICES)."""
    import pycuda.driver as drv

    return int(drv.Device.count())


@functools.lru_cache(maxsize=1)
def ordinal() -> int:
    """The ordinal of the device in use, as CuPy and PyTorch number it."""
    import pycuda.driver as drv

    bus = device().pci_bus_id()
    return next((i for i in range(drv.Device.count()) if drv.Device(i).pci_bus_id() == bus), 0)


@functools.lru_cache(maxsize=1)
def device_name() -> str:
    """The GPU's name, asked of the driver once (one device per process)."""
    return str(device().name())


def current_ordinal() -> int:
    """The ordinal of the GPU this thread works for: its bound one, else the process's."""
    bound = _thread.__dict__.get("bound_ordinal")
    return ordinal() if bound is None else int(bound)


def sm_count() -> int:
    """Multiprocessors of the GPU this thread works for (asked of the driver once per GPU)."""
    return _sm_count_of(current_ordinal())


@functools.lru_cache(maxsize=64)
def _sm_count_of(index: int) -> int:
    import pycuda.driver as drv

    return int(drv.Device(index).get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT))


def gpu_identity() -> tuple[str, str]:
    """(name, compute capability "9.0") of the GPU this thread works for: the tuning table's
    key, so that each GPU of a mixed machine uses its own entries."""
    return _identity_of(current_ordinal())


@functools.lru_cache(maxsize=64)
def _identity_of(index: int) -> tuple[str, str]:
    import pycuda.driver as drv

    dev = drv.Device(index)
    return str(dev.name()), ".".join(map(str, dev.compute_capability()))


def context() -> Any:
    """The device's primary context (shared with CuPy and PyTorch), current in this thread
    (in a thread bound to another GPU, that GPU's primary context)."""
    ctx = _context[0]
    if ctx is None:
        _autoprimary()
        ctx = _context[0]
    if getattr(_thread, "pushed", None) is not ctx:
        bound = _thread.__dict__.get("bound")
        if bound is not None:
            return bound
        ensure_current(ctx)
    return ctx


_primaries: dict[int, Any] = {}  # ordinal -> its primary context, retained for the process
_primaries_lock = threading.Lock()


def primary_context(index: int) -> Any:
    """GPU `index`'s primary context (retained once, kept): the process's own for its GPU."""
    if index == ordinal():
        context()
        return _context[0]
    with _primaries_lock:
        ctx = _primaries.get(index)
        if ctx is None:
            import pycuda.driver as drv

            ctx = _primaries[index] = drv.Device(index).retain_primary_context()
            if len(_primaries) == 1:  # after PyCUDA's exit hook, so it runs before it
                atexit.register(_release_others)
        return ctx


@contextlib.contextmanager
def current_in_this_thread(ctx: Any) -> Any:
    """ctx current in this thread for the block. PyCUDA frees an object (stream, event,
    allocation, pinned buffer) only where the context it was made in is current, or in the
    thread that retained that context; elsewhere it warns and leaks the object (the two-H100
    run of 2026-11-25: every multi-GPU host call did so). So frees that may run anywhere go
    through this. ctx None (a context never retained, so no object of it exists): nothing
    to make current."""
    if ctx is None or getattr(_thread, "pushed", None) is ctx:
        yield ctx
        return
    import pycuda.driver as drv

    ctx.push()
    try:
        yield ctx
    finally:
        drv.Context.pop()


def own_context() -> Any:
    """`current_in_this_thread` for the process's own GPU's primary context."""
    context()
    return current_in_this_thread(_context[0])


def in_context_of(index: int) -> Any:
    """`current_in_this_thread` for another GPU's primary context, where this process has
    retained it (else nothing to make current: no object of that GPU exists)."""
    return current_in_this_thread(_primaries.get(index))


_releases: list[Callable[[int], None]] = []  # what to drop per other GPU before exit


def on_release(drop: Callable[[int], None]) -> None:
    """Run drop(index) at exit for every other GPU this process retained, with that GPU's
    context current: a module keeping plans of other GPUs (tunedgemm.plans) drops them there,
    before PyCUDA's own exit hook, so that their kernels and buffers are freed, not leaked with
    a warning."""
    _releases.append(drop)


def _release_others() -> None:
    for index in list(_primaries):
        with contextlib.suppress(Exception), in_context_of(index):
            for drop in _releases:
                drop(index)
            _pool_of(index).free_held()


def bind(index: int) -> None:
    """Make this thread work for GPU `index` until it ends: its primary context is pushed
    here (and popped as the thread ends). The process's own GPU needs no binding."""
    if index == ordinal():
        context()
        return
    if _thread.__dict__.get("pushed") is not None:
        raise RuntimeError("tunedgemm: a thread that has used a GPU cannot be bound to another")
    ctx = primary_context(index)
    ensure_current(ctx)
    _thread.bound, _thread.bound_ordinal = ctx, index


def free_bytes_of(index: int, release_pool: bool = False) -> int:
    """Device memory free now on GPU `index` (asked from any thread); see free_bytes."""
    if index == current_ordinal():
        return free_bytes(release_pool)
    import pycuda.driver as drv

    ctx = primary_context(index)
    ctx.push()
    try:
        if release_pool:
            _pool_of(index).free_held()
        return int(drv.mem_get_info()[0])
    finally:
        drv.Context.pop()


_context: list[Any] = [None]  # autoprimaryctx's context, looked up once (every call asks)
_context_lock = threading.Lock()


_thread = threading.local()


class _PopAtThreadExit:
    """Pops the context a thread pushed when that thread ends. PyCUDA keeps a context stack per
    thread and aborts the whole process when a thread ends with its stack not empty; the
    values of a threading.local are dropped in the ending thread itself, before that check.
    The thread's own CUDA objects (`per_thread`) are released first, while the context is
    still current: PyCUDA cannot free a stream after that, and warns."""

    __slots__ = ("ctx", "owned")

    def __init__(self, ctx: Any, owned: dict[str, Any]):
        self.ctx = ctx
        self.owned = owned

    def __del__(self) -> None:
        self.owned.clear()
        # try/except, not contextlib: at interpreter shutdown module globals may be None.
        try:
            import pycuda.driver as drv

            current = drv.Context.get_current()
            if current is not None and current.handle == self.ctx.handle:
                drv.Context.pop()
        except Exception:  # at interpreter shutdown, nothing to pop
            pass


def per_thread(name: str, make: Callable[[], T]) -> T:
    """This thread's own `name` (a stream, events), made by `make` on first use and released
    before the thread's context is popped as the thread ends."""
    owned = _owned()
    if name not in owned:
        owned[name] = make()
    return owned[name]


def _owned() -> dict[str, Any]:
    owned = getattr(_thread, "owned", None)
    if owned is None:
        owned = _thread.owned = {}
    return owned


def ensure_current(ctx: Any) -> None:
    """Put ctx on PyCUDA's context stack of the calling thread, once: autoprimaryctx pushes it
    only in the thread that imported it. A context the driver already has current here (made
    so by CuPy or PyTorch through the runtime) is not on PyCUDA's stack, and PyCUDA's
    allocations refuse to run without one there (the dask GPU tests' worker threads failed
    so, 2026-11-23), so it is pushed all the same. A thread pops it as it ends; the main
    thread's is popped by autoprimaryctx's exit hook."""
    if getattr(_thread, "pushed", None) is ctx:
        return
    ctx.push()
    if threading.current_thread() is not threading.main_thread():
        _thread.pop_at_exit = _PopAtThreadExit(ctx, _owned())
    _thread.pushed = ctx


def arch() -> str:
    """The compute capability of the GPU this thread works for, as nvcc names it."""
    return _arch_of(current_ordinal())


@functools.lru_cache(maxsize=64)
def _arch_of(index: int) -> str:
    import pycuda.driver as drv

    major, minor = drv.Device(index).compute_capability()
    return f"sm_{major}{minor}"


class ScratchBuffer(int):
    """Device memory on loan from the pool; handed back when the last reference goes.

    The buffer is its address (an int, so that PyCUDA's C++ functions take it as a GPUArray's
    gpudata): tunedgemm's scratch, and the new GPUArray results of device calls."""

    allocation: Any
    pool: _ScratchPool
    size: int

    def __new__(cls, allocation: Any, size: int, pool: _ScratchPool) -> ScratchBuffer:
        buffer = super().__new__(cls, int(allocation))
        buffer.allocation, buffer.size, buffer.pool = allocation, size, pool
        return buffer

    @property
    def ptr(self) -> int:
        return int(self)

    def __del__(self) -> None:
        # try/except, not contextlib: at interpreter shutdown module globals may be None, and
        # the pool may be gone already; the driver frees the memory then.
        try:  # noqa: SIM105
            self.pool.give(self.allocation, self.size)
        except Exception:
            pass


class _ScratchPool:
    """Device allocations kept for reuse by size class. PyCUDA's DeviceMemoryPool is not safe
    across threads (its frees run in destructors, outside any lock of ours, and raced with
    allocations in the threaded test), so every change here happens under one lock. The lock
    is reentrant: a garbage collection inside `take` may hand a buffer back in the same thread."""

    def __init__(self, index: int | None = None) -> None:
        self.index = index  # the GPU whose memory this is (None: the process's own)
        self.lock = threading.RLock()
        self.held: dict[int, list[Any]] = {}
        self.exit_hook = False

    @staticmethod
    def size_class(nbytes: int) -> int:
        """nbytes rounded up to one of four steps per power of two (at most 25% unused)."""
        nbytes = max(int(nbytes), 256)
        step = 1 << max(nbytes.bit_length() - 3, 0)
        return -(-nbytes // step) * step

    def take(self, nbytes: int) -> ScratchBuffer:
        import pycuda.driver as drv

        if _pending:
            _reap()
        size = self.size_class(nbytes)
        with self.lock:
            if not self.exit_hook:
                # Registered after PyCUDA's own hook, so it runs first, while the context lives.
                atexit.register(self._free_at_exit)
                self.exit_hook = True
            held = self.held.get(size)
            if held:
                return ScratchBuffer(held.pop(), size, self)
        try:
            allocation = drv.mem_alloc(size)
        except drv.MemoryError:
            self.free_held()  # what the pool keeps may be what is missing
            allocation = drv.mem_alloc(size)
        return ScratchBuffer(allocation, size, self)

    def give(self, allocation: Any, size: int) -> None:
        with self.lock:
            self.held.setdefault(size, []).append(allocation)

    def _free_at_exit(self) -> None:
        if _context[0] is not None:  # (the main thread may not have used the GPU itself)
            _hold_in_main_thread(_context[0])
        self.free_held()

    def free_held(self) -> None:
        with self.lock:
            held, self.held = self.held, {}
        if not held:
            return
        with current_in_this_thread(_context[0] if self.index is None
                                    else _primaries.get(self.index)):  # fmt: skip
            for allocations in held.values():
                for allocation in allocations:
                    allocation.free()


_scratch = _ScratchPool()
# Scratch whose last users are queued on a stream: (event recorded after them, the buffers),
# oldest first. Dropped (back to the pool) once the event has passed: no host wait.
_pending: collections.deque[tuple[int, list[Any]]] = collections.deque()
_pending_lock = threading.Lock()


def release_after(buffers: list[Any], stream: Any) -> None:
    """Give these buffers back to the pool once the work queued so far on `stream` (None, a
    PyCUDA stream or a raw handle) has run; the host does not wait. Empties `buffers`."""
    from . import _driver

    event = _driver.record(_driver.stream_handle(stream))
    with _pending_lock:
        _pending.append((event, list(buffers)))
    buffers.clear()
    _reap()


def _reap() -> None:
    from . import _driver

    done = []
    with _pending_lock:
        while _pending and _driver.done(_pending[0][0]):
            done.append(_pending.popleft())
    for event, _held in done:
        _driver.events.give(event)  # the buffers go back to the pool as `done` is dropped


# The pools of GPUs other than the process's own, for threads bound to them (a block of one
# GPU's memory must never be handed to another's kernels).
_bound_pools: dict[int, _ScratchPool] = {}


def _pool_of(index: int) -> _ScratchPool:
    if index == ordinal():
        return _scratch
    with _primaries_lock:
        return _bound_pools.setdefault(index, _ScratchPool(index))


def allocate(nbytes: int) -> ScratchBuffer:
    """Scratch device memory from the pool of this thread's GPU (safe from any thread); back
    to it when dropped."""
    state = _thread.__dict__
    if state.get("pushed") is None:  # this thread's first CUDA work: the context, current here
        context()
    bound = state.get("bound_ordinal")
    return (_scratch if bound is None else _pool_of(bound)).take(nbytes)


def allocate_if_free(nbytes: int) -> ScratchBuffer | None:
    """allocate(nbytes), or None where the device has not that much free now (a composed
    runner then takes a path without its workspace)."""
    try:
        return allocate(nbytes)
    except Exception as exc:  # pycuda.driver.MemoryError; anything else is a fault
        if type(exc).__name__ != "MemoryError":
            raise
        return None


CU_STREAM_PER_THREAD = 2  # one handle that names each host thread's own default stream


class StreamWorkspaces:
    """Device workspace of one size for one owner (a plan, a cuBLASLt algorithm), one buffer
    per stream, made on first use: the launches queued on one stream run in order and may
    share a buffer, while work on two streams may run at once and never shares one.

    A buffer is retired when more than MAX_STREAMS streams have used the owner (short-lived
    threads with streams of their own: the oldest goes) and when the owner is dropped (a
    plan evicted from its cache, or dropped on a settings change). Its stream may have been
    destroyed by then (an event recorded on a destroyed stream's handle crashed the driver
    in the H100 run of 2026-11-23), so a retired buffer is not waited on through its stream:
    it is kept out of the pool until release_pool(), or until the retired buffers pass
    RETIRED_LIMIT bytes, when one context synchronise hands them all back. Never handed out
    while a kernel may still write it."""

    MAX_STREAMS = 8
    __slots__ = ("buffers", "nbytes")

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.buffers: dict[Any, ScratchBuffer] = {}

    def __call__(self, stream: int) -> int:
        """The address of the workspace for launches on the raw stream handle."""
        key: Any = stream
        if stream == CU_STREAM_PER_THREAD:
            key = (stream, threading.get_ident())
        buffer = self.buffers.get(key)
        if buffer is None:
            # setdefault: threads making the first one at once all get the one that stays.
            buffer = self.buffers.setdefault(key, allocate(self.nbytes))
            if len(self.buffers) > self.MAX_STREAMS:
                with contextlib.suppress(StopIteration, KeyError):
                    oldest = next(iter(self.buffers))
                    _retire(self.buffers.pop(oldest))
        return int(buffer)

    def __del__(self) -> None:
        try:  # (at interpreter shutdown the module's globals may be gone: the driver frees)
            for buffer in list(self.buffers.values()):
                _retire(buffer)
            self.buffers.clear()
        except Exception:
            pass


# Workspaces whose owner let them go: kept out of the pool until release_pool() (which the
# caller runs once the device is idle) or until they pass RETIRED_LIMIT bytes.
_retired: list[ScratchBuffer] = []
RETIRED_LIMIT = 256 << 20  # bytes; a synchronise per this much retired workspace


def _retire(buffer: ScratchBuffer) -> None:
    """Keep a workspace out of the pool until no kernel can still write it (its stream is not
    touched: that stream may be gone)."""
    with _pending_lock:
        _retired.append(buffer)
        if sum(b.size for b in _retired) <= RETIRED_LIMIT:
            return
        bound = _thread.__dict__.get("bound_ordinal")
        mine = _scratch if bound is None else _pool_of(bound)
        retired = [b for b in _retired if b.pool is mine]  # a synchronise covers one GPU
    try:  # (a finaliser may run in a thread with no context current)
        _driver_synchronize()
    except Exception:
        return  # kept until release_pool()
    with _pending_lock:
        for done in retired:
            with contextlib.suppress(ValueError):
                _retired.remove(done)  # (back to the pool as the last reference goes)


def _driver_synchronize() -> None:
    import pycuda.driver as drv

    drv.Context.synchronize()


def release_pool() -> int:
    """Free the device memory tunedgemm's pool keeps for reuse (new PyCUDA results, scratch,
    workspaces) once the work that used it has run; returns the bytes freed. Blocks still in
    use (arrays you hold) are not touched: they come back to the pool when dropped."""
    _reap()
    _retired.clear()  # (their pool takes them back as the last references go)
    with _scratch.lock:
        held = sum(size * len(blocks) for size, blocks in _scratch.held.items())
    _scratch.free_held()
    return held


def free_bytes(release_pool: bool = False) -> int:
    """Device memory free now; with release_pool, after the pool frees what it holds for reuse
    (which makes the next allocations slower, so only when memory is short)."""
    import pycuda.driver as drv

    context()
    if release_pool:
        _pool_of(current_ordinal()).free_held()
    return int(drv.mem_get_info()[0])
