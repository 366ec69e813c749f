"""Each kernel family's configs on the GPU: float64 reference, cuBLAS, every element written."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from helpers import assert_gemm

from tunedgemm.families import FAMILIES
from tunedgemm.params import IEEE

pytestmark = pytest.mark.gpu

SHAPES = [
    (1, 1, 1),
    (5, 3, 2),
    (31, 33, 7),
    (127, 129, 65),
    (128, 128, 128),
    (257, 130, 300),
    (64, 1000, 37),
    (1000, 64, 513),
]
TRANS = list(itertools.product((False, True), repeat=2))


def configs(sample: int = 4):
    """Default config of each IEEE family and dtype, plus a fixed random sample of its space
    (the tensor-core precision modes have their own bounds: tests/gpu/test_tf32_gpu.py)."""
    picked = []
    for _name, family in sorted(FAMILIES.items()):
        for dtype in (d for d in family.dtypes if family.serves(d)):
            space = list(family.space(dtype, IEEE))
            default = family.default_config(dtype)
            others = random.Random(1234).sample(
                [c for c in space if c != default], min(sample, len(space) - 1)
            )
            picked += [pytest.param(c, dtype, id=f"{dtype}-{c}") for c in [default, *others]]
    return picked


@pytest.mark.parametrize("config,dtype", configs())
@pytest.mark.parametrize("trans_a,trans_b", TRANS)
def test_config_correct(config, dtype, trans_a, trans_b):
    from tunedgemm import gpu_backend
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for m, n, k in SHAPES:
        problem = problems.make(m, n, k, dtype, trans_a, trans_b, rng)  # C poisoned: NaN
        gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, config)
        out = problem.c()
        assert np.isfinite(out).all(), f"unwritten or NaN elements at {(m, n, k)}"
        assert_gemm(out, 1.0, problem.op_a, problem.op_b, 0.0, None, dtype)
        c0 = rng.uniform(-1, 1, (m, n)).astype(dtype)
        problem.set_c(c0)
        gpu_backend.run(problem.form, problem.dtype, -0.5, 1.5, config)
        assert_gemm(problem.c(), -0.5, problem.op_a, problem.op_b, 1.5, c0, dtype)


@pytest.mark.parametrize("config,dtype", configs(sample=0))
def test_unaligned_offsets(config, dtype):
    """Operands starting one element into a buffer take the unaligned path and stay right."""
    from tunedgemm import gpu_backend
    from tunedgemm._layout import DeviceMatrix, blas_form

    rng = np.random.default_rng()
    m, n, k = 130, 67, 91
    keep: list = []
    a = rng.uniform(-1, 1, (m + 1, k)).astype(dtype, order="F")
    b = rng.uniform(-1, 1, (k + 1, n)).astype(dtype, order="F")
    da = gpu_backend.upload(a, keep)
    db = gpu_backend.upload(b, keep)
    dc = gpu_backend.scratch((m, n), np.dtype(dtype), keep)
    item = np.dtype(dtype).itemsize
    sub_a = DeviceMatrix(da.ptr + item, (m, k), da.strides, da.dtype)
    sub_b = DeviceMatrix(db.ptr + item, (k, n), db.strides, db.dtype)
    form = blas_form(sub_a, sub_b, dc)
    assert not form.aligned()
    gpu_backend.run(form, np.dtype(dtype), 1.0, 0.0, config)
    import pycuda.driver as drv

    out = np.empty((m, n), dtype, order="F")
    drv.memcpy_dtoh(out.ravel(order="K"), dc.ptr)
    assert_gemm(out, 1.0, a[1:], b[1:], 0.0, None, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("trans_a,trans_b", TRANS)
def test_agrees_with_cublas(dtype, trans_a, trans_b):
    from tunedgemm import checks, gpu_backend, reference
    from tunedgemm.tuning import problems

    ok, why = reference.status()
    if not ok:
        pytest.skip(why)
    m, n, k = 513, 257, 1031
    problem = problems.make(m, n, k, dtype, trans_a, trans_b)
    gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0)
    ours = problem.c()
    problem.poison_c()
    reference.gemm(problem.form, problem.dtype, 1.0, 0.0)
    theirs = problem.c()
    exact, scale = checks.float64_reference(1.0, problem.op_a, problem.op_b, 0.0, None)
    tol = checks.tolerance(k, np.dtype(dtype))
    assert checks.scaled_error(theirs, exact, scale) <= tol  # the reference itself is sane
    assert checks.scaled_error(ours, theirs.astype(np.float64), scale) <= 2 * tol


def test_event_timer_measures_the_gpu_not_the_launches():
    """A 200 us hold timed by gpu_and_host_ms reads 200 us on the GPU, and a host that is slow
    to launch (1 ms of Python per launch) does not add to it: the launches queue behind the
    hold. The host part, and call_ms, see the slow launches."""
    import time

    from tunedgemm import timing

    def slow_launch() -> None:
        time.sleep(1e-3)
        timing._hold(200e-6, None)

    assert timing._hold_kernel() is not None
    gpu_ms, host_ms = timing.gpu_and_host_ms(lambda: timing._hold(200e-6, None), 1, 5)
    assert 0.19 < gpu_ms < 0.4 and host_ms < 0.19, (gpu_ms, host_ms)
    gpu_ms, host_ms = timing.gpu_and_host_ms(slow_launch, 1, 5)
    assert 0.19 < gpu_ms < 0.4 and host_ms >= 1.0, (gpu_ms, host_ms)
    assert timing.call_ms(slow_launch, 1, 5) >= 1.0
