"""The CUDA session: whether a GPU is usable (and why not), its primary context, memory pool."""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

_pool_lock = threading.Lock()


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
        import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
    except Exception as exc:
        return False, f"CUDA initialisation failed ({type(exc).__name__}: {exc})"
    dev = device()
    return True, f"{dev.name()} (sm_{''.join(map(str, dev.compute_capability()))})"


def device() -> Any:
    import pycuda.autoprimaryctx

    return pycuda.autoprimaryctx.device


@functools.lru_cache(maxsize=1)
def device_name() -> str:
    """The GPU's name, asked of the driver once (one device per process)."""
    return str(device().name())


def context() -> Any:
    """The device's primary context (shared with CuPy and PyTorch), current in this thread."""
    import pycuda.autoprimaryctx

    ctx = pycuda.autoprimaryctx.context
    ensure_current(ctx)
    return ctx


_thread = threading.local()


def ensure_current(ctx: Any) -> None:
    """Make ctx current in the calling thread: autoprimaryctx pushes it only in the thread that
    imported it, and every other thread starts with no context."""
    if getattr(_thread, "pushed", None) is ctx:
        return
    import pycuda.driver as drv

    try:
        current = drv.Context.get_current()
    except drv.Error:
        current = None
    if current is None or current.handle != ctx.handle:
        ctx.push()
    _thread.pushed = ctx


def arch() -> str:
    major, minor = device().compute_capability()
    return f"sm_{major}{minor}"


@functools.lru_cache(maxsize=1)
def _pool() -> Any:
    from pycuda.tools import DeviceMemoryPool

    return DeviceMemoryPool()


def allocator() -> Any:
    """Allocation function drawing on one memory pool, so repeated calls skip cudaMalloc."""
    return allocate


def allocate(nbytes: int) -> Any:
    """Device memory from the pool; one lock, since calls may come from several threads."""
    with _pool_lock:
        return _pool().allocate(max(int(nbytes), 1))


def free_bytes(release_pool: bool = False) -> int:
    """Device memory free now; with release_pool, after the pool frees what it holds for reuse
    (which makes the next allocations slower, so only when memory is short)."""
    import pycuda.driver as drv

    context()
    if release_pool:
        with _pool_lock:
            _pool().free_held()
    return int(drv.mem_get_info()[0])
