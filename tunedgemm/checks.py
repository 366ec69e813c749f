"""Accuracy checks against a float64 reference, with a tolerance that grows with K."""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike


def float64_reference(
    alpha: float, a: np.ndarray, b: np.ndarray, beta: float, c: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(exact, scale): alpha a b + beta c in float64, and the elementwise magnitude
    |alpha| |a| |b| + |beta| |c| that rounding errors are proportional to."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    exact = (
        alpha * (a64 @ b64)
        if alpha != 0.0 and a64.shape[1]
        else np.zeros((a64.shape[0], b64.shape[1]))
    )
    scale = abs(alpha) * (np.abs(a64) @ np.abs(b64)) if a64.shape[1] else np.zeros_like(exact)
    if beta != 0.0 and c is not None:
        c64 = np.asarray(c, np.float64)
        exact = exact + beta * c64
        scale = scale + abs(beta) * np.abs(c64)
    return exact, scale


def tolerance(k: int, dtype: np.dtype, factor: float = 4.0) -> float:
    """Relative bound per element: factor * (sqrt(k) + 3) * machine epsilon of dtype.

    A dropped or repeated product term, a wrong index or a stale tile gives errors of
    order one term, far above this for the test sizes; reordered summation (tiling,
    split-K, FMA) stays well inside it."""
    return factor * (np.sqrt(max(k, 1)) + 3.0) * float(np.finfo(dtype).eps)


# The "tf32" precision mode (operands rounded to TF32, 10 explicit mantissa bits, to nearest):
# each product is off by at most 2^-10 of itself, so the elementwise scaled error is at most
# 2^-10 plus FP32 accumulation. With random signs the errors are random too: the relative
# Frobenius error of uniform(-1, 1) products is about sqrt(2/3) 2^-11 = 4e-4 at every k, and
# TF32_FROBENIUS is 2.5 times that (tests/unit/test_tf32_split.py models the arithmetic).
TF32_FROBENIUS = 1e-3


def tf32_tolerance(k: int) -> float:
    """Elementwise bound of the "tf32" mode: 2^-10 per product plus float32 accumulation."""
    return 2.0**-10 + tolerance(k, np.dtype(np.float32))


def scaled_error(out: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> float:
    """max |out - exact| / scale over all elements (NaN anywhere gives inf)."""
    out64 = np.asarray(out, np.float64)
    if out64.shape != exact.shape:
        raise ValueError(f"result shape {out64.shape} != reference shape {exact.shape}")
    if out64.size == 0:
        return 0.0
    if not np.all(np.isfinite(out64)):
        return float("inf")
    denom = np.maximum(scale, np.finfo(np.float64).tiny)
    return float(np.max(np.abs(out64 - exact) / denom))


def check(
    out: np.ndarray,
    alpha: float,
    a: np.ndarray,
    b: np.ndarray,
    beta: float,
    c: np.ndarray | None,
    dtype: DTypeLike,
) -> tuple[bool, float, float]:
    """(passed, error, tolerance) of out against the float64 reference."""
    exact, scale = float64_reference(alpha, a, b, beta, c)
    error = scaled_error(out, exact, scale)
    tol = tolerance(a.shape[1], np.dtype(dtype))
    return error <= tol, error, tol
