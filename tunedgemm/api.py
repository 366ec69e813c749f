"""The public routines: sgemm, dgemm, gemm and matmul; each chains normalise -> backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import backend
from ._args import GemmProblem, normalise

__all__ = ["dgemm", "gemm", "matmul", "sgemm"]


def run(problem: GemmProblem) -> Any:
    """Compute a normalised problem on the backend chosen for it and return its result."""
    if backend.for_call(problem.on_device or _has_device_operand(problem)) == "gpu":
        from . import gpu_backend

        gpu_backend.gemm_into(problem)
    else:
        from . import numpy_backend

        numpy_backend.gemm_into(problem)
    return problem.result


def sgemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float32, as scipy.linalg.blas.sgemm.

    Inputs are cast to float32; trans flags are 0 (none), 1 or 2 (transpose). With
    beta == 0, c's values are ignored. With overwrite_c and a float32 writeable c, the
    result is written into c and c is returned; otherwise a new Fortran-ordered array
    is returned. Device arrays (PyCUDA, CuPy, PyTorch, any __cuda_array_interface__)
    are used in place and give a device result.
    """
    return run(normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, np.float32))


def dgemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
) -> Any:
    """alpha * op(a) @ op(b) + beta * c in float64, as scipy.linalg.blas.dgemm (see sgemm)."""
    return run(normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, np.float64))


def gemm(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any = 0.0,
    c: Any = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
) -> Any:
    """sgemm or dgemm, by the inputs' dtype: float64 if either is float64, else float32."""
    return run(normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, None))


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """np.matmul semantics; float32/float64 products run on tunedgemm, other dtypes on NumPy."""
    from ._matmul import matmul as _matmul

    return _matmul(a, b, out)


def _has_device_operand(problem: GemmProblem) -> bool:
    from ._layout import DeviceMatrix

    return isinstance(problem.a, DeviceMatrix) or isinstance(problem.b, DeviceMatrix)
