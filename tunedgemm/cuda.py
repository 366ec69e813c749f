"""The CUDA session: whether a GPU is usable (and why not), its primary context, memory pool."""

from __future__ import annotations

import functools
import os
from typing import Any


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


def context() -> Any:
    import pycuda.autoprimaryctx

    return pycuda.autoprimaryctx.context


def arch() -> str:
    major, minor = device().compute_capability()
    return f"sm_{major}{minor}"


@functools.lru_cache(maxsize=1)
def _pool() -> Any:
    from pycuda.tools import DeviceMemoryPool

    return DeviceMemoryPool()


def allocator() -> Any:
    """Allocation function drawing on one memory pool, so repeated calls skip cudaMalloc."""
    return _pool().allocate


def allocate(nbytes: int) -> Any:
    return _pool().allocate(max(int(nbytes), 1))
