"""Random GEMM operands on the device in a chosen layout: the tuner's fixture (demo, verify too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._layout import BlasForm, DeviceMatrix, blas_form
from ..gpu_backend import upload


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

        drv.memcpy_htod(self.form.c, np.full(self.form.ldc * self.form.n, np.nan, self.dtype))

    def set_c(self, values: np.ndarray) -> None:
        import pycuda.driver as drv

        whole = np.full((self.form.ldc, self.form.n), np.nan, self.dtype, order="F")
        whole[: self.form.m] = values
        drv.memcpy_htod(self.form.c, whole.ravel("K"))

    def c(self) -> np.ndarray:
        import pycuda.driver as drv

        whole = np.empty((self.form.ldc, self.form.n), dtype=self.dtype, order="F")
        drv.memcpy_dtoh(whole.ravel(order="K"), self.form.c)
        return whole[: self.form.m]


def make(
    m: int,
    n: int,
    k: int,
    dtype: Any,
    trans_a: bool = False,
    trans_b: bool = False,
    rng: np.random.Generator | None = None,
    padded: bool = False,
) -> DeviceProblem:
    """Fresh uniform(-1, 1) operands; A stored (k, m) when trans_a, B stored (n, k) when trans_b.

    With padded, every leading dimension is rounded up to 16 bytes, as the host pipeline
    lays out its tiles, so that the aligned (vectorised) kernel variants run."""
    rng = rng or np.random.default_rng()
    dtype = np.dtype(dtype)
    a = np.asfortranarray(rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(dtype))
    b = np.asfortranarray(rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(dtype))
    keep: list[Any] = []
    da, db = _column_major(a, keep, padded), _column_major(b, keep, padded)
    dc = _column_major(np.full((m, n), np.nan, dtype, order="F"), keep, padded)
    form = blas_form(da.T if trans_a else da, db.T if trans_b else db, dc)
    problem = DeviceProblem(a, b, trans_a, trans_b, form, dtype, keep)
    problem.poison_c()
    return problem


def _column_major(values: np.ndarray, keep: list[Any], padded: bool) -> DeviceMatrix:
    """values (Fortran order) on the device, its leading dimension padded to 16 bytes if asked."""
    if not padded:
        return upload(values, keep)
    from ..pipeline import padded as padded_ld

    rows, cols = values.shape
    whole = np.zeros((padded_ld(rows, values.itemsize), cols), values.dtype, order="F")
    whole[:rows] = values
    device = upload(whole, keep)
    return DeviceMatrix(device.ptr, (rows, cols), (1, whole.shape[0]), values.dtype, device.owner)
