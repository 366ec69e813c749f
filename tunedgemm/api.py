"""The public routines: sgemm, dgemm, gemm and matmul; each chains normalise -> backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _repeat, _small_host, backend, gpu_backend, numpy_backend, streams
from ._args import GemmProblem, as_flag, normalise
from ._layout import DeviceMatrix

__all__ = ["dgemm", "gemm", "matmul", "sgemm"]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
# Small plain host calls go straight to NumPy (tunedgemm/_small_host.py, where matmul is
# defined beside its route). Where the C extension is built, the same route runs in C in
# front of each routine (the decorator _routed), and the Python one sees only what it passes.
_small, _routed = _small_host.product, _small_host.routed
matmul = _small_host.matmul


def run(problem: GemmProblem, stream: Any = None) -> Any:
    """Compute a normalised problem on the backend chosen for it and return its result."""
    _compute(problem, stream)
    return problem.result


def _compute(problem: GemmProblem, stream: Any) -> gpu_backend.Launch | None:
    """Compute problem.out; returns the launch when the GPU ran it as one launch on the
    caller's memory (see gpu_backend.gemm_into)."""
    on_device = problem.on_device or _has_device_operand(problem)
    if backend.for_call(on_device, problem.shape, problem.dtype) == "gpu":
        return gpu_backend.gemm_into(problem, stream=stream)
    numpy_backend.gemm_into(problem)
    return None


def _gemm(alpha: Any, a: Any, b: Any, beta: Any, c: Any, trans_a: Any, trans_b: Any,
          overwrite_c: Any, stream: Any, dtype: np.dtype | None) -> Any:  # fmt: skip
    """sgemm, dgemm or gemm (dtype None). Two short routes: small plain host calls go straight
    to NumPy (_small), and device calls (in place, or into a new result) that repeat an
    earlier one repeat its launch (tunedgemm/_repeat.py)."""
    memo_key = None
    if stream is None:
        if c is None:
            if type(a) is np.ndarray:
                small = _small(alpha, a, b, beta, trans_a, trans_b, dtype)
                if small is not None:
                    return small
            else:
                memo_key = _repeat.key(alpha, a, b, beta, None, trans_a, trans_b, dtype)
        elif type(c) is not np.ndarray and as_flag(overwrite_c, "overwrite_c"):
            memo_key = _repeat.key(alpha, a, b, beta, c, trans_a, trans_b, dtype)
        if memo_key is not None:
            repeated = _repeat.run(memo_key, a)
            if repeated is not None:
                return c if c is not None else repeated
    streams.handle_of(stream)  # checked before anything is touched
    problem = normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype)
    launch = _compute(problem, stream)
    if memo_key is not None:
        if c is None:
            _repeat.record(memo_key, launch, problem.result)
        elif problem.result is c:
            _repeat.record(memo_key, launch)
    return problem.result


@_routed
def sgemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
    *,
    stream: Any = None,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float32, as scipy.linalg.blas.sgemm.

    Inputs are cast to float32, and so are alpha and beta (1e-50 is 0: a and b are then not
    read). Trans flags are 0 (none), 1 or 2 (transpose). With beta == 0, c's values are
    ignored; with beta != 0 and no c, c is zeros. With overwrite_c (an int or bool) and a c
    that can hold the result as it is (a writeable float32 NumPy or device array of the
    result's shape whose elements do not overlap), the result is written into c and c is
    returned; otherwise (a list, a read-only or overlapping array, another dtype) a new
    Fortran-ordered array is returned and c is left as it was. docs/semantics.md lists
    every rule and where it differs from SciPy. Device arrays (PyCUDA, CuPy, PyTorch, any
    __cuda_array_interface__) are used in place and give a device result, queued on
    `stream` (a PyCUDA, CuPy or PyTorch stream, or a raw handle; default: the legacy
    default stream) after the work queued there and on the streams the operands name.
    Calls on host arrays are complete when they return.
    """
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, _F32)


@_routed
def dgemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
    *,
    stream: Any = None,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float64, as scipy.linalg.blas.dgemm (see sgemm)."""
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, _F64)


@_routed
def gemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
    *,
    stream: Any = None,
) -> Any:
    """sgemm or dgemm, by the inputs' dtype: float64 if either is float64, else float32."""
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, None)


def general_matmul(a: Any, b: Any, out: Any, stream: Any) -> Any:
    """matmul past its short route: device arrays, batches, vectors, other dtypes, `out`."""
    from ._matmul import matmul as _matmul

    streams.handle_of(stream)
    return _matmul(a, b, out, stream)


def _has_device_operand(problem: GemmProblem) -> bool:
    return isinstance(problem.a, DeviceMatrix) or isinstance(problem.b, DeviceMatrix)
