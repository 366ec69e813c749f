"""One BLAS call for a host gemm whose operands BLAS reads as they lie: SciPy's sgemm/dgemm.

SciPy computes alpha * op(a) @ op(b) + beta * c in one call of its BLAS, beta fused and c
written once; NumPy's product followed by the scaling takes up to twice as long on small
operands. Where SciPy is installed (it is optional), every host route calls this module, so
that a call gives the same bits whichever route serves it, and SciPy's: the C extension
(tunedgemm._short_route) takes scipy.linalg.cython_blas's function pointers (looked up when
first needed: importing scipy.linalg takes 0.4 s) and calls BLAS itself (giving up the GIL on
long calls); without the extension, scipy.linalg.blas's wrappers of the same routines serve.
Without SciPy, `gemm_into` does nothing and the callers compute with NumPy, as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# gemm_into(alpha, a, b, beta, out, trans_a, trans_b) -> bool; None: no BLAS. [] until looked up.
GemmInto = Callable[[float, np.ndarray, np.ndarray, float, np.ndarray, int, int], bool]
_found: list[GemmInto | None] = []
_INT_LIMIT = 2**31  # BLAS's dimensions are Fortran ints (SciPy's LP64 BLAS)


def _native() -> Any:
    try:
        from . import _short_route
    except ImportError:  # not built: the wrappers serve
        return None
    return _short_route


def _look_up(scipy_wanted: bool = True) -> GemmInto | None:
    """The BLAS gemm_into: the C extension's where it is built and takes SciPy's pointers,
    else SciPy's wrappers; None without SciPy (or where the extension refuses the pointers:
    then no route uses BLAS, so the bits stay the same on every route)."""
    native = _native()
    try:
        if not scipy_wanted:
            raise ImportError("SciPy left out")
        from scipy.linalg import blas, cython_blas
    except ImportError:
        if native is not None:
            native.set_blas(None, None)
        return None
    if native is not None:
        capsules = cython_blas.__pyx_capi__
        taken = native.set_blas(capsules["sgemm"], capsules["dgemm"])
        return native.gemm_into if taken else None
    return _through_wrappers({np.dtype(np.float32): blas.sgemm, np.dtype(np.float64): blas.dgemm})


def routine() -> GemmInto | None:
    """The BLAS gemm_into, looked up on first use; None without SciPy."""
    if not _found:
        _found.append(_look_up())
    return _found[0]


def use_scipy(wanted: bool) -> None:
    """Look SciPy's BLAS up again (False: act as if SciPy were missing; for tests)."""
    _found[:] = [_look_up(wanted)]


def gemm_into(alpha: float, a: np.ndarray, b: np.ndarray, beta: float, out: np.ndarray,
              trans_a: int, trans_b: int) -> bool:  # fmt: skip
    """out = alpha op(a) op(b) + beta out by one BLAS call (beta == 0 does not read out) where
    SciPy is installed and BLAS takes the operands as they lie: a, b Fortran- or C-ordered,
    out Fortran- or C-ordered, aligned, of one float dtype, alpha != 0, every dimension > 0.
    Returns False, with nothing done, otherwise."""
    found = _found[0] if _found else routine()
    return found is not None and found(alpha, a, b, beta, out, trans_a, trans_b)


def _operand(x: np.ndarray, trans: int) -> tuple[np.ndarray, int] | None:
    """x as a Fortran-ordered matrix and trans flag that BLAS reads without a copy (a
    C-ordered x is the transpose of a Fortran-ordered one); the C route's as_blas_operand."""
    flags = x.flags
    if not flags.aligned:
        return None
    if flags.f_contiguous:
        return x, 1 if trans else 0
    if flags.c_contiguous:
        return x.T, 0 if trans else 1
    return None


def _through_wrappers(routines: dict[np.dtype, Any]) -> GemmInto:
    """gemm_into by scipy.linalg.blas's wrappers, making the C extension's choices."""

    def gemm_into(alpha: float, a: np.ndarray, b: np.ndarray, beta: float, out: np.ndarray,
                  trans_a: int, trans_b: int) -> bool:  # fmt: skip
        dt = out.dtype
        gemm = routines.get(dt) if dt.isnative else None
        if gemm is None or a.dtype != dt or b.dtype != dt or not dt.isnative:
            return False
        if a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
            return False
        m, n = out.shape
        k = a.shape[0 if trans_a else 1]
        shapes = (a.shape[::-1] if trans_a else a.shape, b.shape[::-1] if trans_b else b.shape)
        if shapes != ((m, k), (k, n)) or not 0 < max(m, n, k) < _INT_LIMIT or min(m, n, k) < 1:
            return False
        if not (out.flags.aligned and out.flags.writeable) or alpha == 0:
            return False
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            return False  # BLAS must not write what it reads: the NumPy route copies
        if dt.itemsize == 4 and np.float32(alpha) == 0:
            return False
        left, right = _operand(a, trans_a), _operand(b, trans_b)
        if left is None or right is None:
            return False
        if out.flags.f_contiguous:
            target = out
        elif out.flags.c_contiguous:  # out^T = op(b)^T op(a)^T
            target = out.T
            left, right = (right[0], 1 - right[1]), (left[0], 1 - left[1])
        else:
            return False
        written = gemm(alpha, left[0], right[0], beta, target, trans_a=left[1],
                       trans_b=right[1], overwrite_c=1)  # fmt: skip
        if written is not target:  # (a copy the wrapper made: not expected, but kept right)
            target[...] = written
        return True

    return gemm_into
