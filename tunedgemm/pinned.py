"""Reusable page-locked (pinned) host buffers: staging for transfers, and new host results.

Copies from pinned memory run at about 50 GB/s on the H100 machine against about 9 GB/s
from ordinary (pageable) memory, but pinning is slow (milliseconds per hundred MB), so
buffers are kept and reused across calls, in power-of-two size classes, up to a cap.

A new host result can live in a pooled buffer too (`result_array`): the GPU then writes
the product straight into the array the caller gets, with no copy out and none of the page
faults of first touching a fresh array. Its buffer goes back to the pool when the last
view of the array is gone.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from typing import Any, Literal

import numpy as np

from . import settings

MIN_CLASS = 1 << 16  # 64 KiB: smaller buffers are not worth pooling separately


def _pool_cap() -> int:
    """Pinned memory kept for reuse: an eighth of the host's RAM, within 2-16 GiB. Pinning runs
    at about 0.85 GB/s on the H100 machines (a new 2 GiB result took 2.4 s per call when a
    4 GiB cap could not keep it, 2026-11-25), six times slower than writing ordinary memory,
    so a buffer the pool cannot keep costs far more than it saves."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: assume a small machine
        ram = 16 << 30
    return min(16 << 30, max(2 << 30, ram // 8))


MAX_POOLED_BYTES = _pool_cap()  # pinned memory kept for reuse; more is freed on return
# Pinned memory that callers' results may hold at once: beyond it new results are ordinary
# arrays (and the product is copied out), so keeping many results cannot pin the host's RAM.
MAX_RESULT_BYTES = 4 << 30
PINNED_RESULTS_ENV = "TUNEDGEMM_PINNED_RESULTS"  # 0: new host results are ordinary arrays

# Reentrant: a result's buffer is given back from its lease's __del__, which may run in the
# middle of take or give when a garbage collection starts there.
_lock = threading.RLock()
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

    # Always in the process's own context, also in a thread bound to another GPU: the pool
    # serves every thread, and a buffer can be freed only where its context is current.
    # Portable: pinned for every GPU's context, not just the one that allocated it.
    with cuda.own_context():
        return drv.pagelocked_empty(size, np.uint8, mem_flags=drv.host_alloc_flags.PORTABLE)


def give(buffer: np.ndarray) -> None:
    """Return a buffer from `take` for reuse (or free it when the pool is full)."""
    global _pooled_bytes
    size = buffer.nbytes
    with _lock:
        if _pooled_bytes + size <= MAX_POOLED_BYTES:
            _free.setdefault(size, []).append(buffer)
            _pooled_bytes += size
            return
    _free_now(buffer)


def _free_now(buffer: np.ndarray) -> None:
    """Unpin buffer in its context, whatever thread this is (see cuda.current_in_this_thread)."""
    from . import cuda

    allocation: Any = buffer.base  # PyCUDA's pinned allocation
    with cuda.own_context():
        allocation.free()


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


# Results ---------------------------------------------------------------------------------

_leased_bytes = 0


class _Lease:
    """Marks the ctypes arrays that results lie in (see _lease_type)."""

    buffer: np.ndarray


_lease_types: dict[int, Any] = {}


def _give_back(lease: Any) -> None:
    """A lease's __del__: its array and every view of it are gone."""
    global _leased_bytes
    try:
        with _lock:
            _leased_bytes -= len(lease)
        give(lease.buffer)
    except Exception:  # at interpreter shutdown the module may be half gone; nothing to save
        pass


def _lease_type(nbytes: int) -> Any:
    """A ctypes byte array type of nbytes whose instances give their buffer back on deletion.

    NumPy keeps the object an array was made on as the base of the array and of all its
    views, so the buffer returns only when no view of the result is left."""
    found = _lease_types.get(nbytes)
    if found is None:
        found = type("PinnedResult", (ctypes.c_char * nbytes, _Lease), {"__del__": _give_back})
        _lease_types[nbytes] = found
    return found


def result_array(shape: tuple[int, ...], dtype: Any, order: Literal["C", "F"]
                 ) -> np.ndarray | None:  # fmt: skip
    """A new array in a pooled pinned buffer, or None when results already hold
    MAX_RESULT_BYTES, no pinned memory is to be had, or TUNEDGEMM_PINNED_RESULTS=0. Find
    its buffer with `lease_of`."""
    global _leased_bytes
    if not settings.get(PINNED_RESULTS_ENV):
        return None
    dtype = np.dtype(dtype)
    nbytes = max(1, math.prod(shape) * dtype.itemsize)
    size = _size_class(nbytes)
    with _lock:
        if _leased_bytes + size > MAX_RESULT_BYTES:
            return None
        _leased_bytes += size
    try:
        buffer = take(nbytes)
    except Exception:  # the driver could not pin more: an ordinary result will do
        with _lock:
            _leased_bytes -= size
        return None
    lease = _lease_type(size).from_address(buffer.ctypes.data)
    lease.buffer = buffer  # from_address alone would not keep the memory alive
    return np.ndarray(shape, dtype, buffer=lease, order=order)


def lease_of(arr: np.ndarray) -> Any:
    """The pinned buffer (a ctypes byte array) that a `result_array` array or view lies in,
    or None for any other array."""
    base: Any = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, _Lease) else None


def result_bytes() -> int:
    """Pinned memory that results hold now (size classes)."""
    return _leased_bytes
