"""Ozaki scheme II in NumPy: GEMM emulated by INT8 products of residues and the CRT (reference).

The arithmetic that the future CUDA kernels of issue 17 are tested against, step by step:

1. ``scale``: each row of A and column of B times a power of two, truncated to integers A', B',
   so that every entry of the exact integer product X = A' B' satisfies |X| < M/4.
2. ``residues``: the centred residues of A' and B' modulo each modulus p_l, as int8.
3. ``int8_products``: per modulus one int8 x int8 -> int32 GEMM, reduced mod p_l.
4. ``reconstruct``: X from its residues by the Chinese Remainder Theorem, in limbs that float64
   (or int64) arithmetic holds exactly, then scaled back by 2^-(e_i + f_j).

The scheme follows Ozaki, Uchino and Imamura (arXiv 2504.08009) and Uchino et al. (arXiv
2508.03984); the scaling is their "fast mode" (a Cauchy-Schwarz bound) in its scale-invariant
form, and the reconstruction is written for one fused epilogue pass (see ``reconstruct``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

# The largest modulus: centred residues of 256 are exactly int8's [-128, 127].
LARGEST_MODULUS = 256
# Bits per limb of the CRT weights: a residue (< 2^8) times a limb (< 2^40), summed over up to
# 2^5 moduli, stays below 2^53, so each limb sum is exact in float64 (or int64) arithmetic.
LIMB_BITS = 40
MAX_COUNT = 32
# int8 x int8 products are at most 128 * 128 = 2^14 in magnitude, so an int32 accumulator holds
# the sum of 2^17 - 1 of them; longer k is cut into chunks reduced mod p between them.
INT32_SAFE_K = 2**17 - 1
# Default moduli counts, measured on CPU (tests/unit/test_ozaki.py, 24 x k x 24, k = 16..1024):
# 16 moduli (M of 126 bits, 62 bits a side before the Cauchy-Schwarz loss of log2(k)/2) put
# float64's median and 99.9th-percentile error below native matmul's on uniform(-1, 1) and on
# ill-conditioned dot products; 14 (the papers' FP64 setting) did not at k >= 128. 8 moduli do
# the same for float32. Exponents spread over 2^-30..2^30 within a row need about 20 (float64)
# and 11 (float32) at k = 16 for the 99.9th percentile: a row's small entries lose their bits
# (the accuracy guard below recomputes those elements instead).
DEFAULT_COUNTS = {np.dtype(np.float64): 16, np.dtype(np.float32): 8}
# The accuracy guard (``unreliable``): an element of C is recomputed in IEEE arithmetic where
# its estimated truncation error passes GUARD_TAU units in the last place of (|A| |B|)_ij, the
# scale the bound measures errors in; (|A| |B|) is bounded below by one more integer
# GEMM of magnitudes quantised to 0..MAGNITUDE_LEVELS. benchmarks/ozaki_spread.py's inputs
# (uniform, exponents spread over 2^-10..2^10 and 2^-30..2^30, k = 16..4096, default counts
# and 2 more) all met the bound with it; without it, spread exponents missed it by up to 4e9x.
GUARD_TAU = 0.25
MAGNITUDE_LEVELS = 127
# Relative safety on the float64 row and column norms, which carry rounding error of about
# k * 2^-53; the floor in the exponent makes it cost nothing in all but rare cases.
NORM_SAFETY = 1.0 + 2.0**-30


class Moduli(NamedTuple):
    """The moduli, their product M, and the CRT data that ``reconstruct`` needs."""

    values: tuple[int, ...]
    product: int
    weights: tuple[int, ...]  # w_l = (M/p_l) * ((M/p_l)^-1 mod p_l): w_l = 1 mod p_l, 0 mod others
    limbs: int  # how many LIMB_BITS limbs hold any value below N * 256 * M


class Scaled(NamedTuple):
    """A' = trunc(diag(2^row_exponents) A) and B' = trunc(B diag(2^col_exponents)), as
    integer-valued float64 arrays (exact: truncation keeps at most 53 bits)."""

    a_int: np.ndarray
    b_int: np.ndarray
    row_exponents: np.ndarray
    col_exponents: np.ndarray


def moduli(count: int) -> Moduli:
    """The first `count` moduli of 256, 255, 253, 251, 247, 241, ...: greedily the largest
    integers <= 256 coprime to all chosen before (as the papers choose them), so M is as large
    as `count` int8 GEMMs can give. Centred residues lie in [-128, 127], int8's range."""
    if not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be an int in 1..{MAX_COUNT}, got {count!r}")
    chosen: list[int] = []
    candidate = LARGEST_MODULUS
    while len(chosen) < count:
        if all(math.gcd(candidate, p) == 1 for p in chosen):
            chosen.append(candidate)
        candidate -= 1
    product = math.prod(chosen)
    weights = tuple((product // p) * pow(product // p, -1, p) % product for p in chosen)
    limbs = -(-(product * count * LARGEST_MODULUS).bit_length() // LIMB_BITS)
    return Moduli(tuple(chosen), product, weights, limbs)


def default_count(dtype: np.dtype) -> int:
    """The number of moduli that meets the accuracy bound of issue 17 for dtype."""
    return DEFAULT_COUNTS[np.dtype(dtype)]


def _log2_floor_exponents(x: np.ndarray, axis: int, budget_bits: int) -> np.ndarray:
    """Per row (axis=1) or column (axis=0): the largest e with 2^e * ||x||_2 < 2^budget_bits.

    The norm is taken of x divided by a power of two near its largest entry, so that neither
    huge nor subnormal entries overflow or underflow in the squares."""
    peak = np.max(np.abs(x), axis=axis)
    _, peak_exp = np.frexp(np.where(peak > 0, peak, 1.0))
    shape = (-1, 1) if axis == 1 else (1, -1)
    normalised = np.ldexp(x, -peak_exp.reshape(shape))
    norm = np.sqrt(np.sum(normalised * normalised, axis=axis)) * NORM_SAFETY
    # norm = m 2^q with m in [0.5, 1): 2^e ||x|| < 2^budget iff e <= budget - q - peak_exp.
    _, norm_exp = np.frexp(norm)
    exponents = budget_bits - norm_exp.astype(np.int64) - peak_exp.astype(np.int64)
    return np.where(peak > 0, exponents, 0)


def scale(a: np.ndarray, b: np.ndarray, count: int) -> Scaled:
    """Power-of-two scaling of A's rows and B's columns to integers whose product fits the CRT.

    The bound: with A'_i = trunc(2^e_i A_i) (row i) and B'_j = trunc(2^f_j B_j) (column j),
    truncation never grows a magnitude, so by Cauchy-Schwarz
    |X_ij| = |sum_h A'_ih B'_hj| <= ||A'_i||_2 ||B'_j||_2 <= 2^e_i ||A_i||_2 2^f_j ||B_j||_2.
    The exponents are the largest with 2^e_i ||A_i||_2 < 2^ta and 2^f_j ||B_j||_2 < 2^tb, where
    ta + tb = T = floor(log2 M) - 2, so |X_ij| < 2^T <= M/4 for every k: k enters only through
    the norms (a row of k entries of equal size keeps about ta - log2(k)/2 bits per entry, the
    largest entry of a row with one dominant term about ta). The slack below M/2 lets
    ``reconstruct`` find the CRT quotient from a float estimate. Bits below 2^-e_i of a row are
    cut off, so the error of X is at most ||B'_j||_1 + ||A'_i||_1 + k integer units.

    Zero rows and columns get exponent 0 (and stay exact zeros). Inputs must be finite."""
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be in 1..{MAX_COUNT}, got {count!r}")
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    total_bits = moduli(count).product.bit_length() - 1 - 2
    ta, tb = total_bits - total_bits // 2, total_bits // 2
    row_exponents = _log2_floor_exponents(a64, 1, ta)
    col_exponents = _log2_floor_exponents(b64, 0, tb)
    a_int = np.trunc(np.ldexp(a64, row_exponents[:, None]))
    b_int = np.trunc(np.ldexp(b64, col_exponents[None, :]))
    return Scaled(a_int, b_int, row_exponents, col_exponents)


def residues(x_int: np.ndarray, mods: Moduli | tuple[int, ...]) -> list[np.ndarray]:
    """Centred residues of an integer-valued array (float64 or any NumPy integer dtype), one
    int8 array per modulus p: the r = x mod p with -floor(p/2) <= r < p - floor(p/2).

    float64 inputs use fmod, which IEEE computes exactly at any magnitude (on the GPU: q =
    rint(x / p), r = fma(-q, p, x), repeated once, since q may be off by x * 2^-53 / p)."""
    values = mods.values if isinstance(mods, Moduli) else tuple(mods)
    x = np.asarray(x_int)
    out = []
    for p in values:
        half = p // 2
        if x.dtype.kind == "f":
            r = np.fmod(x, float(p))  # in (-p, p), exact
            r = np.where(r < -half, r + p, np.where(r >= p - half, r - p, r))
        else:
            r = (x.astype(np.int64) + half) % p - half
        out.append(r.astype(np.int8))
    return out


def int8_products(
    ra: list[np.ndarray], rb: list[np.ndarray], mods: Moduli | tuple[int, ...]
) -> np.ndarray:
    """Per modulus the int8 x int8 -> int32 product of the residues, reduced to [0, p):
    an int16 array of shape (count, m, n). k beyond INT32_SAFE_K is summed in chunks, each
    exact in int32 and reduced mod p before the next is added (as the GPU must)."""
    values = mods.values if isinstance(mods, Moduli) else tuple(mods)
    if not (len(ra) == len(rb) == len(values)):
        raise ValueError(f"{len(ra)} and {len(rb)} residue arrays for {len(values)} moduli")
    k = ra[0].shape[1] if ra else 0
    m, n = (ra[0].shape[0], rb[0].shape[1]) if ra else (0, 0)
    out = np.zeros((len(values), m, n), np.int16)
    for index, (left, right, p) in enumerate(zip(ra, rb, values, strict=True)):
        total = np.zeros((m, n), np.int64)
        for start in range(0, max(k, 1), INT32_SAFE_K):
            chunk = slice(start, start + INT32_SAFE_K)
            product = np.matmul(left[:, chunk].astype(np.int32), right[chunk, :].astype(np.int32))
            total = (total + product) % p  # product is int32: exact, as on the tensor cores
        out[index] = total
    return out


def _limbs(value: int, count: int) -> list[float]:
    """value in base 2^LIMB_BITS, least significant first, each limb a float64 (exact)."""
    mask = (1 << LIMB_BITS) - 1
    return [float((value >> (LIMB_BITS * s)) & mask) for s in range(count)]


def crt_limbs(products: np.ndarray, mods: Moduli) -> list[np.ndarray]:
    """X as float64 limbs, X = sum_s limb_s 2^(LIMB_BITS s), each limb an exact integer below
    2^53 in magnitude: the centred CRT representative of the residues, exactly.

    Steps (each a fused-multiply-add epilogue step on the GPU, constants in constant memory):
    1. S_s = sum_l c_l w_ls, with w_l's limbs w_ls: exact, S = sum_s S_s 2^(40s) in [0, 256 N M).
    2. q = rint(S / M) from the float sum of the S_s times 1/M: S/M's error is about 2^-40, far
       below the 1/4 slack that |X| < M/4 leaves, so q is exact and X = S - q M is centred.
    3. X_s = S_s - q M_s, with M's limbs M_s: exact (q < 2^13 and M_s < 2^40)."""
    weight_limbs = [_limbs(w, mods.limbs) for w in mods.weights]
    modulus_limbs = _limbs(mods.product, mods.limbs)
    residue = products.astype(np.float64)
    sums = [
        sum((residue[i] * weight_limbs[i][s] for i in range(len(mods.values))), np.zeros(1))
        for s in range(mods.limbs)
    ]
    estimate = sum(np.ldexp(sums[s], LIMB_BITS * s) for s in range(mods.limbs))
    quotient = np.rint(estimate * (1.0 / float(mods.product)))
    return [sums[s] - quotient * modulus_limbs[s] for s in range(mods.limbs)]


def _two_sum(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's error-free sum: x + y = s + e exactly, s = fl(x + y)."""
    s = x + y
    v = s - x
    return s, (x - (s - v)) + (y - v)


def limbs_to_float(limbs: list[np.ndarray]) -> np.ndarray:
    """sum_s limb_s 2^(40 s) rounded to float64, from the top limb down with error-free sums:
    the top two limbs' sum and its error carry 106 bits, so the result is within a hair of
    correctly rounded (one rounding of X, plus below 2^-100 relative)."""
    total = np.ldexp(limbs[-1], LIMB_BITS * (len(limbs) - 1))
    error = np.zeros_like(total)
    for s in range(len(limbs) - 2, -1, -1):
        total, e = _two_sum(total, np.ldexp(limbs[s], LIMB_BITS * s))
        error = error + e
    return total + error


def reconstruct(
    products: np.ndarray, mods: Moduli, row_exponents: np.ndarray, col_exponents: np.ndarray
) -> np.ndarray:
    """The float64 product from the per-modulus products (count, m, n) reduced to [0, p):
    X by the CRT in exact limbs (``crt_limbs``), rounded once (``limbs_to_float``), then times
    2^-(e_i + f_j) (exact unless the result is subnormal or overflows, as native would).
    Exact for any |X| < M/2 - 2^-35 M; ``scale`` guarantees |X| < M/4."""
    x = limbs_to_float(crt_limbs(products, mods))
    return np.ldexp(x, -(row_exponents[:, None] + col_exponents[None, :]))


class Emulated(NamedTuple):
    """The product, whether it was emulated (False: np.matmul, for non-finite input), and how
    many of its elements the accuracy guard recomputed in IEEE arithmetic."""

    result: np.ndarray
    emulated: bool
    recomputed: int = 0


class Gauges(NamedTuple):
    """What the accuracy guard needs of each row of A (column of B), in the scaled units of
    A' = 2^e A (so nothing overflows or underflows): norm = 2^e ||x||_2, peak = 2^e max|x|;
    and the magnitude plane's quantisation: shift = q with max|x| = m 2^q, m in [0.5, 1),
    inv = fl(MAGNITUDE_LEVELS / m). Zero lines have peak 0 (and inv 0)."""

    norm: np.ndarray
    peak: np.ndarray
    shift: np.ndarray
    inv: np.ndarray


def gauges(x: np.ndarray, axis: int, exponents: np.ndarray) -> Gauges:
    """The guard's data of x's rows (axis=1) or columns (axis=0) scaled by 2^exponents."""
    x64 = np.abs(np.asarray(x, np.float64))
    peak = np.max(x64, axis=axis)
    mantissa, shift = np.frexp(peak)
    shape = (-1, 1) if axis == 1 else (1, -1)
    normalised = np.ldexp(x64, -shift.reshape(shape))
    norm = np.sqrt(np.sum(normalised * normalised, axis=axis))
    exponents = np.asarray(exponents, np.int64)
    inv = np.where(peak > 0, MAGNITUDE_LEVELS / np.where(peak > 0, mantissa, 1.0), 0.0)
    return Gauges(np.ldexp(norm, shift + exponents), np.ldexp(mantissa, shift + exponents),
                  shift.astype(np.int64), inv)  # fmt: skip


def magnitudes(x: np.ndarray, axis: int, g: Gauges) -> np.ndarray:
    """|x| quantised to 0..MAGNITUDE_LEVELS per row (axis=1) or column (axis=0):
    floor(|x| 2^-q * inv), each at most its share of the line's largest magnitude (the
    residues kernel writes it as one more int8 plane). Power-of-two scaling first, so that
    neither huge nor subnormal lines overflow the factor 127 / max|x|."""
    shape = (-1, 1) if axis == 1 else (1, -1)
    scaled = np.ldexp(np.abs(np.asarray(x, np.float64)), -g.shift.reshape(shape))
    return np.floor(scaled * g.inv.reshape(shape)).astype(np.int64)


def magnitude_lower_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A lower bound of |A| |B| from one integer GEMM of the magnitudes quantised to
    0..MAGNITUDE_LEVELS (``magnitudes``), which the int8 family computes exactly (int32
    products: 127^2 k < 2^31 for k <= INT32_SAFE_K), scaled back by the lines' largest
    magnitudes. Rows or columns of zeros bound to 0."""
    zeros_a = np.zeros(np.shape(a)[0], np.int64)
    zeros_b = np.zeros(np.shape(b)[1], np.int64)
    ga, gb = gauges(a, 1, zeros_a), gauges(b, 0, zeros_b)
    product = magnitudes(a, 1, ga) @ magnitudes(b, 0, gb)
    return product * np.outer(ga.peak, gb.peak) / MAGNITUDE_LEVELS**2


def guard_factor(dtype: np.dtype) -> float:
    """GUARD_TAU units in the last place of dtype, over MAGNITUDE_LEVELS^2 (the factor the
    guard's comparison multiplies the integer magnitude product by; the GPU gets it as is)."""
    return GUARD_TAU * (float(np.finfo(dtype).eps) / 2) / MAGNITUDE_LEVELS**2


def unreliable(a: np.ndarray, b: np.ndarray, scaled: Scaled, dtype: np.dtype) -> np.ndarray:
    """Elements of C whose emulated value may miss the accuracy bound (see GUARD_TAU).

    With A' = 2^e_i a_i - d_i and B' = 2^f_j b_j - g_j (0 <= |d|, |g| < 1 integer unit),
    2^(e_i + f_j) (C_ij - (AB)_ij) = -2^e_i a_i . g_j - d_i . 2^f_j b_j + d_i . g_j. The worst
    case (1-norms, k for the last term) flagged every element of uniform inputs at k >= 1000,
    where the emulation's error was 0.06x native's; the units left by truncation do not line
    up with the other operand's signs, so the sums grow as square roots: the estimate is
    2^e_i ||a_i|| + 2^f_j ||b_j|| + sqrt(k), compared in the same scaled units with
    GUARD_TAU ulp of the lower bound of (|A| |B|)_ij (``magnitude_lower_bound``). Elements of
    a zero row of A or column of B are exact (A'_i = 0: nothing is truncated) and never
    flagged. kernels/ozaki.cu's ``guard`` computes this test in this order."""
    ga = gauges(a, 1, scaled.row_exponents)
    gb = gauges(b, 0, scaled.col_exponents)
    product = (magnitudes(a, 1, ga) @ magnitudes(b, 0, gb)).astype(np.float64)
    estimate = (ga.norm[:, None] + gb.norm[None, :]) + math.sqrt(np.shape(a)[1])
    bound = (product * (ga.peak[:, None] * gb.peak[None, :])) * guard_factor(dtype)
    return (estimate > bound) & (ga.peak > 0)[:, None] & (gb.peak > 0)[None, :]


def gemm(a: np.ndarray, b: np.ndarray, count: int | None = None, guard: bool = True) -> Emulated:
    """a @ b by Ozaki scheme II with `count` moduli (default: ``default_count`` of the result
    dtype, float32 if both inputs are float32, else float64). Inf or NaN anywhere, or k = 0,
    falls back to np.matmul and reports emulated=False: an emulated result is never silently
    wrong. Elements the accuracy guard flags (``unreliable``: rows or columns whose entries
    span more exponents than the moduli keep) are recomputed as dot products in a wider
    format, rounded once (guard=False: the scheme alone). Zero rows and columns are emulated
    exactly (exponent 0)."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 2 or b_arr.ndim != 2 or a_arr.shape[1] != b_arr.shape[0]:
        raise ValueError(f"a {a_arr.shape} and b {b_arr.shape} are not a 2-D matrix product")
    for name, arr in (("a", a_arr), ("b", b_arr)):
        if arr.dtype not in DEFAULT_COUNTS:
            raise TypeError(f"{name} must be float32 or float64, got {arr.dtype}")
    dtype = np.result_type(a_arr.dtype, b_arr.dtype)
    count = default_count(dtype) if count is None else count
    if a_arr.shape[1] == 0 or not (np.all(np.isfinite(a_arr)) and np.all(np.isfinite(b_arr))):
        with np.errstate(invalid="ignore"):  # Inf times 0 is NaN, as native gives it
            return Emulated(np.matmul(a_arr, b_arr), False)
    mods = moduli(count)
    scaled = scale(a_arr, b_arr, count)
    products = int8_products(
        residues(scaled.a_int, mods), residues(scaled.b_int, mods), mods
    )
    result = reconstruct(products, mods, scaled.row_exponents, scaled.col_exponents)
    result = result.astype(dtype)
    if not guard:
        return Emulated(result, True)
    rows, cols = np.nonzero(unreliable(a_arr, b_arr, scaled, dtype))
    if rows.size:
        # float64 sums for float32 (as a GPU thread would recompute them); x87 long double,
        # where NumPy has it, for float64
        wide = np.float64 if dtype == np.float32 else np.longdouble
        sums = np.einsum("ek,ke->e", a_arr[rows].astype(wide), b_arr[:, cols].astype(wide))
        result[rows, cols] = sums.astype(dtype)
    return Emulated(result, True, int(rows.size))
