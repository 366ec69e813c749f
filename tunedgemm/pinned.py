"""Reusable page-locked (pinned) host buffers for staging transfers.

Copies from pinned memory run at about 50 GB/s on the H100 machine against about 9 GB/s
from ordinary (pageable) memory, but pinning is slow (milliseconds per hundred MB), so
buffers are kept and reused across calls, in power-of-two size classes, up to a cap.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

MIN_CLASS = 1 << 16  # 64 KiB: smaller buffers are not worth pooling separately
MAX_POOLED_BYTES = 4 << 30  # pinned memory kept for reuse; more is freed on return

_lock = threading.Lock()
_free: dict[int, list[np.ndarray]] = {}
_pooled_bytes = 0


def _size_class(nbytes: int) -> int:
    return max(MIN_CLASS, 1 << max(0, int(nbytes) - 1).bit_length())


def take(nbytes: int) -> np.ndarray:
    """A pinned uint8 buffer of at least nbytes (give it back with `give`)."""
    global _pooled_bytes
    size = _size_class(nbytes)
    with _lock:
        bucket = _free.get(size)
        if bucket:
            _pooled_bytes -= size
            return bucket.pop()
    import pycuda.driver as drv

    from . import cuda

    cuda.context()
    return drv.pagelocked_empty(size, np.uint8)


def give(buffer: np.ndarray) -> None:
    """Return a buffer from `take` for reuse (or free it when the pool is full)."""
    global _pooled_bytes
    size = buffer.nbytes
    with _lock:
        if _pooled_bytes + size <= MAX_POOLED_BYTES:
            _free.setdefault(size, []).append(buffer)
            _pooled_bytes += size


def view(buffer: np.ndarray, shape: tuple[int, int], ld: int, dtype: Any, order: str) -> Any:
    """A (rows, cols) array in buffer with leading dimension ld (column-major for order 'F',
    row-major for 'C'), so that a device copy of the whole block keeps ld."""
    rows, cols = shape
    dtype = np.dtype(dtype)
    if order == "F":
        whole = buffer[: ld * max(cols, 1) * dtype.itemsize].view(dtype)
        return whole.reshape((max(cols, 1), ld))[:cols, :rows].T
    whole = buffer[: ld * max(rows, 1) * dtype.itemsize].view(dtype)
    return whole.reshape((max(rows, 1), ld))[:rows, :cols]
