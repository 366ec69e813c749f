"""The device-array libraries tunedgemm serves (CuPy, PyTorch, PyCUDA): how to read and make theirs.

Each library gets a `Kind`: a signature of an array (shape, strides, dtype, device: all a plan
depends on, cheap to read), its address, the stream its library queues work on now, and a
new array from the library's own allocator (CuPy's memory pool, PyTorch's caching allocator,
and for PyCUDA tunedgemm's pool, whose blocks go back when the array is dropped, in any
thread). A call never pays cudaMalloc or cudaFree, and never waits for the device.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .recycle import counts

_calls = itertools.count()


@dataclass(frozen=True)
class Kind:
    """How tunedgemm reads and makes one library's device arrays."""

    name: str
    signature: Callable[[Any], tuple[Any, ...]]
    ptr: Callable[[Any], int]
    stream: Callable[[Any], int]  # raw handle of the stream the library queues on now
    empty: Callable[[Any, tuple[int, ...], np.dtype, str], Any]  # (like, shape, dtype, order)
    # Counts that return to their first values once nothing but `box` holds box[0] and its
    # memory (tunedgemm/recycle.py): the array's references and weak references, and those of
    # whatever else could hold its memory without holding the array.
    holders: Callable[[list[Any]], tuple[int, ...]] = lambda box: (next(_calls),)  # never equal
    # maker(shape, dtype, order): make(like), the new results of one kind of call, where the
    # library has a cheaper way than `empty` once those are fixed (None: `empty` each time).
    # `like` is an operand of the call, of the result's dtype and device.
    maker: Callable[[tuple[int, ...], np.dtype, str], Callable[[Any], Any]] | None = None

    def result_maker(self, shape: tuple[int, ...], dtype: np.dtype,
                     order: str) -> Callable[[Any], Any]:  # fmt: skip
        """make(like): a new result of this shape, dtype and order, beside `like`."""
        if self.maker is not None:
            return self.maker(shape, dtype, order)
        empty = self.empty
        return lambda like: empty(like, shape, dtype, order)


def _cupy_kind() -> Kind:
    import cupy

    current = cupy.cuda.get_current_stream
    current_device = cupy.cuda.runtime.getDevice

    new = cupy.ndarray  # (cupy.empty wraps it: 4.3 against 3.5 us a call on the H100 host)

    def empty(like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str) -> Any:
        if current_device() == like.data.device_id:  # entering like.device costs microseconds
            return new(shape, dtype, order=order)
        with like.device:
            return new(shape, dtype, order=order)

    def holders(box: list[Any]) -> tuple[int, ...]:
        x = box[0]
        data = x.data  # views hold the array (base); a MemoryPointer or its memory may not
        return counts(x, data, data.mem)

    return Kind(
        "cupy",
        lambda x: (x.shape, x.strides, x.dtype, x.data.device_id),
        lambda x: x.data.ptr,
        lambda x: current().ptr,
        empty,
        holders,
    )


_TORCH_DTYPES: dict[Any, Any] = {}


