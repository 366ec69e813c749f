"""The public routines: sgemm, dgemm, gemm and matmul; each chains route -> plan -> backend.

A call takes the first of three roads that serves it:
1. small plain host calls: NumPy's product, through the short route (tunedgemm/_small_host.py,
   in C where built) that costs less than NumPy's own dispatch;
2. device calls of a kind planned before: the plan's launch (tunedgemm/plans.py);
3. everything else: normalise (tunedgemm/_args.py), decide the backend, and run; a device
   call that can be planned leaves its plan for the next call of its kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _matmul, _small_host, backend, gpu_backend, numpy_backend, plans, streams
from ._args import GemmProblem, normalise
from ._layout import DeviceMatrix
from .precision import IEEE, resolve

__all__ = ["dgemm", "gemm", "matmul", "sgemm"]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_small, _routed = _small_host.product, _small_host.routed
_ndarray = np.ndarray


def run(problem: GemmProblem, stream: Any = None, precision: str = IEEE) -> Any:
    """Compute a normalised problem on the backend chosen for it and return its result."""
    on_device = problem.on_device or _has_device_operand(problem)
    if backend.for_call(on_device, problem.shape, problem.dtype) == "gpu":
        gpu_backend.gemm_into(problem, stream=stream, precision=precision)
    else:
        numpy_backend.gemm_into(problem)
    return problem.result


def _gemm(alpha: Any, a: Any, b: Any, beta: Any, c: Any, trans_a: Any, trans_b: Any,
          overwrite_c: Any, stream: Any, dtype: np.dtype | None,
          precision: Any) -> Any:  # fmt: skip
    """sgemm, dgemm or gemm (dtype None)."""
    if type(a) is _ndarray:
        if stream is None and precision is None and (c is None or type(c) is _ndarray):
            small = _small(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype)
            if small is not None:
                return small
        signature = None
    else:
        signature = plans.gemm_signature(dtype, alpha, a, b, beta, c, trans_a, trans_b,
                                         overwrite_c, precision)  # fmt: skip
        if signature is not None:
            plans.current()
            call = plans.call_plans.get(signature)
            if call is not None:
                return call.run(alpha, a, b, c, beta, stream)
    streams.handle_of(stream)  # checked before anything is touched
    problem = normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype)
    mode = resolve(precision, problem.dtype.name)
    if signature is not None:
        call = plans.plan_call(problem, mode, a, b, c)
        if call is not None:
            plans.call_plans.put(signature, call)
            return call.run(alpha, a, b, c, beta, stream)
    return run(problem, stream, mode)


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
    precision: str | None = None,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float32, as scipy.linalg.blas.sgemm.

    Inputs are cast to float32, and so are alpha and beta (1e-50 is 0: a and b are then not
    read). Trans flags are 0 (none), 1 or 2 (transpose). With beta == 0, c's values are
    ignored; with beta != 0 and no c, c is zeros. With overwrite_c (an int or bool) and a c
    that can hold the result as it is (a writeable float32 NumPy or device array of the
    result's shape whose elements do not overlap), the result is written into c and c is
    returned; otherwise (a list, a read-only or overlapping array, another dtype) a new
    Fortran-ordered array is returned and c is left as it was. docs/semantics.md lists
    every rule and where it differs from SciPy.

    Device arrays (PyCUDA, CuPy, PyTorch, any __cuda_array_interface__) are used in place
    and give a device result of the same library, queued on `stream` (a PyCUDA, CuPy or
    PyTorch stream, or a raw handle; default: the stream the operands' library queues on
    now, as CuPy's and PyTorch's own products do). Calls on host arrays are complete when
    they return.

    `precision`: "ieee" (float32 arithmetic), "tf32" or "3xtf32" (tensor cores; see
    tunedgemm.precision); default: the current setting (tunedgemm.set_precision).
    """
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, _F32, precision)


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
    precision: str | None = None,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float64, as scipy.linalg.blas.dgemm (see sgemm)."""
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, _F64, precision)


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
    precision: str | None = None,
) -> Any:
    """sgemm or dgemm, by the inputs' dtype: float64 if either is float64, else float32."""
    return _gemm(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, stream, None, precision)


@_routed
def matmul(a: Any, b: Any, out: Any = None, *, stream: Any = None,
           precision: str | None = None) -> Any:  # fmt: skip
    """np.matmul(a, b, out=out): 1-D operands promoted, batch dimensions broadcast.

    float32 and float64 products run on tunedgemm (other dtypes on NumPy, exactly as
    np.matmul). Device arrays give a C-ordered device result of their library, queued on
    `stream` as for sgemm. `precision` as for sgemm."""
    if stream is None and precision is None and type(a) is _ndarray:
        small = _small_host.small_matmul(a, b, out)
        if small is not None:
            return small
    elif type(a) is not _ndarray and out is None:
        signature = plans.matmul_signature(a, b, precision)
        if signature is not None:
            plans.current()
            call = plans.call_plans.get(signature)
            if call is not None:
                return call.run(1.0, a, b, None, 0.0, stream)
    streams.handle_of(stream)
    return _matmul.matmul(a, b, out, stream, precision)


def _has_device_operand(problem: GemmProblem) -> bool:
    return isinstance(problem.a, DeviceMatrix) or isinstance(problem.b, DeviceMatrix)
