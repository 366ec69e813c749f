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
    # From here rows, cols >= 1.
    if (s_row == 1 or rows == 1) and (cols == 1 or s_col >= rows):
        return False, s_col if cols > 1 else rows
    if (s_col == 1 or cols == 1) and (rows == 1 or s_row >= cols):
        return True, s_row if rows > 1 else cols
    return None


# slots=True: frozen dataclasses with slots are built in about half the time, and these two
# are built on every call on device arrays.
@dataclass(frozen=True, slots=True)
class DeviceMatrix:
    """A 2-D view of device memory: pointer, shape and strides in elements, dtype, owner, the
    stream its producer named (__cuda_array_interface__ v3; None: the default stream), and
    whether the producer marked it read-only."""

    ptr: int
    shape: tuple[int, int]
    strides: tuple[int, int]
    dtype: Any
    owner: Any = None
    stream: int | None = None
    readonly: bool = False

    @property
    def T(self) -> DeviceMatrix:  # noqa: N802 - mirrors ndarray.T
        return DeviceMatrix(self.ptr, self.shape[::-1], self.strides[::-1], self.dtype,
                            self.owner, self.stream, self.readonly)  # fmt: skip

    def layout(self) -> tuple[bool, int] | None:
        return ld_layout(self.shape, self.strides)


@dataclass(frozen=True, slots=True)
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
        size = self.itemsize  # written out: this runs on every launch of an own kernel
        return (
            (self.a | self.b | self.c) % 16 == 0  # the low 4 bits of every pointer are 0
            and (self.lda * size) % 16 == 0
            and (self.ldb * size) % 16 == 0
            and (self.ldc * size) % 16 == 0
        )


def blas_form(a: DeviceMatrix, b: DeviceMatrix, c: DeviceMatrix) -> BlasForm:
    """The column-major call for C = op(A) op(B), all three given as (m,k), (k,n), (m,n) views.

    A row-major C is handled as C^T = B^T A^T, so no operand is copied. Every view must
    have a BLAS layout (callers copy those that do not).
    """
    c_layout = ld_layout(c.shape, c.strides)
    if c_layout is None:
        raise ValueError("output has no unit-stride dimension")
    swap = c_layout[0]
    if swap:
        a, b = b, a  # C^T = B^T A^T: the operands swap, and each is read transposed
    (m, k), a_layout = _shape_and_layout(a, swap)
    (_, n), b_layout = _shape_and_layout(b, swap)
    _, c_layout = _shape_and_layout(c, swap)
    if a_layout is None or b_layout is None or c_layout is None or c_layout[0]:
        raise ValueError("operand has no unit-stride dimension")
    return BlasForm(a_layout[0], b_layout[0], m, n, k, a.ptr, a_layout[1], b.ptr, b_layout[1],
                    c.ptr, c_layout[1], c.dtype.itemsize)  # fmt: skip


def _shape_and_layout(
    mat: DeviceMatrix, transposed: bool
) -> tuple[tuple[int, int], tuple[bool, int] | None]:
    """The shape and BLAS layout of mat or of its transpose (without building mat.T: this
    runs on every call)."""
    if transposed:
        shape = (mat.shape[1], mat.shape[0])
        return shape, ld_layout(shape, (mat.strides[1], mat.strides[0]))
    return mat.shape, ld_layout(mat.shape, mat.strides)
