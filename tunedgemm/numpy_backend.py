"""The NumPy backend: the same results as the GPU path, computed on the host."""

from __future__ import annotations

import numpy as np

from . import _host_blas
from ._args import GemmProblem

# np.dot reaches BLAS with less dispatch than np.matmul (0.3-0.5 us less on tiny operands),
# but from about 128^3 it ran 1.2-1.3x slower than np.matmul on the H100 machine's 16 cores
# (bench_host, 2026-11-23): products whose a.size * b.size (n^4 for squares) is below this
# take np.dot, larger ones np.matmul. The short routes (tunedgemm/_small_host.py and its C
# twin) choose the same way, so a call gives the same bits on every route.
DOT_LIMIT = 48**4


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b of 2-D arrays, as the short routes compute it (np.dot below DOT_LIMIT).

    np.dot and np.matmul differ in the last bit on some layouts (negatively strided vectors:
    np.dot copies them and calls BLAS, np.matmul loops over them itself), so every route
    makes this one choice, and a call gives the same bits whichever route serves it."""
    return (np.dot if a.size * b.size < DOT_LIMIT else np.matmul)(a, b)


def fortran_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b as a new Fortran-ordered array: op(b)^T op(a)^T, transposed back, so that BLAS
    writes straight into a Fortran-ordered result (as the short routes do)."""
    return product(b.T, a.T).T


def gemm_into(problem: GemmProblem) -> None:
    """Write alpha * a @ b + beta * out into problem.out (host arrays only).

    By one BLAS call where SciPy is installed and BLAS takes the arrays as they lie
    (tunedgemm._host_blas: it raises nothing, as SciPy). Otherwise everything is computed into
    new arrays and copied into out at the end, so that an error on the way (a
    FloatingPointError under np.errstate(...="raise")) leaves out, which may be the caller's
    c, as it was. alpha and beta are already in the dtype's precision."""
    a, b, out = problem.a, problem.b, problem.out
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and isinstance(out, np.ndarray)
    m, n, k = problem.shape
    if m == 0 or n == 0:
        return
    scalar = out.dtype.type
    # BLAS semantics: with alpha == 0 (or k == 0) A and B are not read, and with
    # beta == 0 C is not read, so NaN or Inf there cannot reach the result.
    if problem.alpha == 0.0 or k == 0:
        if problem.beta == 0.0:
            out[...] = 0
        else:
            _store(problem, np.multiply(out, scalar(problem.beta)))
        return
    if _host_blas.gemm_into(problem.alpha, a, b, problem.beta, out, 0, 0):
        return  # one BLAS call, as SciPy makes it and the short routes (same bits)
    result = fortran_product(a, b)
    if problem.alpha != 1.0:
        np.multiply(result, scalar(problem.alpha), out=result)
    if problem.beta != 0.0:
        result += np.multiply(out, scalar(problem.beta))
    elif problem.alpha < 0.0:
        # alpha * (+0) is -0; BLAS adds the scaled product to a zeroed C, giving +0 as SciPy
        # does. One more pass over the result, for negative alpha only.
        np.add(result, 0.0, out=result)
    _store(problem, result)


def _store(problem: GemmProblem, result: np.ndarray) -> None:
    """Put the finished result in problem.out: a new output of ours is replaced by it (no
    copy), anything else (the caller's c) gets it copied in."""
    out = problem.out
    assert isinstance(out, np.ndarray)
    if problem.new_host_out and problem.result is out and result.strides == out.strides:
        problem.out = problem.result = result
    else:
        out[...] = result
