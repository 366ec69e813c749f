"""The short route of small host calls: NumPy's product, when the general path would end there.

A product below the CPU/GPU crossover takes NumPy microseconds, so the general path's argument
handling would double its time. Plain calls (NumPy operands of the routine's dtype, no c,
beta 0, int flags) that the backend choice sends to NumPy anyway are computed here with the
same operations the NumPy backend uses; every other call returns None and takes the general
path, which also gives every error message."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import backend
from ._args import GEMM_DTYPES


def product(alpha: Any, a: Any, b: Any, beta: Any, trans_a: Any, trans_b: Any,
            dtype: np.dtype | None) -> np.ndarray | None:  # fmt: skip
    """alpha * op(a) @ op(b) as a new Fortran-ordered array, or None for the general path.

    dtype None (gemm) takes the inputs' dtype when they share a GEMM dtype."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    dt = a.dtype
    if b.dtype is not dt or (dt is not dtype if dtype is not None else dt not in GEMM_DTYPES):
        return None
    if a.ndim != 2 or b.ndim != 2 or type(trans_a) is not int or type(trans_b) is not int:
        return None
    if type(alpha) not in (float, int) or type(beta) not in (float, int) or beta != 0:
        return None
    # alpha == 0 must not read A and B (BLAS): the general path handles it.
    if alpha == 0 or not (0 <= trans_a <= 2 and 0 <= trans_b <= 2):
        return None
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    m, k = op_a.shape
    n = op_b.shape[1]
    if op_b.shape[0] != k or not backend.quietly_numpy((m, n, k), dt):
        return None
    # (op_b^T op_a^T)^T: BLAS writes the product straight into a Fortran-ordered result.
    result = np.matmul(op_b.T, op_a.T).T
    if alpha != 1:
        np.multiply(result, dt.type(alpha), out=result)
    return result
