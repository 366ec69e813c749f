"""Ozaki scheme II on the GPU (tunedgemm/ozaki_device.py): the batched INT8 GEMMs (both
families: mma.sync and, on sm_90, every wgmma config) exact against NumPy's int64 products,
the emulated dgemm / sgemm no less accurate than cuBLAS DGEMM / SGEMM on the same inputs
(median and 99.9th percentile) and bit-equal between the two INT8 families, BLAS semantics,
and the IEEE fallback.

Run on the GPU machine: python -m pytest -q -p no:cacheprovider tests/gpu/test_ozaki_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import precompiles_modules

from tunedgemm import ozaki, ozaki_device
from tunedgemm._layout import BlasForm
from tunedgemm.families import int8, int8_wgmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

GEMM_CONFIGS = [
    int8.default_config(),
    KernelConfig.make(int8.NAME, {**int8.DEFAULTS, "BK": 64, "STAGES": 4}),
    KernelConfig.make(int8.NAME, {**int8.DEFAULTS, "BM": 128, "BN": 128, "WM": 64, "WN": 32}),
    KernelConfig.make(int8.NAME, {**int8.DEFAULTS, "BM": 64, "BN": 128, "WM": 32, "WN": 32,
                                  "STAGES": 2, "MIN_BLOCKS": 2}),
]
WGMMA_CONFIGS = list(int8_wgmma.FAMILY.space("float64")) + int8_wgmma.probes()


def _arch() -> str:
    from tunedgemm import cuda

    cuda.context()
    return cuda.arch()


def _skip_without_wgmma(config: KernelConfig) -> None:
    if config.family == int8_wgmma.NAME and _arch() not in int8_wgmma.ARCHS:
        pytest.skip(f"wgmma needs {int8_wgmma.ARCHS}, this GPU is {_arch()}")


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every INT8 GEMM config of this file, both output modes, compiled in parallel first."""
    if not precompiles_modules():
        return
    configs = GEMM_CONFIGS + (WGMMA_CONFIGS if _arch() in int8_wgmma.ARCHS else [])
    for out_mod in (True, False):
        ozaki_device.precompile_gemms(configs, out_mod)


def _to_device(array: np.ndarray):
    from pycuda import gpuarray

    from tunedgemm import cuda

    cuda.context()
    return gpuarray.to_gpu(array)


