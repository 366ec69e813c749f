"""The NumPy backend: the same results as the GPU path, computed on the host."""

from __future__ import annotations

import numpy as np

from ._args import GemmProblem


def gemm_into(problem: GemmProblem) -> None:
    """Write alpha * a @ b + beta * out into problem.out (host arrays only)."""
    a, b, out = problem.a, problem.b, problem.out
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and isinstance(out, np.ndarray)
    m, n, k = problem.shape
    if m == 0 or n == 0:
        return
    alpha, beta = out.dtype.type(problem.alpha), out.dtype.type(problem.beta)
    # BLAS semantics: with alpha == 0 (or k == 0) A and B are not read, and with
    # beta == 0 C is not read, so NaN or Inf there cannot reach the result.
    if problem.alpha == 0.0 or k == 0:
        if problem.beta == 0.0:
            out[...] = 0
        else:
            np.multiply(out, beta, out=out)
        return
    if problem.beta == 0.0:
        _matmul_into(a, b, out)
        if problem.alpha != 1.0:
            np.multiply(out, alpha, out=out)
        return
    product = np.matmul(a, b)
    product *= alpha
    np.multiply(out, beta, out=out)
    out += product


def _matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b with BLAS writing straight into out: for a Fortran-ordered out (sgemm's
    default) through out.T = b.T @ a.T, which spares a copy of the whole product."""
    if out.flags.f_contiguous and not out.flags.c_contiguous:
        np.matmul(b.T, a.T, out=out.T)
    else:
        np.matmul(a, b, out=out)
