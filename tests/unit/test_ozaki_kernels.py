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


def kernel_residue(x: np.ndarray, p: int) -> np.ndarray:
    """kernels/ozaki.cu's centred_residue: two steps of q = rint(x / p), r = fma(-q, p, x)."""
    inv, half = 1.0 / p, float(p // 2)
    r = fma_exact(-np.rint(x * inv), p, x)
    r = fma_exact(-np.rint(r * inv), p, r)
    r = np.where(r < -half, r + p, r)
    r = np.where(r >= p - half, r - p, r)
    return r.astype(np.int64)


def centred(v: int, p: int) -> int:
    return (v + p // 2) % p - p // 2


@pytest.mark.parametrize("count", [8, 16, 20])
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
        got = kernel_residue(x, p)
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
    assert pad.m % ozaki_device.TILE == 0 and pad.k % ozaki_device.TILE == 0
    nbytes = ozaki_device.workspace_bytes(8192, 8192, 8192, 16)
    assert 3 * 16 * 8192**2 <= nbytes < 3 * 16 * 8192**2 + 2**20


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
def test_ozaki_on_the_gpu_runs_ieee_until_its_kernels_are_validated(mode: str, dtype: str) -> None:
    """selection: an Ozaki mode picks what IEEE mode picks, and its reason says so."""
    from tunedgemm import selection

    gpu, cc = "NVIDIA H100 80GB HBM3", "9.0"
    ozaki = selection.choose(dtype, 777, 333, 1555, gpu=gpu, cc=cc, precision=mode)
    ieee = selection.choose(dtype, 777, 333, 1555, gpu=gpu, cc=cc)
    assert ozaki.config == ieee.config and ozaki.candidates == ieee.candidates
    assert ozaki.reason.startswith(f"{mode} requested") and "IEEE arithmetic runs" in ozaki.reason