def _launch_igemm(config: KernelConfig, a: np.ndarray, b: np.ndarray, mods, out_mod: bool):
    """The INT8 GEMM of config's family (ozaki_device's launcher) on (count, rows, kp) and
    (count, cols, kp) int8: (count, rows, cols) back, from a C filled with 0xAB bytes."""
    count, rows, kp = a.shape
    cols = b.shape[1]
    out_dtype = np.uint8 if out_mod else np.int32
    da, db = _to_device(a), _to_device(b)
    dc = _to_device(np.full((count, rows, cols), 0xAB, out_dtype))
    dm = _to_device(np.array(mods.values, np.int32))
    launcher, (tile_rows, tile_cols) = ozaki_device.gemm_launcher(config, out_mod)
    launcher.launch((rows // tile_rows, cols // tile_cols, count), 0,
                    (rows, cols, kp, int(da.gpudata), rows * kp, int(db.gpudata), cols * kp,
                     int(dc.gpudata), rows * cols, cols, int(dm.gpudata)))  # fmt: skip
    return dc.get()


def _int_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A_z B_z^T exactly: float64 BLAS is exact here (every partial sum is an integer below
    kp 2^14 < 2^53) and much faster than an int64 einsum."""
    return np.matmul(a.astype(np.float64), b.astype(np.float64).transpose(0, 2, 1)).astype(np.int64)


# (count, rows, cols, kp): odd multiples of the padding (LINE_ALIGN 256, K_ALIGN 128), one
# k-tile (fewer than the ring's prologue), k-tile counts that wrap the rings unevenly.
INT8_SHAPES = [(3, 512, 256, 384), (16, 768, 256, 640), (1, 256, 768, 128), (5, 256, 512, 1152)]


@pytest.mark.parametrize("shape", INT8_SHAPES, ids=str)
@pytest.mark.parametrize("config", GEMM_CONFIGS + WGMMA_CONFIGS, ids=str)
def test_int8_gemm_is_exact(config: KernelConfig, shape: tuple[int, int, int, int]) -> None:
    _skip_without_wgmma(config)
    rng = np.random.default_rng()
    assert ozaki_device.ozaki_family_of(config).violations(config, "float64") == []
    count, rows, cols, kp = shape
    mods = ozaki.moduli(count)
    a = rng.integers(-128, 128, (count, rows, kp), dtype=np.int8)
    b = rng.integers(-128, 128, (count, cols, kp), dtype=np.int8)
    a[0, 0], b[0, 0] = -128, -128  # the largest product, k times
    want = _int_products(a, b)
    got = _launch_igemm(config, a, b, mods, out_mod=False)
    np.testing.assert_array_equal(got, want)
    reduced = _launch_igemm(config, a, b, mods, out_mod=True)
    for z, p in enumerate(mods.values):
        np.testing.assert_array_equal(reduced[z], want[z] % p)


@pytest.mark.parametrize("config", [int8.default_config(), int8_wgmma.default_config()], ids=str)
def test_int8_gemm_at_the_accumulator_limit(config: KernelConfig) -> None:
    """kp at the largest multiple of K_ALIGN within ozaki.INT32_SAFE_K, every product
    (-128)(-128) or (-128)(127): sums of +-2^31 minus a little, exact in int32."""
    _skip_without_wgmma(config)
    kp = ozaki.INT32_SAFE_K // int8.K_ALIGN * int8.K_ALIGN
    count, rows, cols = 2, 256, 256
    mods = ozaki.moduli(count)
    a = np.full((count, rows, kp), -128, np.int8)
    b = np.full((count, cols, kp), -128, np.int8)
    b[1] = 127
    want = np.empty((count, rows, cols), np.int64)
    want[0], want[1] = kp * 128 * 128, -kp * 128 * 127
    assert np.abs(want).max() < 2**31
    np.testing.assert_array_equal(_launch_igemm(config, a, b, mods, out_mod=False), want)
    reduced = _launch_igemm(config, a, b, mods, out_mod=True)
    for z, p in enumerate(mods.values):
        np.testing.assert_array_equal(reduced[z], want[z] % p)


def _errors(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """|C - AB| / (|A| |B|) elementwise, AB in long double (64-bit mantissa on x86)."""
    exact = np.asarray(a, np.longdouble) @ np.asarray(b, np.longdouble)
    scale = np.abs(np.asarray(a, np.longdouble)) @ np.abs(np.asarray(b, np.longdouble))
    return np.asarray(np.abs(np.asarray(c, np.longdouble) - exact) / np.maximum(scale, 1e-300),
                      np.float64)  # fmt: skip


def _operands(kind: str, rng: np.random.Generator, m: int, n: int, k: int, dtype):
    if kind == "uniform":
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    else:  # exponents over 2^-30..2^30
        a = rng.uniform(-1, 1, (m, k)) * np.exp2(rng.integers(-30, 31, (m, k)))
        b = rng.uniform(-1, 1, (k, n)) * np.exp2(rng.integers(-30, 31, (k, n)))
    return a.astype(dtype), b.astype(dtype)


def _run(fn: str, a: np.ndarray, b: np.ndarray, c0: np.ndarray, alpha: float, beta: float,
         trans_a: bool, trans_b: bool, count: int | None = None,
         config: KernelConfig | None = None):  # fmt: skip
    """C = alpha op(A) op(B) + beta C0 through ozaki_device ("ozaki") or cuBLAS ("cublas"),
    op(X) = X stored transposed where asked; returns C and the Outcome."""
    from tunedgemm import reference

    m, k = a.shape
    n = b.shape[1]
    dtype = a.dtype
    store_a = np.asfortranarray(a.T if trans_a else a)
    store_b = np.asfortranarray(b.T if trans_b else b)
    # Column-major storage as flat buffers: leading dimensions are the stored row counts.
    da, db = _to_device(store_a.ravel(order="F")), _to_device(store_b.ravel(order="F"))
    dc = _to_device(np.asarray(c0, dtype).ravel(order="F"))
    form = BlasForm(trans_a, trans_b, m, n, k, int(da.gpudata), store_a.shape[0],
                    int(db.gpudata), store_b.shape[0], int(dc.gpudata), m,
                    dtype.itemsize)  # fmt: skip
    outcome = None
    if fn == "ozaki":
        outcome = ozaki_device.gemm(form, dtype.name, alpha, beta, 0, count, config)
        outcome.fell_back()
    else:
        reference.gemm(form, dtype, alpha, beta, 0)
    return dc.get().reshape((n, m)).T, outcome


SHAPES = [(256, 256, 16), (200, 190, 1000), (33, 300, 4096), (257, 129, 129)]


def _run_or_ieee(a, b, c0, alpha, beta, ta, tb, count=None):
    """As _run("ozaki"), and where it fell back, cuBLAS on the same buffers (gemm_or_ieee, as
    the public call does): C and the reason (None: emulated)."""
    from tunedgemm import reference

    m, k = a.shape
    n = b.shape[1]
    store_a = np.asfortranarray(a.T if ta else a)
    store_b = np.asfortranarray(b.T if tb else b)
    da, db = _to_device(store_a.ravel(order="F")), _to_device(store_b.ravel(order="F"))
    dc = _to_device(np.asarray(c0, a.dtype).ravel(order="F"))
    form = BlasForm(ta, tb, m, n, k, int(da.gpudata), store_a.shape[0], int(db.gpudata),
                    store_b.shape[0], int(dc.gpudata), m, a.dtype.itemsize)  # fmt: skip
    reason = ozaki_device.gemm_or_ieee(
        form, a.dtype.name, alpha, beta, 0,
        lambda: reference.gemm(form, a.dtype, alpha, beta, 0), count)  # fmt: skip
    return dc.get().reshape((n, m)).T, reason


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["uniform", "spread"])
def test_error_no_worse_than_cublas(dtype, kind: str) -> None:
    """The issue's bound on the default count, every transpose pair, beta = 0 on a NaN C:
    the emulated product's median and 99.9th-percentile error no worse than cuBLAS's on the
    same inputs, or (the accuracy guard) the call fell back and C is cuBLAS's result. Uniform
    inputs are always emulated; exponents over 2^-30..2^30 within a row (4.6x cuBLAS DGEMM's
    median error at k = 16 before the guard, H100 2026-11-23) may fall back."""
    rng = np.random.default_rng()
    for (m, n, k), (ta, tb) in zip(SHAPES, itertools.product((False, True), repeat=2),
                                   strict=True):  # fmt: skip
        a, b = _operands(kind, rng, m, n, k, dtype)
        nan_c = np.full((m, n), np.nan, dtype)
        mine, reason = _run_or_ieee(a, b, nan_c, 1.0, 0.0, ta, tb)
        native, _ = _run("cublas", a, b, nan_c, 1.0, 0.0, ta, tb)
        if kind == "uniform":
            assert reason is None, (m, n, k, reason)
        if reason is not None:
            assert reason.startswith("exponents of A or B spread too widely"), reason
            np.testing.assert_array_equal(mine, native)
            continue
        assert np.all(np.isfinite(mine)), (m, n, k, ta, tb)
        e_mine, e_native = _errors(a, b, mine), _errors(a, b, native)
        for q in (0.5, 0.999):
            assert np.quantile(e_mine, q) <= np.quantile(e_native, q), (m, n, k, ta, tb, q)


@pytest.mark.parametrize("count", [None, 8, 20])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_both_int8_families_give_the_same_emulated_product(dtype, count, monkeypatch) -> None:
    """The INT8 products are exact in either family, so the emulated GEMM is bit-equal
    whichever runs, and the accuracy guard (whose magnitude product is exact too) decides
    alike: explicit configs, and the default that TUNEDGEMM_OZAKI_GEMM picks. (float64 with
    8 moduli falls back: too few for float64's accuracy, as the guard says; the default
    count never does on these uniform inputs.)"""
    if _arch() not in int8_wgmma.ARCHS:
        pytest.skip(f"wgmma needs {int8_wgmma.ARCHS}, this GPU is {_arch()}")
    rng = np.random.default_rng()
    m, n, k = 257, 129, 1000
    a, b = _operands("uniform", rng, m, n, k, dtype)
    c0 = rng.uniform(-1, 1, (m, n)).astype(dtype)
    results, fell_back = {}, {}
    for name, config in (("mma", int8.default_config()), ("wgmma", int8_wgmma.default_config())):
        results[name], outcome = _run("ozaki", a, b, c0, 1.5, 0.5, False, True, count, config)
        assert outcome is not None
        fell_back[name] = outcome.fell_back()
    assert fell_back["wgmma"] == fell_back["mma"]
    assert count is not None or not fell_back["mma"]
    np.testing.assert_array_equal(results["wgmma"], results["mma"])
    for choice in ("mma", "wgmma", "auto"):
        monkeypatch.setenv("TUNEDGEMM_OZAKI_GEMM", choice)
        got, outcome = _run("ozaki", a, b, c0, 1.5, 0.5, False, True, count)
        assert outcome is not None and outcome.fell_back() == fell_back["mma"]
        np.testing.assert_array_equal(got, results["mma"])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_guard_decides_as_the_reference(dtype) -> None:
    """The GPU's guard falls back exactly where tunedgemm.ozaki.unreliable flags an element
    (the NumPy reference), on uniform inputs at scales 2^-40..2^40 per row and column (never),
    exponents spread over 2^-10..2^10 at long k and over 2^-30..2^30 (at the default count)."""
    rng = np.random.default_rng()
    count = ozaki.default_count(np.dtype(dtype))
    cases = []
    for k in (16, 1000):
        a, b = _operands("uniform", rng, 96, 80, k, dtype)
        scale_a = np.exp2(rng.integers(-40, 41, (96, 1)))
        cases.append((a * scale_a.astype(dtype), b * np.exp2(rng.integers(-40, 41, (1, 80)))
                      .astype(dtype)))  # fmt: skip
        cases.append(_operands("spread", rng, 96, 80, k, dtype))
    for r in (10,):
        a = rng.uniform(-1, 1, (96, 2000)) * np.exp2(rng.integers(-r, r + 1, (96, 2000)))
        b = rng.uniform(-1, 1, (2000, 80)) * np.exp2(rng.integers(-r, r + 1, (2000, 80)))
        cases.append((a.astype(dtype), b.astype(dtype)))
    for index, (a, b) in enumerate(cases):
        flagged = ozaki.unreliable(a, b, ozaki.scale(a, b, count), np.dtype(dtype))
        c0 = np.full(flagged.shape, np.nan, dtype)
        _, outcome = _run("ozaki", a, b, c0, 1.0, 0.0, False, False)
        assert outcome is not None
        assert outcome.fell_back() == bool(flagged.any()), (index, int(flagged.sum()))
        if index % 2 == 0 and index < 4:
            assert not flagged.any()  # uniform inputs, at any scale, stay emulated


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_spread_inputs_fall_back_say_why_and_leave_c(dtype) -> None:
    """Exponents over 2^-30..2^30 at k = 16: the guard trips, C is untouched (beta = 1 reads
    it), the reason names the moduli count, and the public call's plan says so in explain()
    while its result is IEEE arithmetic's."""
    import pycuda.gpuarray as gpuarray

    import tunedgemm

    rng = np.random.default_rng()
    a, b = _operands("spread", rng, 256, 256, 16, dtype)
    count = ozaki.default_count(np.dtype(dtype))
    c0 = rng.uniform(-1, 1, (256, 256)).astype(dtype)
    got, outcome = _run("ozaki", a, b, c0, 1.0, 1.0, False, False)
    assert outcome is not None and outcome.fell_back()
    assert outcome.reason == f"exponents of A or B spread too widely for {count} moduli"
    np.testing.assert_array_equal(got, c0)
    da, db = gpuarray.to_gpu(np.asfortranarray(a)), gpuarray.to_gpu(np.asfortranarray(b))
    plan = tunedgemm.plan(da, db, precision=f"ozaki-{count}")  # emulated at any speed
    result = plan.run(da, db).get()
    text = plan.explain()
    assert f"Ozaki scheme II with {count} moduli" in text, text
    assert f"latest call fell back to IEEE: exponents of A or B spread too widely for {count} "\
        "moduli" in text, text  # fmt: skip
    native, _ = _run("cublas", a, b, np.zeros((256, 256), dtype), 1.0, 0.0, False, False)
    tol = 8 * np.finfo(dtype).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert np.all(np.abs(result - native) <= tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_public_ozaki_calls_device_and_host(dtype) -> None:
    """precision="ozaki-N" through the public calls, on device arrays (a plan) and on host
    arrays (the pipeline): emulated (explain says so), within the dtype's IEEE tolerance.
    (Plain "ozaki" runs IEEE arithmetic at this size, where it is faster: the next test.)"""
    import pycuda.gpuarray as gpuarray

    import tunedgemm
    from tunedgemm import checks

    rng = np.random.default_rng()
    m, n, k = 700, 600, 900
    a, b = _operands("uniform", rng, m, n, k, dtype)
    da, db = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    gemm = tunedgemm.sgemm if dtype == np.float32 else tunedgemm.dgemm
    count = ozaki.default_count(np.dtype(dtype))
    mode = f"ozaki-{count}"
    plan = tunedgemm.plan(da, db, precision=mode)
    for out in (plan.run(da, db).get(), tunedgemm.matmul(da, db, precision=mode).get(),
                gemm(1.0, a, b, precision=mode)):  # fmt: skip
        ok, error, tol = checks.check(np.asarray(out), 1.0, a, b, 0.0, None, dtype)
        assert ok, f"scaled error {error:.3e} > tolerance {tol:.3e}"
    text = plan.explain()
    assert f"precision={mode}" in text and f"{count} moduli" in text, text
    assert text.endswith("latest call emulated"), text
    host = tunedgemm.explain(m, n, k, np.dtype(dtype).name, precision="ozaki")
    assert f"Ozaki scheme II with {count} moduli" in host, host


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_plain_ozaki_runs_ieee_where_the_emulation_is_slower(dtype) -> None:
    """At 256^3 the emulation's ten launches cost more than one IEEE GEMM: plain "ozaki" times
    both when its plan is made, runs IEEE arithmetic, says so, and is right."""
    import pycuda.gpuarray as gpuarray

    import tunedgemm
    from tunedgemm import checks

    rng = np.random.default_rng()
    a, b = _operands("uniform", rng, 256, 256, 256, dtype)
    da, db = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    plan = tunedgemm.plan(da, db, precision="ozaki")
    out = plan.run(da, db).get()
    ok, error, tol = checks.check(np.asarray(out), 1.0, a, b, 0.0, None, dtype)
    assert ok, f"scaled error {error:.3e} > tolerance {tol:.3e}"
    assert "IEEE arithmetic, faster here than the emulation" in plan.explain(), plan.explain()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_alpha_beta_and_the_reference_arithmetic(dtype) -> None:
    """alpha and beta with BLAS semantics; the product matches tunedgemm.ozaki.gemm (the NumPy
    reference) to the last rounding of alpha X + beta C."""
    rng = np.random.default_rng()
    m, n, k = 70, 50, 300
    a, b = _operands("uniform", rng, m, n, k, dtype)
    c0 = rng.uniform(-1, 1, (m, n)).astype(dtype)
    got, outcome = _run("ozaki", a, b, c0, 0.75, -1.5, False, False)
    assert outcome is not None and not outcome.fell_back()
    product = ozaki.gemm(a, b).result.astype(np.float64)
    want = 0.75 * product - 1.5 * c0.astype(np.float64)
    tol = np.finfo(dtype).eps * 4 * (np.abs(want) + np.abs(c0))
    assert np.all(np.abs(got - want) <= tol)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_falls_back_and_leaves_c(bad: float) -> None:
    from tunedgemm import reference

    rng = np.random.default_rng()
    a, b = _operands("uniform", rng, 40, 30, 64, np.float64)
    b[5, 7] = bad
    c0 = rng.uniform(-1, 1, (40, 30))
    got, outcome = _run("ozaki", a, b, c0, 1.0, 1.0, False, False)
    assert outcome is not None and outcome.fell_back() and "Inf or NaN" in str(outcome.reason)
    np.testing.assert_array_equal(got, c0)  # the reconstruction wrote nothing
    # gemm_or_ieee then runs the caller's IEEE GEMM on the same stream.
    da, db = _to_device(a.ravel(order="F")), _to_device(b.ravel(order="F"))
    dc = _to_device(c0.ravel(order="F"))
    form = BlasForm(False, False, 40, 30, 64, int(da.gpudata), 40, int(db.gpudata), 64,
                    int(dc.gpudata), 40, 8)  # fmt: skip
    reason = ozaki_device.gemm_or_ieee(form, "float64", 1.0, 1.0, 0,
                                       lambda: reference.gemm(form, np.dtype(np.float64), 1.0,
                                                              1.0, 0))  # fmt: skip
    assert reason is not None
    want = a @ b + c0
    result = dc.get().reshape((30, 40)).T
    np.testing.assert_array_equal(np.isnan(result), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(result[finite], want[finite], rtol=1e-12)
