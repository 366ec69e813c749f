"""np.matmul semantics (1-D promotion, broadcast batches) on top of the 2-D GEMM problem."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from . import backend, numpy_backend
from ._args import GEMM_DTYPES, GemmProblem, is_device_array, normalise


def matmul(a: Any, b: Any, out: Any = None, stream: Any = None) -> Any:
    if is_device_array(a) or is_device_array(b) or is_device_array(out):
        return _device_matmul(a, b, out, stream)
    if a is None or b is None:
        raise TypeError("matmul operands must be arrays, got None")
    if _subclass(a) or _subclass(b) or _subclass(out):
        # np.matrix, masked arrays, units...: their own __array_ufunc__ / __array_wrap__ decide
        # what np.matmul returns (np.matrix for np.matrix); NumPy computes them.
        return np.matmul(a, b, out=out)
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension (scalars: use *)")
    dtype = np.result_type(a, b)
    if dtype not in GEMM_DTYPES:
        return np.matmul(a, b, out=out)  # ints, complex, float16...: NumPy's exact result
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    kb, n = b2.shape[-2:]
    if k != kb:
        raise ValueError(
            f"matmul: a has core shape {a.shape[-2:]} and b {b.shape[-2:]}; "
            f"their inner dimensions ({k} and {kb}) differ"
        )
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of a {a.shape} and b {b.shape} do not broadcast"
        ) from None
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a NumPy array, got {type(out).__name__}")
        if out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, expected {shape}")
        if not np.can_cast(dtype, out.dtype, casting="same_kind"):
            raise TypeError(f"out has dtype {out.dtype}; cannot cast the {dtype} result to it")
    # Each product of the batch is m x n x k: small ones are faster on NumPy (the crossover).
    if backend.for_call(False, (m, n, k), dtype) == "numpy":
        if out is None and a.ndim == 2 and b.ndim == 2:
            return numpy_backend.product(a, b)  # the short route's bits (see there)
        return np.matmul(a, b, out=out)

    from . import gpu_backend, pinned

    # In pinned memory where there is some to spare, so that each product comes straight down.
    result = pinned.result_array((*batch, m, n), dtype, "C")
    if result is None:
        result = np.empty((*batch, m, n), dtype=dtype)
    a_b = np.broadcast_to(a2, (*batch, m, k))
    b_b = np.broadcast_to(b2, (*batch, k, n))
    for index in itertools.product(*(range(d) for d in batch)):
        piece = result[index]
        problem = GemmProblem(
            1.0,
            a_b[index].astype(dtype, copy=False),
            b_b[index].astype(dtype, copy=False),
            0.0,
            piece,
            piece,
        )
        gpu_backend.gemm_into(problem)
    result = result.reshape(shape)
    if out is None:
        return result
    np.copyto(out, result, casting="same_kind")
    return out


def _subclass(x: Any) -> bool:
    return isinstance(x, np.ndarray) and type(x) is not np.ndarray


def _device_matmul(a: Any, b: Any, out: Any, stream: Any) -> Any:
    """2-D device arrays (and device `out`): one GEMM on the GPU, result on the device."""
    from ._args import as_matrix, gemm_dtype

    ma, mb = as_matrix(a, "a"), as_matrix(b, "b")
    dtype = gemm_dtype(ma, mb)
    problem = normalise(1.0, a, b, 0.0, out, 0, 0, 1, dtype, result_order="C")
    if out is not None and problem.result is not out:
        raise TypeError(f"out must be a writeable {dtype} array of shape {problem.shape[:2]}")
    from .api import run

    return run(problem, stream)
