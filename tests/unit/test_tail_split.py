"""The last wave's split (tunedgemm/tail_split.py) on CPU: where it applies, and that its
three parts cover C once, with the right operands in every transpose pair (the parts'
products computed from flat column-major storage, addresses counted in elements)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tunedgemm import tail_split
from tunedgemm._layout import BlasForm
from tunedgemm.families import FAMILIES


def _form(m: int, n: int, k: int, ta: bool = False, tb: bool = False,
          pad: int = 0) -> BlasForm:  # fmt: skip
    lda = (k if ta else m) + pad
    ldb = (n if tb else k) + pad
    return BlasForm(ta, tb, m, n, k, 0, lda, 0, ldb, 0, m + pad, 1)


def test_the_8192_cube_splits_its_four_last_tiles_over_the_sms():
    r1, r2, t = tail_split.parts(_form(8192, 8192, 8192), (128, 128), 132)
    assert (r1[0].m, r1[0].n, r1[1]) == (8192, 8064, 1)
    assert (r2[0].m, r2[0].n, r2[1]) == (7680, 128, 1)
    assert (t[0].m, t[0].n, t[1]) == (512, 128, 33)  # 4 tiles x 33 slices: one wave
    assert (t[0].a, t[0].b, t[0].c) == (7680, 8064 * 8192, 8064 * 8192 + 7680)


@pytest.mark.parametrize("m,n,k,why", [
    (4096, 4096, 4096, "a last wave of 100 tiles: more than a block column's 32"),
    (8192, 8192, 2048, "k under MIN_K"),
    (5632, 1536, 8192, "44 x 12 = 528 tiles: four whole waves"),
    (4224, 4224, 8192, "33 x 33 = 1089 tiles: a last wave a quarter full"),
    (2048, 2176, 8192, "16 x 17 = 272 tiles: 2 waves, under MIN_WAVES"),
    (8192, 128, 8192, "one block column"),
])  # fmt: skip
def test_no_split_where_it_does_not_apply(m, n, k, why):
    assert tail_split.parts(_form(m, n, k), (128, 128), 132) is None, why


def _store(rng: np.random.Generator, rows: int, cols: int, ld: int) -> np.ndarray:
    """A flat column-major matrix with leading dimension ld (padding NaN: never read)."""
    whole = np.full((ld, cols), np.nan)
    whole[:rows] = rng.standard_normal((rows, cols))
    return whole.ravel(order="F")


def _view(flat: np.ndarray, at: int, rows: int, cols: int, ld: int) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(flat[at:], (rows, cols),
                                           (flat.itemsize, ld * flat.itemsize))  # fmt: skip


@pytest.mark.parametrize("ta,tb", list(itertools.product((False, True), repeat=2)))
def test_the_parts_cover_c_once_with_the_right_operands(monkeypatch, ta, tb):
    monkeypatch.setattr(tail_split, "MIN_K", 1)
    # 2 x 2 tiles over 16 slots: 13 x 5 = 65 tiles, four waves and one tile.
    m, n, k, rng = 26, 10, 7, np.random.default_rng()
    form = _form(m, n, k, ta, tb, pad=3)
    a = _store(rng, *((k, m) if ta else (m, k)), form.lda)
    b = _store(rng, *((n, k) if tb else (k, n)), form.ldb)
    found = tail_split.parts(form, (2, 2), 16)
    assert found is not None and found[2][1] == 16
    c = np.zeros(form.ldc * n)
    writes = np.zeros(form.ldc * n, dtype=int)
    for part, _ in found:
        op_a = _view(a, part.a, *((k, part.m) if ta else (part.m, k)), form.lda)
        op_b = _view(b, part.b, *((part.n, k) if tb else (k, part.n)), form.ldb)
        product = (op_a.T if ta else op_a) @ (op_b.T if tb else op_b)
        _view(c, part.c, part.m, part.n, form.ldc)[:] += product
        _view(writes, part.c, part.m, part.n, form.ldc)[:] += 1
    op_a = _view(a, 0, *((k, m) if ta else (m, k)), form.lda)
    op_b = _view(b, 0, *((n, k) if tb else (k, n)), form.ldb)
    want = (op_a.T if ta else op_a) @ (op_b.T if tb else op_b)
    np.testing.assert_allclose(_view(c, 0, m, n, form.ldc), want, rtol=1e-12, atol=1e-12)
    assert (_view(writes, 0, m, n, form.ldc) == 1).all()


def test_off_until_measured_and_then_only_dmma_configs_without_a_k_split(monkeypatch):
    from tunedgemm import cuda

    assert tail_split.FAMILIES == ()  # (see its comment: not yet faster through the public call)
    monkeypatch.setattr(tail_split, "FAMILIES", ("dmma",))
    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    big = _form(8192, 8192, 8192)

    class Whole:
        fixup = None

    simt = FAMILIES["simt"].default_config("float32")
    assert tail_split.runner(simt, "float32", big, Whole(), True) is None
    dmma = FAMILIES["dmma"].default_config("float64")
    split = type(dmma).make("dmma", {**dmma.as_dict(), "SPLIT_K": 2})
    assert tail_split.runner(split, "float64", big, Whole(), True) is None
