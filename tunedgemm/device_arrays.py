"""New device arrays of the caller's kind (PyCUDA GPUArray, CuPy, PyTorch) for results."""

from __future__ import annotations

from typing import Any

import numpy as np


def empty_like_kind(like: Any, shape: tuple[int, int], dtype: np.dtype, order: str) -> Any:
    """An uninitialised (rows, cols) device array of the same library as `like`."""
    module = type(like).__module__.split(".")[0]
    if module == "cupy":
        import cupy

        return cupy.empty(shape, dtype=dtype, order=order)
    if module == "torch":
        import torch

        torch_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}
        strides = (1, shape[0]) if order == "F" else (shape[1], 1)
        return torch.empty_strided(
            shape, strides, dtype=torch_dtype[np.dtype(dtype)], device=like.device
        )
    import pycuda.gpuarray as gpuarray

    # A plain allocation, not pool scratch: the caller owns it and may drop it in any thread.
    return gpuarray.empty(shape, dtype, order=order)
