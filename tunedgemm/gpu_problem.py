"""Random GEMM operands on the device in a chosen layout, for demo, verify, benchmarks and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._layout import BlasForm, blas_form
from .gpu_backend import scratch, upload


@dataclass
class DeviceProblem:
    """Host copies of A, B (as stored), op flags, and a column-major device C, NaN-filled."""

    a: np.ndarray
    b: np.ndarray
    trans_a: bool
    trans_b: bool
    form: BlasForm
    dtype: np.dtype
    keep: list[Any] = field(default_factory=list)

    @property
    def op_a(self) -> np.ndarray:
        return self.a.T if self.trans_a else self.a

    @property
    def op_b(self) -> np.ndarray:
        return self.b.T if self.trans_b else self.b

    def poison_c(self) -> None:
        import pycuda.driver as drv

        m, n = self.form.m, self.form.n
        drv.memcpy_htod(self.form.c, np.full(m * n, np.nan, dtype=self.dtype))

    def set_c(self, values: np.ndarray) -> None:
        import pycuda.driver as drv

        drv.memcpy_htod(self.form.c, np.asfortranarray(values, dtype=self.dtype).ravel("K"))

    def c(self) -> np.ndarray:
        import pycuda.driver as drv

        out = np.empty((self.form.m, self.form.n), dtype=self.dtype, order="F")
        drv.memcpy_dtoh(out.ravel(order="K"), self.form.c)
        return out


def make(
    m: int,
    n: int,
    k: int,
    dtype: Any,
    trans_a: bool = False,
    trans_b: bool = False,
    rng: np.random.Generator | None = None,
) -> DeviceProblem:
    """Fresh uniform(-1, 1) operands; A stored (k, m) when trans_a, B stored (n, k) when trans_b."""
    rng = rng or np.random.default_rng()
    dtype = np.dtype(dtype)
    a = np.asfortranarray(rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(dtype))
    b = np.asfortranarray(rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(dtype))
    keep: list[Any] = []
    da, db = upload(a, keep), upload(b, keep)
    dc = scratch((m, n), dtype, keep)
    form = blas_form(da.T if trans_a else da, db.T if trans_b else db, dc)
    problem = DeviceProblem(a, b, trans_a, trans_b, form, dtype, keep)
    problem.poison_c()
    return problem
