"""The wgmma family's shared-memory layout and matrix descriptors, emulated in NumPy.

Python mirrors of kernels/sgemm_tf32_wgmma.cu's address arithmetic (sw128, sw128_desc,
DESC_KSTEP, load_raw and convert's positions, the accumulator's element map) are checked
against the PTX ISA's definitions: a descriptor's fields (start address >> 4 in bits 0-13,
stride byte offset >> 4 in bits 32-45, swizzle mode in bits 62-63, 1 = 128-byte) and the
128-byte swizzle (address bits 4-6 XOR bits 7-9) applied to the canonical K-major layout
(8-row groups SBO bytes apart, rows 128 bytes apart). A whole k-tile then goes through the
emulated staging, conversion and wgmma reads, in every transpose, and must give op(A) op(B).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from tunedgemm.compiler import kernels_dir

BK = 32  # floats of k per 128-byte row
SOURCE = (kernels_dir() / "sgemm_tf32_wgmma.cu").read_text()


# ---- mirrors of the kernel ----------------------------------------------------------------


def sw128(x: int, k: int) -> int:
    """Float offset of (x, k) in a K-major swizzled tile (the kernel's sw128)."""
    return x * BK + ((((k >> 2) ^ x) & 7) << 2) + (k & 3)


def sw128_desc(addr: int) -> int:
    return ((addr & 0x3FFFF) >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


DESC_KSTEP = 2


# ---- the PTX ISA's side -------------------------------------------------------------------


def decode(desc: int) -> dict[str, int]:
    return {
        "start": (desc & 0x3FFF) << 4,
        "lbo": ((desc >> 16) & 0x3FFF) << 4,
        "sbo": ((desc >> 32) & 0x3FFF) << 4,
        "base_offset": (desc >> 49) & 7,
        "swizzle": (desc >> 62) & 3,
    }


def wgmma_reads(smem: np.ndarray, desc: int, rows: int) -> np.ndarray:
    """The rows x 8 TF32 matrix (K-major, k = 8 per instruction) a wgmma operand descriptor
    names in shared memory (float32 words, byte address = 4 * index)."""
    f = decode(desc)
    assert f["swizzle"] == 1 and f["base_offset"] == 0, f  # 128-byte swizzle
    out = np.empty((rows, 8), smem.dtype)
    for r, k in itertools.product(range(rows), range(8)):
        logical = f["start"] + (r // 8) * f["sbo"] + (r % 8) * 128 + 4 * k
        physical = logical ^ (((logical >> 7) & 7) << 4)
        out[r, k] = smem[physical // 4]
    return out


def test_kernel_text_matches_the_mirrors():
    """The mirrors above transcribe the kernel: a change there must change them too."""
    assert "return x * BK + ((((k >> 2) ^ x) & 7) << 2) + (k & 3);" in SOURCE
    assert "((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32)" in SOURCE
    assert "| (1ull << 62);" in SOURCE
    assert re.search(r"#define DESC_KSTEP 2\b", SOURCE)
    assert re.search(r"#define BK 32\b", SOURCE) and re.search(r"#define BM 128\b", SOURCE)


def test_descriptor_fields():
    f = decode(sw128_desc(0x1_2400))
    assert f == {"start": 0x1_2400 & 0x3FFF0, "lbo": 16, "sbo": 1024, "base_offset": 0,
                 "swizzle": 1}  # fmt: skip
    # A k-step adds 32 bytes to the start address and nothing else.
    assert decode(sw128_desc(0x400) + DESC_KSTEP)["start"] == 0x400 + 32


def test_swizzle_is_a_bank_conflict_free_permutation():
    positions = [sw128(x, k) for x in range(128) for k in range(BK)]
    assert sorted(positions) == list(range(128 * BK))
    # convert's transposing writes: 8 consecutive x, one 16-byte chunk each, 8 distinct chunks
    # of the 32 banks (a quarter-warp's 16-byte stores).
    for x0, k in itertools.product(range(0, 128, 8), range(0, BK, 4)):
        assert len({(sw128(x0 + i, k) % 32) // 4 for i in range(8)}) == 8


@pytest.mark.parametrize("rows", [64, 128])
@pytest.mark.parametrize("tile_offset", [0, 1024 * 16])
def test_descriptor_reads_the_tile_the_kernel_wrote(rows, tile_offset):
    rng = np.random.default_rng()
    tile = rng.standard_normal((rows, BK)).astype(np.float32)  # (x, k)
    smem = np.full(tile_offset // 4 + rows * BK, np.nan, np.float32)
    for x, k in itertools.product(range(rows), range(BK)):
        smem[tile_offset // 4 + sw128(x, k)] = tile[x, k]
    for ks in range(BK // 8):
        seen = wgmma_reads(smem, sw128_desc(tile_offset) + DESC_KSTEP * ks, rows)
        np.testing.assert_array_equal(seen, tile[:, 8 * ks : 8 * ks + 8])


# ---- a whole k-tile through staging, conversion and wgmma --------------------------------


def load_raw(g_at, kmajor: bool, bx: int, x_ext: int, k_ext: int) -> np.ndarray:
    """The raw slot load_raw fills (zero outside the operand): sw128 or [k][bx]."""
    raw = np.full(bx * BK, np.nan, np.float32)
    for x, k in itertools.product(range(bx), range(BK)):
        value = g_at(x, k) if x < x_ext and k < k_ext else 0.0
        raw[sw128(x, k) if kmajor else k * bx + x] = value
    return raw


def convert(raw: np.ndarray, kmajor: bool, bx: int) -> np.ndarray:
    """convert's operand copy (rounding left out): K-major in place, M-major transposed."""
    op = np.full(bx * BK, np.nan, np.float32)
    for idx in range(bx * BK // 4):
        if kmajor:
            pos, v = 4 * idx, raw[4 * idx : 4 * idx + 4]
        else:
            x, k = idx % bx, 4 * (idx // bx)
            pos, v = sw128(x, k), raw[[(k + i) * bx + x for i in range(4)]]
        op[pos : pos + 4] = v
    return op


def accumulator_element(tid: int, i: int) -> tuple[int, int]:
    """(row, column) of accumulator register i of thread tid in the block tile: the PTX ISA's
    m64nN D fragment of warpgroup tid // 128, as the kernel's epilogue places it."""
    wg, q, lane = tid // 128, (tid // 32) % 4, tid % 32
    g, t = lane // 4, lane % 4
    j, e = i // 4, i % 4
    return 64 * wg + 16 * q + g + 8 * (e >> 1), 8 * j + 2 * t + (e & 1)


@pytest.mark.parametrize("bn", [64, 128])
def test_accumulator_map_covers_the_tile_once(bn):
    cells = [accumulator_element(tid, i) for tid in range(256) for i in range(bn // 2)]
    assert sorted(cells) == [(r, c) for r in range(128) for c in range(bn)]


@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product((0, 1), repeat=2)))
def test_one_k_tile_end_to_end(trans_a, trans_b):
    """m = 100 of 128 rows, n = 50 of 64 columns, k = 27 of 32: op(A) op(B) restricted to
    the tile, with zero fill at the edges, from the emulated wgmma reads."""
    rng = np.random.default_rng()
    m, n, k, bm, bn = 100, 50, 27, 128, 64
    op_a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    op_b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a_store = op_a.T.copy() if trans_a else op_a  # as stored: A (lda x ...) column-major
    b_store = op_b.T.copy() if trans_b else op_b

    def a_at(x, p):
        return a_store[p, x] if trans_a else a_store[x, p]

    def b_at(x, p):
        return b_store[x, p] if trans_b else b_store[p, x]

    op_smem_a = convert(load_raw(a_at, bool(trans_a), bm, m, k), bool(trans_a), bm)
    op_smem_b = convert(load_raw(b_at, not trans_b, bn, n, k), not trans_b, bn)
    total = np.zeros((bm, bn))
    for wg, ks in itertools.product(range(2), range(BK // 8)):
        a_rows = wgmma_reads(op_smem_a, sw128_desc(4 * wg * 64 * BK) + DESC_KSTEP * ks, 64)
        b_rows = wgmma_reads(op_smem_b, sw128_desc(0) + DESC_KSTEP * ks, bn)
        total[64 * wg : 64 * wg + 64] += a_rows.astype(np.float64) @ b_rows.T.astype(np.float64)
    expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
    np.testing.assert_allclose(total[:m, :n], expected, rtol=1e-12, atol=1e-12)
    assert not total[m:].any() and not total[:, n:].any()
