"""Map strided 2-D operands onto BLAS column-major form (transpose flag + leading dimension)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def ld_layout(shape: tuple[int, int], strides: tuple[int, int]) -> tuple[bool, int] | None:
    """How BLAS can address a (rows, cols) matrix with these element strides.

    Returns (transposed, ld): (False, ld) when the matrix is column-major with leading
    dimension ld, (True, ld) when it is row-major (so BLAS sees its transpose), or None
    when neither dimension has unit stride (the operand needs a copy). A dimension of
    extent 1 may have any stride; ld is then chosen to satisfy BLAS's ld >= rows rule.
    """
    rows, cols = shape
    s_row, s_col = strides
    if rows == 0 or cols == 0:
        return False, max(1, rows)  # nothing is addressed
    if (s_row == 1 or rows <= 1) and (cols <= 1 or s_col >= max(1, rows)):
        return False, s_col if cols > 1 else max(1, rows)
    if (s_col == 1 or cols <= 1) and (rows <= 1 or s_row >= max(1, cols)):
        return True, s_row if rows > 1 else max(1, cols)
    return None


@dataclass(frozen=True)
class DeviceMatrix:
    """A 2-D view of device memory: pointer, shape and strides in elements, dtype, owner, and
    the stream its producer named (__cuda_array_interface__ v3; None: the default stream)."""

    ptr: int
    shape: tuple[int, int]
    strides: tuple[int, int]
    dtype: Any
    owner: Any = None
    stream: int | None = None

    @property
    def T(self) -> DeviceMatrix:  # noqa: N802 - mirrors ndarray.T
        return DeviceMatrix(self.ptr, self.shape[::-1], self.strides[::-1], self.dtype,
                            self.owner, self.stream)  # fmt: skip

    def layout(self) -> tuple[bool, int] | None:
        return ld_layout(self.shape, self.strides)


@dataclass(frozen=True)
class BlasForm:
    """One column-major GEMM call: C(m,n) = alpha op(A)(m,k) op(B)(k,n) + beta C."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    a: int
    lda: int
    b: int
    ldb: int
    c: int
    ldc: int
    itemsize: int

    def aligned(self) -> bool:
        """Whether 16-byte vector accesses are legal along every operand's unit stride."""
        pointers = (self.a, self.b, self.c)
        lds = (self.lda, self.ldb, self.ldc)
        return all(p % 16 == 0 for p in pointers) and all(
            (ld * self.itemsize) % 16 == 0 for ld in lds
        )


def blas_form(a: DeviceMatrix, b: DeviceMatrix, c: DeviceMatrix) -> BlasForm:
    """The column-major call for C = op(A) op(B), all three given as (m,k), (k,n), (m,n) views.

    A row-major C is handled as C^T = B^T A^T, so no operand is copied. Every view must
    have a BLAS layout (callers copy those that do not).
    """
    c_layout = c.layout()
    if c_layout is None:
        raise ValueError("output has no unit-stride dimension")
    if c_layout[0]:
        a, b, c = b.T, a.T, c.T
    a_layout, b_layout, c_layout = a.layout(), b.layout(), c.layout()
    if a_layout is None or b_layout is None or c_layout is None or c_layout[0]:
        raise ValueError("operand has no unit-stride dimension")
    m, k = a.shape
    n = b.shape[1]
    return BlasForm(
        trans_a=a_layout[0],
        trans_b=b_layout[0],
        m=m,
        n=n,
        k=k,
        a=a.ptr,
        lda=a_layout[1],
        b=b.ptr,
        ldb=b_layout[1],
        c=c.ptr,
        ldc=c_layout[1],
        itemsize=int(c.dtype.itemsize),
    )
