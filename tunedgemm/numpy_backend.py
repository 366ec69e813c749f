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
    # BLAS semantics: with alpha == 0 (or k == 0) A and B are not read, and with
    # beta == 0 C is not read, so NaN or Inf there cannot reach the result.
    if problem.alpha == 0.0 or k == 0:
        if problem.beta == 0.0:
            out[...] = 0
        else:
            np.multiply(out, out.dtype.type(problem.beta), out=out)
        return
    product = np.matmul(a, b)
    product *= out.dtype.type(problem.alpha)
    if problem.beta == 0.0:
        np.copyto(out, product)
    else:
        np.multiply(out, out.dtype.type(problem.beta), out=out)
        out += product
