"""tunedgemm: drop-in sgemm/dgemm/matmul for NumPy code, on tuned CUDA kernels on a GPU."""

from __future__ import annotations

from ._warnings import NumpyFallbackWarning, TableWarning
from .api import dgemm, gemm, matmul, sgemm
from .info import info
from .plans import Gemm, plan
from .precision import get_precision, precision, set_precision
from .selection import explain

__version__ = "0.1.0"

# help() and repr name the public module, not the one each routine is written in (they
# pickle by this name too: tunedgemm.sgemm is the same object).
for _routine in (sgemm, dgemm, gemm, matmul, explain, info, plan, set_precision, get_precision):
    _routine.__module__ = __name__
del _routine
__all__ = [
    "Gemm", "NumpyFallbackWarning", "TableWarning", "__version__", "dgemm", "explain", "gemm",
    "get_precision", "info", "matmul", "plan", "precision", "set_precision", "sgemm",
]
