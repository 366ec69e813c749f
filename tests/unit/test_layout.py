"""Mapping strided operands onto BLAS column-major form."""

from __future__ import annotations

import numpy as np
import pytest

from tunedgemm._layout import DeviceMatrix, blas_form, ld_layout


def strides_of(x: np.ndarray) -> tuple[int, int]:
    return tuple(s // x.itemsize for s in x.strides)  # type: ignore[return-value]


@pytest.mark.parametrize("order,expected", [("F", (False, 7)), ("C", (True, 5))])
def test_contiguous(order, expected):
    x = np.empty((7, 5), order=order)
    assert ld_layout(x.shape, strides_of(x)) == expected


def test_views_keep_leading_dimension():
    x = np.empty((10, 12), order="F")[2:9, 3:8]
    assert ld_layout(x.shape, strides_of(x)) == (False, 10)
    y = np.empty((10, 12))[2:9, 3:8]
    assert ld_layout(y.shape, strides_of(y)) == (True, 12)


@pytest.mark.parametrize("view", [np.s_[::2, ::2], np.s_[::-1, :], np.s_[:, ::-1]])
def test_no_unit_stride_needs_copy(view):
    x = np.empty((8, 8))[view]
    assert ld_layout(x.shape, strides_of(x)) is None


def test_degenerate_dimensions_get_legal_ld():
    assert ld_layout((1, 5), (99, 3)) == (False, 3)
    assert ld_layout((6, 1), (1, 0)) == (False, 6)
    assert ld_layout((1, 1), (0, 0)) == (False, 1)
    assert ld_layout((6, 1), (2, 1)) == (True, 2)
    assert ld_layout((3, 4), (0, 1)) is None  # broadcast rows
    assert ld_layout((5, 0), (0, 1)) == (False, 5)  # empty: any layout will do


def test_row_major_output_solves_the_transposed_problem():
    dt = np.dtype(np.float32)
    a = DeviceMatrix(1000, (6, 4), (1, 6), dt)  # column-major m x k
    b = DeviceMatrix(2000, (4, 5), (5, 1), dt)  # row-major k x n
    c = DeviceMatrix(3000, (6, 5), (5, 1), dt)  # row-major m x n
    form = blas_form(a, b, c)
    # C^T (5 x 6) = B^T A^T: B^T is column-major (no transpose), A^T is A stored col-major.
    assert (form.m, form.n, form.k) == (5, 6, 4)
    assert (form.a, form.trans_a, form.lda) == (2000, False, 5)
    assert (form.b, form.trans_b, form.ldb) == (1000, True, 6)
    assert (form.c, form.ldc) == (3000, 5)


def test_alignment():
    dt = np.dtype(np.float32)
    a = DeviceMatrix(4096, (8, 8), (1, 8), dt)
    assert blas_form(a, a, a).aligned()
    odd = DeviceMatrix(4096, (7, 7), (1, 7), dt)
    assert not blas_form(odd, odd, odd).aligned()
    shifted = DeviceMatrix(4100, (8, 8), (1, 8), dt)
    assert not blas_form(shifted, a, a).aligned()