def _torch_kind() -> Kind:
    import torch

    _TORCH_DTYPES.update({np.dtype(np.float32): torch.float32,
                          np.dtype(np.float64): torch.float64})  # fmt: skip
    raw_stream = torch._C._cuda_getCurrentRawStream
    empty_strided = torch.empty_strided
    devices: dict[int, Any] = {}  # (like.device makes a new torch.device on every read)

    def empty(like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str) -> Any:
        index = like.get_device()
        device = devices.get(index)
        if device is None:
            device = devices[index] = like.device
        return empty_strided(shape, _strides(shape, order), dtype=_TORCH_DTYPES[dtype],
                             device=device)  # fmt: skip

    storage_uses = getattr(torch._C, "_storage_Use_Count", None)

    def holders(box: list[Any]) -> tuple[int, ...]:
        # A view, or autograd saving the tensor for a backward pass, holds the C++ tensor or
        # its storage without holding the Python object: their use counts say so. PyTorch
        # keeps one Python object per storage while any is held, so holding that object
        # shows in its reference count, not in the storage's use count.
        x = box[0]
        if storage_uses is None:  # counts unknown: never equal to the first, never recycled
            return (next(_calls),)
        storage = x.untyped_storage()
        return (*counts(x, storage), x._use_count(), storage_uses(storage._cdata))

    def maker(shape: tuple[int, ...], dtype: np.dtype, order: str) -> Callable[[Any], Any]:
        # The operand's own dtype and device, read by PyTorch in C++: 3.7 us a result on the
        # H100 machine's host where `empty` (torch.empty_strided with dtype and device
        # arguments) took 4.8 (benchmarks/profile_torch_alloc.py, 2026-11-26 13:31 UTC).
        strides = _strides(shape, order)
        return lambda like: like.new_empty_strided(shape, strides)

    return Kind(
        "torch",
        lambda x: (x.shape, x.stride(), x.dtype, x.get_device()),  # CPU tensors: device -1
        lambda x: x.data_ptr(),
        lambda x: raw_stream(x.get_device()),
        empty,
        holders,
        maker,
    )


def _pycuda_kind() -> Kind:
    import pycuda.gpuarray as gpuarray

    from . import cuda

    templates: dict[tuple[Any, ...], dict[str, Any]] = {}
    new = object.__new__
    cls = gpuarray.GPUArray

    def empty(like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str) -> Any:
        # GPUArray's constructor asks the driver for launch limits on every call (about 20 us
        # on the H100 machine): the attributes of an array of this shape are made once and
        # copied; the memory comes from tunedgemm's pool, back when the array is dropped.
        key = (shape, dtype, order)
        template = templates.get(key)
        if template is None:
            made = cls(shape, dtype, allocator=cuda.allocate, order=order)
            template = templates[key] = dict(made.__dict__, gpudata=None)
        array = new(cls)
        array.__dict__.update(template)
        array.gpudata = cuda.allocate(template["nbytes"]) if template["nbytes"] else None
        return array

    def holders(box: list[Any]) -> tuple[int, ...]:
        x = box[0]
        return counts(x, x.gpudata)  # views hold the array (base); gpudata is its memory

    return Kind(
        "pycuda",
        lambda x: (x.shape, x.strides, x.dtype),
        lambda x: x.ptr,
        lambda x: 0,  # GPUArrays name no stream: the legacy default stream
        empty,
        holders,
    )


@functools.lru_cache(maxsize=1024)
def _strides(shape: tuple[int, ...], order: str) -> tuple[int, ...]:
    """Element strides of a dense array of this shape and order."""
    strides = []
    step = 1
    dims = range(len(shape)) if order == "F" else reversed(range(len(shape)))
    for i in dims:
        strides.append(step)
        step *= max(shape[i], 1)
    return tuple(strides) if order == "F" else tuple(reversed(strides))


_MAKERS = {"cupy": ("ndarray", _cupy_kind), "torch": ("Tensor", _torch_kind),
           "pycuda": ("GPUArray", _pycuda_kind)}  # fmt: skip
_kinds: dict[type, Kind | None] = {}


def kind_of(array: Any) -> Kind | None:
    """The Kind of a device array's exact type (None: served through the general path)."""
    cls = type(array)
    try:
        return _kinds[cls]
    except KeyError:
        pass
    found = None
    library = cls.__module__.split(".")[0]
    maker = _MAKERS.get(library)
    if maker is not None and cls.__name__ == maker[0] and library in sys.modules:
        try:
            found = maker[1]()
        except Exception:  # a library too old or too new for these accessors: general path
            found = None
    _kinds[cls] = found
    return found


def empty_like_kind(like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str) -> Any:
    """An uninitialised device array of the same library as `like`, from its allocator."""
    kind = kind_of(like)
    if kind is None:
        kind = _pycuda_kind()
    return kind.empty(like, tuple(int(d) for d in shape), np.dtype(dtype), order)
