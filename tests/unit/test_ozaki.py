"""Ozaki scheme II reference (tunedgemm.ozaki): modular arithmetic and CRT exact against Python's
big integers, and the emulated product's error against native matmul's, measured exactly."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from tunedgemm import ozaki


def exact_relative_errors(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """|c - a b| / |a b| elementwise, exact up to the final rounding: each product a_ih b_hj is
    split exactly into four float64 products (Veltkamp), and math.fsum sums exactly."""

    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = x * 134217729.0  # 2^27 + 1
        hi = c - (c - x)
        return hi, x - hi

    (ah, al), (bh, bl) = split(a.astype(np.float64)), split(b.astype(np.float64))
    out = np.empty(c.shape)
    for i in range(c.shape[0]):
        terms = np.concatenate([ah[i, :, None] * bh, ah[i, :, None] * bl,
                                al[i, :, None] * bh, al[i, :, None] * bl])  # fmt: skip
        for j in range(c.shape[1]):
            column = terms[:, j].tolist()
            exact = math.fsum(column)
            out[i, j] = abs(math.fsum([*column, -float(c[i, j])])) / max(abs(exact), 1e-300)
    return out


def inputs(kind: str, rng: np.random.Generator, k: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    m = n = 16
    if kind == "uniform":
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    elif kind == "spread":  # exponents over 2^-30..2^30
        a = rng.uniform(-1, 1, (m, k)) * np.exp2(rng.integers(-30, 31, (m, k)))
        b = rng.uniform(-1, 1, (k, n)) * np.exp2(rng.integers(-30, 31, (k, n)))
    else:  # ill-conditioned: u v - u v + 2^-20 u w, condition number about 2^21
        u = rng.uniform(-1, 1, (m, k // 2))
        v, w = rng.uniform(-1, 1, (k // 2, n)), rng.uniform(-1, 1, (k // 2, n))
        a, b = np.hstack([u, u]), np.vstack([v, -v + w * 2.0**-20])
    return a.astype(dtype), b.astype(dtype)


def centred(x: int, p: int) -> int:
    return (x + p // 2) % p - p // 2


def test_reference_error_is_exact() -> None:
    rng = np.random.default_rng()
    a, b = rng.uniform(-1, 1, (2, 5)), rng.uniform(-1, 1, (5, 3)) * 2.0**40
    c = a @ b
    got = exact_relative_errors(a, b, c)
    for i in range(2):
        for j in range(3):
            exact = sum((Fraction(a[i, h]) * Fraction(b[h, j]) for h in range(5)), Fraction(0))
            want = abs(Fraction(c[i, j]) - exact) / abs(exact)
            assert got[i, j] == pytest.approx(float(want), rel=1e-12, abs=1e-300)


def test_moduli_pairwise_coprime_int8_sized_and_crt_weights() -> None:
    mods = ozaki.moduli(ozaki.MAX_COUNT)
    assert mods.values[:6] == (256, 255, 253, 251, 247, 241)
    assert all(p <= 256 for p in mods.values) and len(set(mods.values)) == ozaki.MAX_COUNT
    for i, p in enumerate(mods.values):
        assert all(math.gcd(p, q) == 1 for q in mods.values[i + 1 :])
        assert p // 2 <= 128 and p - 1 - p // 2 <= 127
    assert mods.product == math.prod(mods.values)
    for w, p in zip(mods.weights, mods.values, strict=True):
        assert [w % q for q in mods.values] == [int(q == p) for q in mods.values]
    assert ozaki.moduli(14).values == mods.values[:14]
    for bad in (0, ozaki.MAX_COUNT + 1, 2.0):
        with pytest.raises(ValueError, match="count"):
            ozaki.moduli(bad)  # type: ignore[arg-type]


def test_residues_match_big_integers() -> None:
    rng = np.random.default_rng()
    mods = ozaki.moduli(16)
    ints = rng.integers(-(2**62), 2**62, (7, 9))
    ints[0, :3] = [2**62, -(2**62), 0]
    floats = np.ldexp(rng.integers(-(2**52), 2**52, (7, 9)).astype(np.float64),
                      rng.integers(0, 70, (7, 9)))  # fmt: skip
    for x in (ints, floats):
        got = ozaki.residues(x, mods)
        for r, p in zip(got, mods.values, strict=True):
            assert r.dtype == np.int8
            want = [[centred(int(v), p) for v in row] for row in x.tolist()]
            assert r.tolist() == want


def crt_via_limbs(values: list[list[int]], mods: ozaki.Moduli) -> list[list[int]]:
    """Residue products of the given integers, then crt_limbs, joined back into Python ints."""
    products = np.array([[[v % p for v in row] for row in values] for p in mods.values], np.int16)
    limbs = ozaki.crt_limbs(products, mods)
    shape = (len(values), len(values[0]))
    for limb in limbs:
        assert np.all(limb == np.round(limb)) and np.all(np.abs(limb) < 2.0**53)
    return [[sum(int(limb[i, j]) << (ozaki.LIMB_BITS * s) for s, limb in enumerate(limbs))
             for j in range(shape[1])] for i in range(shape[0])]  # fmt: skip


@pytest.mark.parametrize("count", [1, 2, 7, 8, 14, 16, 20])
def test_crt_recovers_the_whole_centred_range(count: int) -> None:
    rng = np.random.default_rng()
    mods = ozaki.moduli(count)
    edge = mods.product // 2 - (mods.product >> 35) - 1
    special = [0, 1, -1, edge, -edge, mods.product // 4, -(mods.product // 4)]
    # Uniform over [-edge, edge], the range claimed (a scaled 63-bit draw could land on
    # -product/2, outside it: 1 in 256 per draw with one modulus, a CI failure on 11-25).
    draws = random.Random(int(rng.integers(2**63)))
    randoms = [draws.randint(-edge, edge) for _ in range(9)]
    values = [special[:4] + randoms[:4], special[4:] + randoms[4:]]
    assert crt_via_limbs(values, mods) == values


@pytest.mark.parametrize("count", [8, 16])
def test_int8_products_and_crt_are_exact_at_the_scaling_bound(count: int) -> None:
    """Integer matrices at the worst case that scale allows (|X| just below 2^T = M/4 or so),
    and random ones: the residue pipeline gives A' B' exactly, as Python computes it."""
    rng = np.random.default_rng()
    mods = ozaki.moduli(count)
    bits = mods.product.bit_length() - 3
    k = 64
    top = 2.0 ** ((bits - 6) // 2)  # k * top^2 < 2^bits, so |X| < 2^bits <= M/4
    a = np.trunc(rng.uniform(-1, 1, (5, k)) * top)
    b = np.trunc(rng.uniform(-1, 1, (k, 6)) * top)
    a[0], b[:, 0], b[:, 1] = top - 1, top - 1, -(top - 1)  # X = +-k (top - 1)^2: the bound
    products = ozaki.int8_products(ozaki.residues(a, mods), ozaki.residues(b, mods), mods)
    assert products.dtype == np.int16 and products.min() >= 0
    a_rows = [[int(v) for v in row] for row in a.tolist()]
    b_cols = [[int(v) for v in col] for col in b.T.tolist()]
    want = [[sum(x * y for x, y in zip(row, col, strict=True)) for col in b_cols]
            for row in a_rows]  # fmt: skip
    for p, residue in zip(mods.values, products, strict=True):
        assert residue.tolist() == [[v % p for v in row] for row in want]
    joined = crt_via_limbs(want, mods)
    assert joined == want and abs(want[0][0]) > 2 ** (bits - 2)


def test_int8_products_chunk_k_beyond_the_int32_accumulator() -> None:
    k = ozaki.INT32_SAFE_K + 5  # all -128 * -128: one int32 sum over all k would overflow
    mods = ozaki.moduli(3)
    ra = [np.full((1, k), -128, np.int8)] * 3
    products = ozaki.int8_products(ra, [r.T.copy() for r in ra], mods)
    assert products[:, 0, 0].tolist() == [(k * 128 * 128) % p for p in mods.values]


@pytest.mark.parametrize("count", [6, 16])
def test_scale_keeps_the_product_inside_the_crt_range_with_maximal_exponents(count: int) -> None:
    rng = np.random.default_rng()
    a, b = inputs("spread", rng, 40, np.float64)
    a[3] = 0.0
    scaled = ozaki.scale(a, b, count)
    bits = ozaki.moduli(count).product.bit_length() - 3
    ta, tb = bits - bits // 2, bits // 2
    assert np.all(scaled.a_int == np.trunc(scaled.a_int)) and scaled.row_exponents[3] == 0
    assert np.all(scaled.a_int[3] == 0)
    sides = ((a, scaled.row_exponents, ta), (b.T, scaled.col_exponents, tb))
    for lines, exps, budget in sides:
        norms = np.array([math.sqrt(math.fsum(v * v for v in line)) for line in lines])
        live = norms > 0
        assert np.all(np.ldexp(norms, exps)[live] < 2.0**budget)
        assert np.all(np.ldexp(norms, exps + 1)[live] >= 2.0**budget * (1 - 2.0**-29))
    a_int = [[int(v) for v in row] for row in scaled.a_int.tolist()]
    b_int = [[int(v) for v in col] for col in scaled.b_int.T.tolist()]
    limit = ozaki.moduli(count).product // 4
    dots = [sum(x * y for x, y in zip(r, c, strict=True)) for r in a_int for c in b_int]
    assert max(map(abs, dots)) < limit


def test_reconstruct_rounds_the_exact_product_once() -> None:
    rng = np.random.default_rng()
    mods = ozaki.moduli(16)
    a, b = rng.uniform(-1, 1, (6, 30)), rng.uniform(-1, 1, (30, 5)) * 2.0**-700
    scaled = ozaki.scale(a, b, 16)
    products = ozaki.int8_products(ozaki.residues(scaled.a_int, mods),
                                   ozaki.residues(scaled.b_int, mods), mods)  # fmt: skip
    got = ozaki.reconstruct(products, mods, scaled.row_exponents, scaled.col_exponents)
    for i in range(6):
        for j in range(5):
            x = sum(Fraction(scaled.a_int[i, h]) * Fraction(scaled.b_int[h, j]) for h in range(30))
            exact = x / Fraction(2) ** int(scaled.row_exponents[i] + scaled.col_exponents[j])
            bound = abs(exact) * Fraction(1, 2**53) * (1 + Fraction(1, 2**40))
            assert abs(Fraction(got[i, j]) - exact) <= bound


ERROR_COUNTS = {np.float64: ozaki.DEFAULT_COUNTS[np.dtype(np.float64)],
                np.float32: ozaki.DEFAULT_COUNTS[np.dtype(np.float32)]}  # fmt: skip
# Wide exponent spreads need more moduli than the defaults (see ozaki.DEFAULT_COUNTS).
SPREAD_COUNTS = {np.float64: 20, np.float32: 13}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["uniform", "spread", "illcond"])
def test_emulated_error_no_worse_than_native(kind: str, dtype) -> None:
    """The issue's bound, median and 99.9th percentile of the exact relative error, at k from
    16 to 1024; native is np.matmul in the same dtype (float32 accumulates in float32)."""
    rng = np.random.default_rng()
    count = SPREAD_COUNTS[dtype] if kind == "spread" else None
    # A spread row of k = 16 has a few dominant entries and the rest lose their bits: no count
    # up to 20 met native's 99.9th percentile there, so the spread case starts at k = 128.
    for k in (128, 1024) if kind == "spread" else (16, 128, 1024):
        a, b = inputs(kind, rng, k, dtype)
        emulated = ozaki.gemm(a, b, count)
        assert emulated.emulated and emulated.result.dtype == dtype
        mine = exact_relative_errors(a, b, emulated.result)
        native = exact_relative_errors(a, b, a @ b)
        for q in (0.5, 0.999):
            assert np.quantile(mine, q) <= np.quantile(native, q), (k, q)


def test_more_moduli_give_smaller_error() -> None:
    rng = np.random.default_rng()
    a, b = inputs("spread", rng, 128, np.float64)
    errors = [exact_relative_errors(a, b, ozaki.gemm(a, b, c, guard=False).result)
              for c in (8, 10, 12, 14)]  # fmt: skip
    medians = [float(np.median(e)) for e in errors]
    assert all(later < earlier / 8 for earlier, later in itertools.pairwise(medians)), medians


def test_non_finite_falls_back_zero_rows_stay_emulated() -> None:
    rng = np.random.default_rng()
    a, b = rng.uniform(-1, 1, (4, 8)), rng.uniform(-1, 1, (8, 3))
    for bad in (np.nan, np.inf):
        a_bad = a.copy()
        a_bad[1, 2] = bad
        fallen = ozaki.gemm(a_bad, b)
        assert not fallen.emulated
        with np.errstate(invalid="ignore"):  # NumPy 2 warns of NaN in matmul
            np.testing.assert_array_equal(fallen.result, a_bad @ b)
    a[2], b[:, 1] = 0.0, 0.0
    done = ozaki.gemm(a, b)
    assert done.emulated and np.all(done.result[2] == 0) and np.all(done.result[:, 1] == 0)
    empty = ozaki.gemm(np.ones((2, 0)), np.ones((0, 3)))
    assert not empty.emulated and np.all(empty.result == 0)


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(TypeError, match="a must be float32 or float64"):
        ozaki.gemm(np.ones((2, 2), np.int32), np.ones((2, 2)))
    with pytest.raises(ValueError, match="not a 2-D matrix product"):
        ozaki.gemm(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="count"):
        ozaki.gemm(np.ones((2, 2)), np.ones((2, 2)), count=0)


# The accuracy guard (ozaki.unreliable): what the GPU tests of 2026-11-23 found short --------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_guard_meets_the_bound_on_spread_exponents_at_the_default_count(dtype) -> None:
    """Exponents over 2^-30..2^30 at k = 16 missed native's error by 4.6x (float64) and 19x
    (float32) at the median on the H100; with the guard the default count meets the bound at
    every k, and without it the same inputs miss it (so this test can fail)."""
    rng = np.random.default_rng()
    for k in (16, 128, 1024):
        a, b = inputs("spread", rng, k, dtype)
        native = exact_relative_errors(a, b, a @ b)
        guarded = ozaki.gemm(a, b)
        mine = exact_relative_errors(a, b, guarded.result)
        for q in (0.5, 0.999):
            assert np.quantile(mine, q) <= np.quantile(native, q), (k, q, guarded.recomputed)
        if k == 16:
            bare = exact_relative_errors(a, b, ozaki.gemm(a, b, guard=False).result)
            assert np.quantile(bare, 0.999) > np.quantile(native, 0.999)
            assert guarded.recomputed > 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_guard_leaves_well_scaled_inputs_emulated(dtype) -> None:
    rng = np.random.default_rng()
    for kind, k in (("uniform", 16), ("uniform", 1024), ("illcond", 1024)):
        a, b = inputs(kind, rng, k, dtype)
        guarded = ozaki.gemm(a, b)
        assert guarded.recomputed == 0, (kind, k)
        np.testing.assert_array_equal(guarded.result, ozaki.gemm(a, b, guard=False).result)


def test_magnitude_bound_is_a_tight_lower_bound() -> None:
    """One integer GEMM of magnitudes quantised to 0..127 never exceeds |A| |B| (the guard
    stays on the safe side) and, on uniform inputs, is within a few percent of it."""
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (40, 300)) * np.exp2(rng.integers(-8, 9, (40, 300)))
    b = rng.uniform(-1, 1, (300, 30))
    a[3] = 0.0  # a zero row bounds to zero
    exact = np.abs(a) @ np.abs(b)
    low = ozaki.magnitude_lower_bound(a, b)
    assert np.all(low <= exact * (1 + 1e-12)) and np.all(low[3] == 0)
    u, v = rng.uniform(-1, 1, (40, 300)), rng.uniform(-1, 1, (300, 30))
    ratio = ozaki.magnitude_lower_bound(u, v) / (np.abs(u) @ np.abs(v))
    assert ratio.min() > 0.95 and ratio.max() <= 1 + 1e-12
