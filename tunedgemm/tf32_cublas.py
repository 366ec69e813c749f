"""The "3xtf32" mode composed of cuBLAS's TF32 GEMM: a candidate that autotuning times.

cuBLAS's TF32 GEMM runs at about 400 TFLOP/s on the H100, against 58 for our own 3xtf32
kernels, but it accumulates inside the tensor cores, whose additions do not round to nearest:
its error grows with the length of the sum. So the big parts' product runs in k-chunks of
CHUNK, each chunk's sum added to C by the GEMM's float32 epilogue, which does round to
nearest. benchmarks/probe_3xtf32_cublas.py --errors (H100, 2026-11-23, m = n = 2048) measured
the error over cuBLAS SGEMM's, median / 99.9th percentile, with chunks of 256:

    k                       1024          4096          16384
    uniform(-1, 1)          1.50 / 0.72   0.77 / 0.37   0.37 / 0.21
    exponents 2^-20..2^20   2.71 / 1.27   1.41 / 0.69   0.72 / 0.40

(chunks of 512: 2.87 and 5.25 at k = 1024, 2.84 spread at 4096). SGEMM's own error grows with
k and the chunks' does not, so the runner competes only where k >= MIN_K, and where m and n
are at least MIN_MN (smaller products let cuBLAS SGEMM split k, which shrinks its error).
Speed there: 1.34x SGEMM at 4096^3 and 1.58x at 8192^3. One call is:

1. ``split_planes`` (kernels/tf32_split.cu) writes op(A) as [A_big | A_small] (m x 2k) and
   op(B) as [B_small; B_big] (2k x n), column-major, both parts rounded to TF32;
2. one TF32 GEMM over 2k, W = alpha (A_big B_small + A_small B_big): terms 2^-11 smaller,
   whose accumulation error does not show;
3. TF32 GEMMs of A_big B_big over k in chunks of CHUNK, W += alpha (each chunk's product);
4. ``finish``: C = W + beta C, and IEEE float32's answer where W is not finite (Inf, NaN,
   overflow), as the tensor-core families recompute such sums.

W is C itself when beta is 0, else a workspace. The planes and W come from the scratch pool
and go back once the stream has passed the call; where they do not fit, cuBLAS SGEMM runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _driver, compiler, cuda, reference
from ._layout import BlasForm

SOURCE = "tf32_split.cu"
CHUNK = 256  # k per TF32 GEMM of the big parts (see above)
MIN_K = 4096  # the accuracy bound holds from here (see above)
MIN_MN = 2048
TILE, ROWS = 32, 8  # the kernels' tile and block rows (TILE x ROWS threads)
GRID_Y_MAX = 65535
_FLOAT = 4


def candidate(key: Any) -> TF32x3OnCublas | None:
    """The composed runner for a plan's key, where it may compete: float32 in "3xtf32", one
    product, k and m, n long enough for its accuracy, cuBLAS loaded, grids within limits."""
    if key.dtype != "float32" or key.precision != "3xtf32" or key.batch != 1:
        return None
    if key.k < MIN_K or min(key.m, key.n) < MIN_MN or max(key.k, key.n) > TILE * GRID_Y_MAX:
        return None
    if not reference.status()[0]:
        return None
    return TF32x3OnCublas(key)


class TF32x3OnCublas:
    """run(a, b, c, alpha, beta, stream) of one column-major product, as a plan runs a
    cuBLASLt algorithm (is_cublas: autotuning times it on scratch memory)."""

    is_cublas = True
    __slots__ = ("finish", "key", "split")

    def __init__(self, key: Any) -> None:
        self.key = key
        block = (TILE, ROWS, 1)
        self.split = _driver.Launcher(compiler.raw_function(SOURCE, {}, "split_planes"),
                                      "iiPiiPiqq", block, 0)  # fmt: skip
        self.finish = _driver.Launcher(compiler.raw_function(SOURCE, {}, "finish"),
                                       "iiifPifPiPiiPii", block, 0)  # fmt: skip

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        key = self.key
        m, n, k = key.m, key.n, key.k
        in_place = beta == 0.0
        planes = 2 * (m * k + k * n)
        buffer = cuda.allocate_if_free(_FLOAT * (planes + (0 if in_place else m * n)))
        if buffer is None:  # the planes do not fit now
            self._sgemm(a, b, c, alpha, beta, stream)
            return
        try:
            a_cat = int(buffer)
            b_cat = a_cat + _FLOAT * 2 * m * k
            w, ldw = (c, key.ldc) if in_place else (b_cat + _FLOAT * 2 * k * n, m)
            # [A_big | A_small]: column-major m x 2k; [B_small; B_big]: column-major 2k x n
            self.split.launch((-(-m // TILE), -(-k // TILE), 1), stream,
                              (m, k, a, key.lda, int(key.trans_a), a_cat, m, 0, m * k))  # fmt: skip
            self.split.launch((-(-k // TILE), -(-n // TILE), 1), stream,
                              (k, n, b, key.ldb, int(key.trans_b), b_cat, 2 * k, k, 0))  # fmt: skip
            _tf32_gemm(m, n, 2 * k, a_cat, m, b_cat, 2 * k, w, ldw, alpha, 0.0, stream)
            for k0 in range(0, k, CHUNK):
                a_big, b_big = a_cat + _FLOAT * k0 * m, b_cat + _FLOAT * (k + k0)
                _tf32_gemm(m, n, min(CHUNK, k - k0), a_big, m, b_big, 2 * k, w, ldw, alpha,
                           1.0, stream)  # fmt: skip
            grid = (-(-m // TILE), min(-(-n // ROWS), GRID_Y_MAX), 1)
            self.finish.launch(grid, stream, (m, n, k, alpha, w, ldw, beta, c, key.ldc, a,
                                              key.lda, int(key.trans_a), b, key.ldb,
                                              int(key.trans_b)))  # fmt: skip
        finally:  # back to the pool once the stream has passed what was queued
            cuda.release_after([buffer], stream)

    def _sgemm(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        """cuBLAS SGEMM for a call whose planes find no device memory: at least as accurate,
        and it needs no workspace (warned once)."""
        from . import table

        key = self.key
        table.warn_once(f"3xtf32 on cuBLAS's TF32 GEMM needs {_FLOAT * 2 * (key.m + key.n)} "
                        "bytes per unit of k of device memory, which is short: cuBLAS SGEMM "
                        "ran instead")  # fmt: skip
        form = BlasForm(key.trans_a, key.trans_b, key.m, key.n, key.k, a, key.lda, b, key.ldb,
                        c, key.ldc, _FLOAT)  # fmt: skip
        reference.gemm(form, np.dtype(np.float32), alpha, beta, stream)

    def __str__(self) -> str:
        return f"cuBLAS TF32 x3 (big products in k-chunks of {CHUNK})"

    __repr__ = __str__


def _tf32_gemm(m: int, n: int, k: int, a: int, lda: int, b: int, ldb: int, c: int, ldc: int,
               alpha: float, beta: float, stream: int) -> None:  # fmt: skip
    form = BlasForm(False, False, m, n, k, a, lda, b, ldb, c, ldc, _FLOAT)
    reference._gemm_tf32(form, alpha, beta, stream)
