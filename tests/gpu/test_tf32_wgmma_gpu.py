"""The tf32_wgmma family (sm_90a) on the GPU, per precision mode, against a float64 reference.

Every config of the family's space with SPLIT_K 1 and 2, in every transpose pair, aligned and
not, on odd shapes, with C filled with NaN first (beta = 0 must not read it): tf32 within
checks.tf32_tolerance, 3xtf32 within the float32 tolerance of checks.check. Then 3xtf32's
error statistics against cuBLAS SGEMM's on the same operands (median and 99.9th percentile no
worse than 2x), and IEEE special values. Skips without an sm_90 GPU.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from tunedgemm.families.tf32_wgmma import FAMILY, default_for

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (7, 5, 3), (33, 17, 129), (129, 130, 65), (64, 1000, 37), (1000, 64, 513),
          (256, 256, 256), (200, 190, 1000)]  # fmt: skip
TRANS = list(itertools.product((False, True), repeat=2))
CONFIGS = [c for c in FAMILY.space("float32") if c["SPLIT_K"] in (1, 2) and c["CHAIN"] == 4]
IDS = [str(c) for c in CONFIGS]


@pytest.fixture(scope="module", autouse=True)
def _sm90():
    from tunedgemm import cuda

    if not cuda.status()[0]:
        pytest.skip("no GPU")
    if cuda.arch() != "sm_90":
        pytest.skip(f"wgmma needs sm_90 (this GPU: {cuda.arch()})")
    from tunedgemm.compiler import precompile

    for ta, tb, aligned in itertools.product((False, True), repeat=3):
        precompile(CONFIGS, "float32", ta, tb, aligned, jobs=os.cpu_count() or 4)


def assert_mode(out, mode, alpha, a, b, beta, c, what):
    from tunedgemm import checks

    assert np.isfinite(out).all(), f"{what}: unwritten, NaN or Inf elements"
    if mode == "3xtf32":
        ok, error, tol = checks.check(out, alpha, a, b, beta, c, np.float32)
        assert ok, f"{what}: scaled error {error:.3e} > float32 tolerance {tol:.3e}"
        return
    exact, scale = checks.float64_reference(alpha, a, b, beta, c)
    error = checks.scaled_error(out, exact, scale)
    tol = checks.tf32_tolerance(a.shape[1])
    assert error <= tol, f"{what}: scaled error {error:.3e} > tf32 bound {tol:.3e}"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@pytest.mark.parametrize("trans_a,trans_b", TRANS)
def test_shapes_transposes_alpha_beta(config, trans_a, trans_b):
    from tunedgemm import launch
    from tunedgemm.tuning import problems

    mode = FAMILY.precision_of(config.as_dict())
    rng = np.random.default_rng()
    for (m, n, k), padded in itertools.product(SHAPES, (False, True)):
        what = f"{config} {m}x{n}x{k} trans=({trans_a},{trans_b}) padded={padded}"
        problem = problems.make(m, n, k, np.float32, trans_a, trans_b, rng, padded=padded)
        launch.gemm(problem.form, problem.dtype, 1.0, 0.0, config)  # C is NaN: beta = 0
        assert_mode(problem.c(), mode, 1.0, problem.op_a, problem.op_b, 0.0, None, what)
        c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
        problem.set_c(c0)
        launch.gemm(problem.form, problem.dtype, -0.5, 1.5, config)
        assert_mode(problem.c(), mode, -0.5, problem.op_a, problem.op_b, 1.5, c0, what + " beta")


def _run_pair(config, a, b):
    """C = A B by config and by cuBLAS SGEMM on the same device operands (C starts as NaN)."""
    import pycuda.driver as drv

    from tunedgemm import gpu_backend, launch, reference
    from tunedgemm._layout import blas_form

    keep: list = []
    da = gpu_backend.upload(np.asfortranarray(a), keep)
    db = gpu_backend.upload(np.asfortranarray(b), keep)
    dc = gpu_backend.scratch((a.shape[0], b.shape[1]), np.dtype(np.float32), keep)
    form = blas_form(da, db, dc)
    outs = []
    for call in (lambda: launch.gemm(form, np.dtype(np.float32), 1.0, 0.0, config),
                 lambda: reference.gemm(form, np.dtype(np.float32), 1.0, 0.0)):  # fmt: skip
        drv.memcpy_htod(dc.ptr, np.full(a.shape[0] * b.shape[1], np.nan, np.float32))
        call()
        out = np.empty((a.shape[0], b.shape[1]), np.float32, order="F")
        drv.memcpy_dtoh(out.ravel(order="K"), dc.ptr)
        outs.append(out)
    return outs[0], outs[1]


SMALL_K_SPREAD = pytest.mark.xfail(
    strict=True,
    reason="one k-tile summed inside the tensor cores: median 2.05-2.09x cuBLAS SGEMM's at "
    "k = 16 with spread exponents (H100, 2026-11-23); the family serves no mode yet",
)


@pytest.mark.parametrize("inputs", ["uniform", "spread"])
@pytest.mark.parametrize("k", (16, 256, 4096, 8192))
def test_3xtf32_accuracy_against_cublas_sgemm(inputs, k, request):
    if (inputs, k) == ("spread", 16):
        request.applymarker(SMALL_K_SPREAD)
    rng = np.random.default_rng()
    m = n = 512
    if inputs == "uniform":
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    else:  # random signs and mantissas, exponents over 2^-20..2^20
        a, b = (
            (rng.uniform(1, 2, s) * rng.choice([-1.0, 1.0], s) * 2.0 ** rng.integers(-20, 21, s))
            .astype(np.float32) for s in ((m, k), (k, n)))  # fmt: skip
    ours, cublas = _run_pair(default_for("3xtf32"), a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    stats = {}
    for name, out in (("ours", ours), ("cublas", cublas)):
        assert np.isfinite(out).all(), f"{name}: unwritten or non-finite elements"
        rel = np.abs(out - exact) / scale
        stats[name] = (float(np.median(rel)), float(np.percentile(rel, 99.9)))
    ours_s, cublas_s = stats["ours"], stats["cublas"]
    assert ours_s[0] <= 2 * cublas_s[0], f"median {ours_s[0]:.3g} vs cuBLAS {cublas_s[0]:.3g}"
    assert ours_s[1] <= 2 * cublas_s[1], f"p99.9 {ours_s[1]:.3g} vs cuBLAS {cublas_s[1]:.3g}"


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_special_values_match_ieee(precision):
    """Inf, -Inf and NaN in the operands: C's non-finite pattern is cuBLAS SGEMM's."""
    rng = np.random.default_rng()
    m, n, k = 300, 200, 150
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    for x, values in ((a, [np.inf, -np.inf, np.nan, 0.0]), (b, [np.inf, -np.inf, 0.0, 1e-39])):
        x[rng.integers(0, x.shape[0], 25), rng.integers(0, x.shape[1], 25)] = rng.choice(
            np.array(values, np.float32), 25
        )
    ours, cublas = _run_pair(default_for(precision), a, b)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(cublas))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(cublas))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(cublas))
