"""tunedgemm: drop-in sgemm/dgemm/matmul for NumPy code, on tuned CUDA kernels on a GPU."""

from __future__ import annotations

from .api import dgemm, gemm, matmul, sgemm
from .info import info
from .plans import Gemm, plan
from .precision import get_precision, precision, set_precision
from .selection import explain

__version__ = "0.1.0"
__all__ = [
    "Gemm",
    "__version__",
    "dgemm",
    "explain",
    "gemm",
    "get_precision",
    "info",
    "matmul",
    "plan",
    "precision",
    "set_precision",
    "sgemm",
]
