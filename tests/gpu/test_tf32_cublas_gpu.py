"""The "3xtf32" mode composed of cuBLAS's TF32 GEMM (tunedgemm/tf32_cublas.py) on the GPU.

Every transpose pair, aligned and not, odd shapes, alpha and beta, with C filled with NaN
first (beta = 0 must not read it), within float32's tolerance of a float64 reference; error
statistics against cuBLAS SGEMM's on the same operands (median and 99.9th percentile no worse
than 2x, the mode's bound) for uniform and spread exponents where the runner competes; IEEE
special values; and a public 3xtf32 call large enough for autotuning to time the composed runner:

    python -m pytest -q -m gpu tests/gpu/test_tf32_cublas_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import (
    assert_error_within_2x,
    assert_ieee_pattern,
    assert_tf32_mode,
    float32_against_cublas,
    special_operands,
    spread_float32,
)

from tunedgemm import plans, tf32_cublas
from tunedgemm._layout import BlasForm

pytestmark = pytest.mark.gpu

SHAPES = [(7, 5, 3), (33, 17, 129), (129, 130, 1025), (1000, 64, 513), (300, 700, 1500)]
TRANS = list(itertools.product((False, True), repeat=2))


@pytest.fixture(scope="module", autouse=True)
def _cublas():
    from tunedgemm import cuda, reference

    if not cuda.status()[0]:
        pytest.skip("no GPU")
    if not reference.status()[0]:
        pytest.skip("no cuBLAS")


def _runner(form: BlasForm) -> tf32_cublas.TF32x3OnCublas:
    return tf32_cublas.TF32x3OnCublas(plans.GemmKey.of(form, "float32", "3xtf32"))


@pytest.mark.parametrize("trans_a,trans_b", TRANS)
def test_shapes_transposes_alpha_beta(trans_a, trans_b):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (m, n, k), padded in itertools.product(SHAPES, (False, True)):
        what = f"{m}x{n}x{k} trans=({trans_a},{trans_b}) padded={padded}"
        problem = problems.make(m, n, k, np.float32, trans_a, trans_b, rng, padded=padded)
        f = problem.form
        run = _runner(f)
        run(f.a, f.b, f.c, 1.0, 0.0, 0)  # C is NaN: beta = 0
        assert_tf32_mode(problem.c(), "3xtf32", 1.0, problem.op_a, problem.op_b, 0.0, None,
                         what, frobenius=False)  # fmt: skip
        c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
        problem.set_c(c0)
        run(f.a, f.b, f.c, -0.5, 1.5, 0)
        assert_tf32_mode(problem.c(), "3xtf32", -0.5, problem.op_a, problem.op_b, 1.5, c0,
                         what + " beta", frobenius=False)  # fmt: skip


def _composed(a: np.ndarray, b: np.ndarray):
    """The runner for a (m x k) @ b (k x n) in float32_against_cublas's column-major layout."""
    m, k = a.shape
    n = b.shape[1]

    def run(pa: int, pb: int, pc: int, alpha: float, beta: float, stream: int) -> None:
        form = BlasForm(False, False, m, n, k, pa, m, pb, k, pc, m, 4)
        _runner(form)(pa, pb, pc, alpha, beta, stream)

    return run


@pytest.mark.parametrize("inputs", ["uniform", "spread"])
@pytest.mark.parametrize("k", (tf32_cublas.MIN_K, 16384))
def test_accuracy_against_cublas_sgemm_where_it_competes(inputs, k):
    """At the smallest m = n and k the runner is offered for, and at a long k: its error over
    cuBLAS SGEMM's on a 256 x 256 sample (float64 reference) is within the mode's 2x."""
    rng = np.random.default_rng()
    m = n = tf32_cublas.MIN_MN
    if inputs == "uniform":
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    else:
        a, b = spread_float32(rng, (m, k)), spread_float32(rng, (k, n))
    ours, cublas = float32_against_cublas(_composed(a, b), a, b)
    rows, cols = rng.choice(m, 256, replace=False), rng.choice(n, 256, replace=False)
    sample = np.ix_(rows, cols)
    assert_error_within_2x(ours[sample], cublas[sample], a[rows], b[:, cols])


def test_special_values_match_ieee():
    """Inf, -Inf, NaN, zeros and a subnormal in the operands: C's non-finite pattern is cuBLAS
    SGEMM's (the finish pass recomputes non-finite sums in IEEE arithmetic)."""
    a, b = special_operands(np.random.default_rng(), 300, 200, 1500)
    ours, cublas = float32_against_cublas(_composed(a, b), a, b)
    assert_ieee_pattern(ours, cublas)
    finite = np.isfinite(cublas)
    np.testing.assert_allclose(ours[finite], cublas[finite], rtol=1e-4, atol=1e-3)


def test_public_3xtf32_call_large_enough_to_time_the_composed_runner():
    import pycuda.gpuarray as gpuarray

    import tunedgemm
    from tunedgemm import checks

    rng = np.random.default_rng()
    m, n, k = 2100, 2300, 4500  # above tf32_cublas.MIN_MN and MIN_K, odd edges
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    da, db = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    out = tunedgemm.matmul(da, db, precision="3xtf32").get()
    ok, error, tol = checks.check(out, 1.0, a, b, 0.0, None, np.float32)
    assert ok, f"scaled error {error:.3e} > float32 tolerance {tol:.3e}"
    assert "3xtf32" in tunedgemm.plan(da, db, precision="3xtf32").explain()
