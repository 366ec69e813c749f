"""The Ozaki kernels' integer arithmetic, emulated in NumPy step for step and checked exactly
against Python's big integers; their templates compile without spills; the precision modes."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tunedgemm import ozaki, ozaki_device
from tunedgemm._layout import BlasForm
from tunedgemm.families import FAMILIES, int8
from tunedgemm.precision import check_mode, moduli_count, resolve


def fma_exact(a: np.ndarray, b: float, c: np.ndarray) -> np.ndarray:
    """fma(a, b, c) for integer-valued float64 (as the kernels' are): the exact integer, in
    Python's, rounded once to float64."""
    exact = [int(x) * int(b) + int(y) for x, y in zip(a.ravel().tolist(), c.ravel().tolist(),
                                                     strict=True)]  # fmt: skip
    return np.array([float(v) for v in exact]).reshape(a.shape)


MAGIC = 6755399441055744.0  # kernels/ozaki.cu's 1.5 * 2^52


def kernel_digits(x: np.ndarray, count: int) -> list[np.ndarray]:
    """kernels/ozaki.cu's split_digits: base-2^32 digits of x', least significant first, each
    checked exact against Python's integers."""
    d = ozaki_device.digits(count)
    out = [np.zeros_like(x) for _ in range(d)]
    rest = x.copy()
    for i in range(d - 1, 0, -1):
        hi = np.trunc(np.ldexp(rest, -32 * i))
        out[i] = hi
        rest = rest - np.ldexp(hi, 32 * i)
    out[0] = rest
    for j, v in enumerate(x.tolist()):
        assert sum(int(out[i][j]) << (32 * i) for i in range(d)) == int(v)
        assert all(abs(out[i][j]) < 2.0**32 for i in range(d))
    return out


def kernel_residue(x: np.ndarray, p: int, count: int) -> np.ndarray:
    """kernels/ozaki.cu's centred_residue: y = sum_i d_i (2^(32 i) mod p), exact; q = rint(y / p)
    by adding and subtracting MAGIC; r = fma(-q, p, y); centring; the integer read off the low
    32 bits of r + MAGIC (as __double2loint), then its low byte (the int8 stored)."""
    digits = kernel_digits(x, count)
    table = ozaki_device.power_table(ozaki.moduli(count), len(digits))
    index = ozaki.moduli(count).values.index(p)
    inv, half = 1.0 / p, float(p // 2)
    y = digits[0]
    for i in range(1, len(digits)):
        y = fma_exact(digits[i], table[index * len(digits) + i], y)
    assert np.all(np.abs(y) < 2.0**53)
    r = fma_exact(-((y * inv + MAGIC) - MAGIC), p, y)
    assert np.all(np.abs(r) <= p / 2)
    r = np.where(r < -half, r + p, r)
    r = np.where(r >= p - half, r - p, r)
    low = ((r + MAGIC).view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return (low & 0xFF).astype(np.uint8).view(np.int8).astype(np.int64)


def centred(v: int, p: int) -> int:
    return (v + p // 2) % p - p // 2


@pytest.mark.parametrize("count", [1, 8, 16, 20, 32])
def test_residue_kernel_arithmetic_matches_big_integers(count: int) -> None:
    rng = np.random.default_rng()
    mods = ozaki.moduli(count)
    ta, _ = ozaki_device.budgets(count)
    top = 2**ta  # the scaled entries' bound (2^e ||row|| < 2^ta)
    ints = [int(v) for v in np.trunc(np.ldexp(rng.uniform(-1, 1, 2000), ta))]
    # Exact ties of x / p and values next to them, the extremes, and 53-bit-wide ones.
    ints += [s * (q * p + p // 2 + d) for p in mods.values for q in (0, 1, 12345, top // p - 1)
             for d in (-1, 0, 1) for s in (1, -1)]  # fmt: skip
    ints += [top - 1, -(top - 1), 0, 1, -1]
    if ta > 53:
        ints += [int(np.ldexp(float(v), int(e))) for v, e in
                 zip(rng.integers(2**52, 2**53, 50), rng.integers(0, ta - 53, 50), strict=True)]
    ints = [v for v in ints if abs(v) < top and float(v) == v]
    x = np.array([float(v) for v in ints])
    assert [int(v) for v in x] == ints  # exact: every value has at most 53 significant bits
    for p in mods.values:
        got = kernel_residue(x, p, count)
        assert got.tolist() == [centred(v, p) for v in ints], p
        assert got.min() >= -128 and got.max() <= 127


def test_gemm_epilogue_reduction_matches_big_integers() -> None:
    """igemm_s8's OUT_MOD epilogue: C's truncated % and one correction, into [0, p)."""
    rng = np.random.default_rng()
    k = ozaki.INT32_SAFE_K
    acc = rng.integers(-k * 2**14, k * 2**14 + 1, 5000, dtype=np.int64)
    acc[:4] = [k * 2**14, -k * 2**14, 0, -1]
    assert np.abs(acc).max() < 2**31
    for p in ozaki.moduli(20).values:
        r = np.fmod(acc, p)  # C's % on int: the sign of the dividend
        r = np.where(r < 0, r + p, r)
        assert r.tolist() == [int(v) % p for v in acc.tolist()]


def kernel_reconstruct(products: np.ndarray, mods: ozaki.Moduli) -> list[np.ndarray]:
    """kernels/ozaki.cu's reconstruct up to the limbs X_s, reading the constants from
    ozaki_device.crt_table as the kernel does."""
    table = ozaki_device.crt_table(mods)
    count, limbs = len(mods.values), mods.limbs
    weights, modulus, inverse = table[: count * limbs], table[count * limbs : -1], table[-1]
    s = [np.zeros(products.shape[1:]) for _ in range(limbs)]
    for z in range(count):
        c = products[z].astype(np.float64)
        for limb in range(limbs):
            s[limb] = c * weights[z * limbs + limb] + s[limb]  # exact, so fma or not
            assert np.all(np.abs(s[limb]) < 2.0**53)
    estimate = np.zeros(products.shape[1:])
    for limb in range(limbs):
        estimate = estimate + np.ldexp(s[limb], ozaki.LIMB_BITS * limb)
    q = np.rint(estimate * inverse)
    return [fma_exact(-q, modulus[limb], s[limb]) for limb in range(limbs)]


@pytest.mark.parametrize("count", [1, 8, 14, 16, 20, 32])
def test_reconstruct_kernel_arithmetic_recovers_big_integers(count: int) -> None:
    rng = np.random.default_rng()
    mods = ozaki.moduli(count)
    bound = mods.product // 4  # what ozaki.scale guarantees
    values = [int(v) * bound // 2**62 for v in rng.integers(-(2**62), 2**62, 60)]
    values += [bound - 1, -(bound - 1), 0, 1, -1, bound // 3]
    rows = np.array(values, dtype=object).reshape(6, 11)
    products = np.array([[[int(v) % p for v in row] for row in rows] for p in mods.values],
                        np.int16)  # fmt: skip
    limbs = kernel_reconstruct(products, mods)
    joined = [[sum(int(limb[i, j]) << (ozaki.LIMB_BITS * s) for s, limb in enumerate(limbs))
               for j in range(11)] for i in range(6)]  # fmt: skip
    assert joined == rows.tolist()
    # The final rounding is the reference's: within half an ulp of the exact integer.
    rounded = ozaki.limbs_to_float(limbs)
    for i, j in itertools.product(range(6), range(11)):
        assert abs(int(rounded[i, j]) - rows[i, j]) <= abs(rows[i, j]) * 2.0**-52 + 0.5


# ---- the accuracy guard (line_exponents' gauges, residues' magnitude plane, guard) ---------


def kernel_sum_of_squares(x: np.ndarray, kcontig: bool) -> tuple[np.ndarray, np.ndarray]:
    """line_exponents' scaled sums of squares of x's rows, (ssq, e) with ssq 4^e the sum, in
    the kernel's order: KCONTIG = 1, lane t of 32 takes depths t, t + 32, ..., then a xor
    butterfly; KCONTIG = 0, warp w of 8 takes depths w, w + 8, ..., then warps 0..7 in turn.
    The kernel's fma(t, t, ssq) is a multiply and an add here: the norms may differ from the
    GPU's in the last bits (the tests below allow for that at the decision's boundary)."""
    lanes = 32 if kcontig else 8
    lines, k = x.shape
    padded = np.zeros((lines, -(-k // lanes) * lanes))
    padded[:, :k] = np.abs(x)
    steps = padded.reshape(lines, -1, lanes)
    e = np.full((lines, lanes), -4096, np.int64)
    ssq = np.zeros((lines, lanes))
    for t in range(steps.shape[1]):
        v = steps[:, t, :]
        nonzero = v != 0
        biased = (v.view(np.int64) >> 52) & 0x7FF
        ex = np.maximum(biased, 1) - 1022
        grow = nonzero & (ex > e)
        ssq = np.where(grow, np.ldexp(ssq, 2 * (e - np.where(grow, ex, e))), ssq)
        e = np.where(grow, ex, e)
        scaled = np.ldexp(v, -e)
        ssq = np.where(nonzero, scaled * scaled + ssq, ssq)

    def merge(a, b):
        top = np.maximum(a[1], b[1])
        return np.ldexp(a[0], 2 * (a[1] - top)) + np.ldexp(b[0], 2 * (b[1] - top)), top

    if kcontig:
        for mask in (16, 8, 4, 2, 1):
            partner = np.arange(32) ^ mask
            ssq, e = merge((ssq, e), (ssq[:, partner], e[:, partner]))
        return ssq[:, 0], e[:, 0]
    total = (ssq[:, 0], e[:, 0])
    for w in range(1, 8):
        total = merge(total, (ssq[:, w], e[:, w]))
    return total


def kernel_gauges(lines: np.ndarray, exponents: np.ndarray, kcontig: bool) -> ozaki.Gauges:
    """line_exponents' gauges of the rows of `lines` (scaling exponents given)."""
    ssq, e = kernel_sum_of_squares(lines, kcontig)
    peak = np.max(np.abs(lines), axis=1)
    mantissa, q = np.frexp(peak)
    live = ssq > 0
    inv = np.where(live, ozaki.MAGNITUDE_LEVELS / np.where(live, mantissa, 1.0), 0.0)
    return ozaki.Gauges(np.where(live, np.ldexp(np.sqrt(ssq), e + exponents), 0.0),
                        np.where(live, np.ldexp(mantissa, q + exponents), 0.0),
                        np.where(live, q, 0), inv)  # fmt: skip


def kernel_guard(a: np.ndarray, b: np.ndarray, scaled: ozaki.Scaled, dtype,
                 kcontig: bool = True) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """kernels/ozaki.cu's guard, fed as the GPU feeds it: the gauges from line_exponents, the
    magnitude planes from residues (floor(scalbn(|x|, -q) * inv)), their int32 product.
    Returns the failing elements and estimate / bound (the margin)."""
    ga = kernel_gauges(np.asarray(a, np.float64), scaled.row_exponents, kcontig)
    gb = kernel_gauges(np.asarray(b, np.float64).T, scaled.col_exponents, kcontig)
    qa = np.floor(np.ldexp(np.abs(a.astype(np.float64)), -ga.shift[:, None]) * ga.inv[:, None])
    qb = np.floor(np.ldexp(np.abs(b.astype(np.float64)), -gb.shift[None, :]) * gb.inv[None, :])
    assert qa.min() >= 0 and qa.max() <= 127 and qb.min() >= 0 and qb.max() <= 127
    product = qa.astype(np.int64) @ qb.astype(np.int64)
    assert product.max() < 2**31  # the int32 output of igemm_s8 with OUT_MOD = 0
    estimate = (ga.norm[:, None] + gb.norm[None, :]) + np.sqrt(float(a.shape[1]))
    bound = (product.astype(np.float64) * (ga.peak[:, None] * gb.peak[None, :])) * \
        ozaki.guard_factor(np.dtype(dtype))  # fmt: skip
    live = (ga.peak > 0)[:, None] & (gb.peak > 0)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = estimate / bound
    return (estimate > bound) & live, np.where(live, margin, 0.0)


def _guard_inputs(kind: str, rng: np.random.Generator, m: int, n: int, k: int, dtype):
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    if kind.startswith("spread"):
        r = int(kind.removeprefix("spread"))
        a = a * np.exp2(rng.integers(-r, r + 1, (m, k)))
        b = b * np.exp2(rng.integers(-r, r + 1, (k, n)))
    elif kind == "scaled":  # uniform rows and columns, each at its own scale 2^-r..2^r
        r = 300 if dtype == np.float64 else 50
        a = a * np.exp2(rng.integers(-r, r + 1, (m, 1)))
        b = b * np.exp2(rng.integers(-r, r + 1, (1, n)))
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind,k", [("uniform", 16), ("uniform", 1000), ("uniform", 4096),
                                    ("scaled", 300), ("spread10", 1000), ("spread30", 16),
                                    ("spread30", 1000)])  # fmt: skip
def test_gpu_guard_decides_as_the_reference(dtype, kind: str, k: int) -> None:
    """The GPU's guard (emulated) flags the elements ozaki.unreliable flags, both layouts,
    except where estimate / bound lies within 1e-12 of 1 (the norms' last bits); uniform
    inputs, at any scale per row and column, never trip it."""
    rng = np.random.default_rng()
    m, n = 48, 40
    a, b = _guard_inputs(kind, rng, m, n, k, dtype)
    scaled = ozaki.scale(a, b, ozaki.default_count(np.dtype(dtype)))
    want = ozaki.unreliable(a, b, scaled, np.dtype(dtype))
    for kcontig in (True, False):
        got, margin = kernel_guard(a, b, scaled, dtype, kcontig)
        differ = got != want
        assert not np.any(differ & (np.abs(margin - 1) > 1e-12)), (kind, k, kcontig)
    if kind in ("uniform", "scaled"):
        assert not want.any()
    if kind == "spread30":
        assert want.any()  # the default count cannot hold 2^-30..2^30 within a row


def test_gpu_guard_leaves_zero_lines_and_ill_conditioned_products_emulated() -> None:
    rng = np.random.default_rng()
    u = rng.uniform(-1, 1, (16, 512))
    v, w = rng.uniform(-1, 1, (512, 12)), rng.uniform(-1, 1, (512, 12))
    a, b = np.hstack([u, u]), np.vstack([v, -v + w * 2.0**-20])  # condition number ~2^21
    a[3], b[:, 5] = 0.0, 0.0  # exact: nothing is truncated
    scaled = ozaki.scale(a, b, 16)
    got, _ = kernel_guard(a, b, scaled, np.float64)
    assert not got.any() and not ozaki.unreliable(a, b, scaled, np.dtype(np.float64)).any()


def test_guard_gauges_match_the_reference_and_stay_finite_at_extreme_scales() -> None:
    """The kernel's line data equals ozaki.gauges (peak and quantisation exactly, the norm to
    a few ulps), also for lines of huge or subnormal magnitude, where 127 / max|x| would
    overflow: the magnitudes still span 0..127."""
    rng = np.random.default_rng()
    x = rng.uniform(-1, 1, (6, 200))
    x[0] *= 2.0**1000
    x[1] *= 2.0**-1070  # subnormal
    x[2, :] = 0.0
    x[3, 7] = 5e-324  # one subnormal among normal numbers
    exponents = ozaki._log2_floor_exponents(x, 1, 62)
    want = ozaki.gauges(x, 1, exponents)
    got = kernel_gauges(x, exponents, True)
    np.testing.assert_array_equal(got.peak, want.peak)
    np.testing.assert_array_equal(got.shift, want.shift)
    np.testing.assert_array_equal(got.inv, want.inv)
    np.testing.assert_allclose(got.norm, want.norm, rtol=1e-13)
    assert np.all(np.isfinite(want.norm)) and np.all(want.norm[[0, 1, 3, 4, 5]] > 2.0**60)
    q = ozaki.magnitudes(x, 1, want)
    assert q[2].max() == 0 and q[[0, 1, 3, 4, 5]].max(axis=1).min() >= 126 and q.max() <= 127


def test_fallback_reasons() -> None:
    assert ozaki_device.fallback_reason(0, 16) is None
    assert ozaki_device.fallback_reason(ozaki_device.FLAG_NONFINITE, 16) == "Inf or NaN in A or B"
    both = ozaki_device.FLAG_NONFINITE | ozaki_device.FLAG_SPREAD
    assert ozaki_device.fallback_reason(both, 16) == "Inf or NaN in A or B"
    assert ozaki_device.fallback_reason(ozaki_device.FLAG_SPREAD, 12) == \
        "exponents of A or B spread too widely for 12 moduli"  # fmt: skip
    assert 127**2 * ozaki.INT32_SAFE_K < 2**31  # the magnitude product is exact in int32


def test_crt_table_layout() -> None:
    mods = ozaki.moduli(16)
    table = ozaki_device.crt_table(mods)
    assert table.shape == (16 * mods.limbs + mods.limbs + 1,)
    rebuilt = [sum(int(table[z * mods.limbs + s]) << (40 * s) for s in range(mods.limbs))
               for z in range(16)]  # fmt: skip
    assert rebuilt == list(mods.weights)
    assert table[-1] == 1.0 / float(mods.product)


def test_budgets_match_the_reference_scaling() -> None:
    for count in (2, 8, 16, 32):
        ta, tb = ozaki_device.budgets(count)
        assert ta + tb == ozaki.moduli(count).product.bit_length() - 3 and ta - tb in (0, 1)


def test_line_strides_address_op_a_rows_and_op_b_columns() -> None:
    """The element (line, depth) at X[line * s_line + depth * s_k] is op(A)(line, depth) and
    op(B)(depth, line), as common.cuh's A_AT and B_AT address them, in every transpose."""
    rng = np.random.default_rng()
    m, n, k, lda, ldb = 5, 4, 3, 7, 6
    store = rng.uniform(-1, 1, 64)
    for ta, tb in itertools.product((False, True), repeat=2):
        form = BlasForm(ta, tb, m, n, k, 0, lda, 0, ldb, 0, m, 8)
        (sla, ska, kca), (slb, skb, kcb) = ozaki_device.line_strides(form)
        assert (ska == 1) == kca and (skb == 1) == kcb
        for i, j, p in itertools.product(range(m), range(n), range(k)):
            a_index = p + i * lda if ta else i + p * lda
            b_index = j + p * ldb if tb else p + j * ldb
            assert store[i * sla + p * ska] == store[a_index]
            assert store[j * slb + p * skb] == store[b_index]


def test_padding_and_workspace() -> None:
    pad = ozaki_device.Padded.of(1, 300, 129)
    assert (pad.m, pad.n, pad.k) == (256, 512, 256)
    # the residues kernel's blocks tile the padded planes, and the reconstruction's uchar4
    # loads stay inside the padded rows of the products
    assert int8.LINE_ALIGN % ozaki_device.TILE == 0 and int8.K_ALIGN % ozaki_device.RES_DEPTH == 0
    assert int8.LINE_ALIGN % (32 * ozaki_device.REC_ROWS) == 0
    nbytes = ozaki_device.workspace_bytes(8192, 8192, 8192, 16)
    # residues and magnitudes of both (2 x 17 planes), 16 planes of products, int32 magnitudes
    assert (34 + 16 + 4) * 8192**2 <= nbytes < (34 + 16 + 4) * 8192**2 + 2**20


def test_int8_family_is_declared_once_and_kept_from_the_gemm_abi() -> None:
    family = int8.FAMILY
    assert family.name not in FAMILIES  # its ABI is not common.cuh's
    assert family.violations(int8.default_config(), "float64") == []
    assert family.serves("float64", "ozaki") and not family.serves("float64", "ieee")
    assert len(list(family.space("float64"))) > 10
    for config in family.space("float32"):
        p = config.as_dict()
        assert int8.LINE_ALIGN % p["BM"] == 0 and int8.K_ALIGN % p["BK"] == 0


def test_precision_modes() -> None:
    assert check_mode("Ozaki") == "ozaki"
    assert check_mode("ozaki-014") == "ozaki-14"
    assert resolve("ozaki-20", "float32") == "ozaki-20"
    assert moduli_count("ozaki", "float64") == ozaki.DEFAULT_COUNTS[np.dtype("f8")]
    assert moduli_count("ozaki", "float32") == ozaki.DEFAULT_COUNTS[np.dtype("f4")]
    assert moduli_count("ozaki-7", "float32") == 7
    assert moduli_count("3xtf32", "float32") is None
    for bad in ("ozaki-0", "ozaki-33", "ozaki-", "ozaki-x", "ozak"):
        with pytest.raises(ValueError, match="ozaki-N"):
            check_mode(bad)


# ---- templates ----------------------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _compile(source: str, defines: dict, tmp_path) -> str:
    from helpers import compile_report

    return compile_report(source, defines, tmp_path)


@needs_nvcc
def test_ozaki_templates_compile_without_spills(tmp_path) -> None:
    """The conversion kernels in every dtype, layout and a few counts; the INT8 GEMM's
    default in both output modes, whose SASS main loop must be IMMA 16832 (with cuobjdump)."""
    from helpers import assert_no_spills

    jobs = [("ozaki.cu", ozaki_device.conversion_defines(dtype, count, kc))
            for dtype, kc, count in itertools.product(("float32", "float64"), (False, True),
                                                      (8, 16))]  # fmt: skip
    jobs += [("ozaki.cu", ozaki_device.conversion_defines("float64", 32, True))]
    jobs += [("igemm_s8.cu", ozaki_device.gemm_defines(int8.default_config(), out_mod))
             for out_mod in (True, False)]  # fmt: skip
    dirs = []
    for index in range(len(jobs)):
        (tmp_path / str(index)).mkdir()
        dirs.append(tmp_path / str(index))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reports = list(pool.map(lambda job: _compile(job[0][0], job[0][1], job[1]),
                                zip(jobs, dirs, strict=True)))  # fmt: skip
    for (source, defines), report in zip(jobs, reports, strict=True):
        assert_no_spills(report, f"{source} {defines}")
    if shutil.which("cuobjdump") is None:
        return
    sass = subprocess.run(["cuobjdump", "-sass", str(dirs[-2] / "kernel.cubin")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    p = int8.DEFAULTS
    per_tile = (p["WM"] // 16) * (p["WN"] // 8) * p["BK"] // 32
    assert sass.count("IMMA.16832.S8.S8") >= per_tile, sass[:2000]


@pytest.mark.parametrize("mode", ["ozaki", "ozaki-6"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ozaki_selection_names_the_emulation_and_its_ieee_fallback(mode: str, dtype: str) -> None:
    """selection (explain's source): an Ozaki mode's fallback is what IEEE mode picks, and the
    reason names the moduli count and when the fallback runs."""
    from tunedgemm import selection

    gpu, cc = "NVIDIA H100 80GB HBM3", "9.0"
    chosen = selection.choose(dtype, 777, 333, 1555, gpu=gpu, cc=cc, precision=mode)
    ieee = selection.choose(dtype, 777, 333, 1555, gpu=gpu, cc=cc)
    count = moduli_count(mode, dtype)
    assert chosen.config == ieee.config
    assert chosen.reason.startswith(f"{mode}: Ozaki scheme II with {count} moduli")
    assert f"spread too widely for {count} moduli" in chosen.reason
    text = selection.explain(777, 333, 1555, dtype, gpu=gpu, cc=cc, precision=mode)
    assert f"Ozaki scheme II with {count} moduli" in text and "IEEE arithmetic" in text


class _FakeIeeePlan:
    choice, reason = "dmma(BM=64)", "tuned"

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.reserved = 0

    def run(self, *args) -> None:
        self.calls.append(args)

    def reserve(self, stream: int) -> None:
        self.reserved += 1


@pytest.mark.parametrize("flag", [0, ozaki_device.FLAG_SPREAD, ozaki_device.FLAG_NONFINITE])
def test_ozaki_plan_runs_the_emulation_and_falls_back_to_its_ieee_plan(monkeypatch, flag) -> None:
    """plans.DevicePlan in an Ozaki mode: the emulation with the key's own arguments; where
    its flag comes back set, the IEEE plan of the same key on the same stream, and the plan's
    status says why."""
    from tunedgemm import plans

    ieee = _FakeIeeePlan()
    asked: list = []
    monkeypatch.setattr(plans, "device_plan", lambda key, form, stream, cache=None:
                        asked.append(key) or ieee)  # fmt: skip
    monkeypatch.setattr(plans, "cache_here", lambda: None)
    monkeypatch.setattr(plans, "_cublas_usable", lambda: False)  # so the IEEE plan falls back
    monkeypatch.setattr(plans, "_time_emulation", lambda key, count, run: None)

    def fake_gemm_or_ieee(form, dtype, alpha, beta, stream, run_ieee, count=None, config=None):
        assert (form.m, form.n, form.k, form.a, form.b, form.c) == (300, 200, 100, 11, 22, 33)
        assert (dtype, alpha, beta, stream, count) == ("float64", 2.0, 0.5, 7, 16)
        reason = ozaki_device.fallback_reason(flag, count)
        if reason is not None:
            run_ieee()
        return reason

    monkeypatch.setattr(ozaki_device, "gemm_or_ieee", fake_gemm_or_ieee)
    form = BlasForm(False, True, 300, 200, 100, 11, 300, 22, 200, 33, 300, 8)
    key = plans.GemmKey.of(form, "float64", "ozaki")
    plan = plans.DevicePlan(key, form, 7)
    assert asked[0].precision == "ieee" and asked[0].m == 300
    assert plan.choice == "Ozaki scheme II with 16 moduli"
    assert "IEEE arithmetic: dmma(BM=64) (tuned)" in plan.reason
    assert plan.run.status() == "no call yet"
    plan.run(11, 22, 33, 2.0, 0.5, 7)
    if flag:
        assert ieee.calls == [(11, 22, 33, 2.0, 0.5, 7)]
        assert plan.run.status() == "latest call fell back to IEEE: " + \
            str(ozaki_device.fallback_reason(flag, 16))  # fmt: skip
    else:
        assert ieee.calls == [] and plan.run.status() == "latest call emulated"


def test_ozaki_plan_leaves_batches_and_long_k_to_ieee(monkeypatch) -> None:
    from tunedgemm import plans

    ieee = _FakeIeeePlan()
    monkeypatch.setattr(plans, "device_plan", lambda key, form, stream, cache=None: ieee)
    monkeypatch.setattr(plans, "cache_here", lambda: None)
    for k, batch in ((64, 3), (ozaki.INT32_SAFE_K + 1, 1), (0, 1)):
        form = BlasForm(False, False, 64, 64, k, 1, 64, 2, max(k, 1), 3, 64, 4)
        key = plans.GemmKey.of(form, "float32", "ozaki-9", batch)
        plan = plans.DevicePlan(key, form, 0)
        assert plan.run == ieee.run and plan.choice == ieee.choice
        assert plan.reason.startswith("ozaki-9 not emulated")


def _ozaki_plan(monkeypatch, mode: str, timed, native=None):
    """A DevicePlan of a 300 x 200 x 100 float64 key in `mode`, with a fake IEEE plan, the
    emulation-against-IEEE timing returning `timed`, and cuBLAS's direct call `native` (None:
    cuBLAS unusable)."""
    from tunedgemm import autotune, plans, reference

    ieee = _FakeIeeePlan()
    monkeypatch.setattr(plans, "device_plan", lambda key, form, stream, cache=None: ieee)
    monkeypatch.setattr(plans, "cache_here", lambda: None)
    monkeypatch.setattr(plans, "_cublas_usable", lambda: native is not None)
    monkeypatch.setattr(reference, "direct", lambda dtype, precision="ieee": native)
    monkeypatch.setattr(autotune, "enabled", lambda: True)
    times: list = []
    monkeypatch.setattr(plans, "_time_emulation",
                        lambda key, count, run: times.append(key) or timed)  # fmt: skip
    form = BlasForm(False, True, 300, 200, 100, 11, 300, 22, 200, 33, 300, 8)
    return plans.DevicePlan(plans.GemmKey.of(form, "float64", mode), form, 7), ieee, times


def test_plain_ozaki_runs_ieee_where_that_was_timed_faster(monkeypatch) -> None:
    """"ozaki" asks for float64's accuracy: where the IEEE plan was timed faster than the
    emulation at the key's shape, the plan is that IEEE plan, and says why."""
    plan, ieee, times = _ozaki_plan(monkeypatch, "ozaki", (2.0, 1.0))
    assert len(times) == 1 and plan.run == ieee.run and plan.choice == ieee.choice
    assert "IEEE arithmetic, faster here than the emulation with 16 moduli" in plan.reason
    assert "1 against 2 ms" in plan.reason


@pytest.mark.parametrize(("mode", "timed"), [("ozaki", (1.0, 2.0)), ("ozaki", None),
                                             ("ozaki-16", (2.0, 1.0))])  # fmt: skip
def test_ozaki_emulates_where_faster_untimed_or_asked_by_count(monkeypatch, mode, timed) -> None:
    """The emulation runs where it was timed faster, where it could not be timed, and always
    in "ozaki-N", the expert knob (which is never timed)."""
    plan, ieee, times = _ozaki_plan(monkeypatch, mode, timed)
    assert plan.choice == "Ozaki scheme II with 16 moduli" and plan.run != ieee.run
    assert len(times) == (mode == "ozaki")


def test_ozaki_falls_back_to_cublas_itself_where_it_serves(monkeypatch) -> None:
    """The accuracy bound is cuBLAS's own error: a call the emulation hands back runs
    cuBLAS's GEMM (the native routine) on the call's arguments, not the IEEE plan."""
    calls: list = []
    plan, ieee, _ = _ozaki_plan(monkeypatch, "ozaki-16", None, lambda *a: calls.append(a))

    def fake_gemm_or_ieee(form, dtype, alpha, beta, stream, run_ieee, count=None, config=None):
        run_ieee()
        return ozaki_device.fallback_reason(ozaki_device.FLAG_SPREAD, count)

    monkeypatch.setattr(ozaki_device, "gemm_or_ieee", fake_gemm_or_ieee)
    assert "runs in IEEE arithmetic: cuBLAS" in plan.reason
    plan.run(11, 22, 33, 2.0, 0.5, 7)
    assert ieee.calls == []
    assert calls == [(False, True, 300, 200, 100, 2.0, 11, 300, 22, 200, 0.5, 33, 300, 7)]


def test_emulation_short_of_device_memory_hands_the_call_to_ieee(monkeypatch) -> None:
    """A workspace that does not fit (pycuda's MemoryError) makes the call fall back before
    anything is queued (C untouched), saying how much was missing; other errors propagate."""
    from tunedgemm import cuda

    class MemoryError(Exception):  # named as pycuda.driver's
        pass

    def short(nbytes: int):
        raise MemoryError(f"cuMemAlloc failed: out of memory ({nbytes})")

    monkeypatch.setattr(cuda, "allocate", short)
    form = BlasForm(False, False, 4096, 4096, 4096, 1, 4096, 2, 4096, 3, 4096, 8)
    outcome = ozaki_device.gemm(form, "float64", 1.0, 0.0, 0)
    assert outcome.fell_back()
    assert outcome.reason.startswith("device memory short for the emulation's workspace (")

    def broken(nbytes: int):
        raise RuntimeError("launch failed")

    monkeypatch.setattr(cuda, "allocate", broken)
    with pytest.raises(RuntimeError):
        ozaki_device.gemm(form, "float64", 1.0, 0.0, 0)
