"""tunedgemm: drop-in sgemm/dgemm/matmul for NumPy code, on tuned CUDA kernels on a GPU."""

from __future__ import annotations

from .api import dgemm, gemm, matmul, sgemm
from .info import info
from .selection import explain

__version__ = "0.1.0"
__all__ = ["__version__", "dgemm", "explain", "gemm", "info", "matmul", "sgemm"]
