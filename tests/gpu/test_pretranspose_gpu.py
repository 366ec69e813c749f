"""TN and TT products with an operand transposed first, then an own kernel of the inner layout
(tunedgemm/pretranspose.py: A -> NN or NT, B -> TT), on the GPU.

Both dtypes, each runner in each layout it serves, odd shapes (m, n, k off every tile's
multiple), padded and unpadded leading dimensions, alpha and beta with C filled with NaN first:
every element written, within the float64 reference's K-scaled bound, bit-equal from run to
run, and bit-equal to the same config in the inner layout on the transposed operand laid out by
the host, called as autotuning calls it and through gpu_backend.run; without room for the
workspace, the default config's bits; and a public TN call large enough for autotuning to time
both kinds of runner:

    python -m pytest -q -m gpu tests/gpu/test_pretranspose_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import composed_runs

from tunedgemm import checks, gpu_backend, plans, pretranspose, selection, table
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 65, 70), (130, 1025, 257), (257, 300, 33), (1000, 1030, 513)]


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from tunedgemm import cuda

    if not cuda.status()[0]:
        pytest.skip("no GPU")


def _configs(dtype: str, trans_a: bool = False, trans_b: bool = False) -> list[KernelConfig]:
    """The family default and its twin (the faster main loop), as the inner layout's kernel."""
    default = selection.default_config(dtype)
    key = plans.GemmKey(dtype, "ieee", 512, 512, 512, trans_a, trans_b, 512, 512, 512, True)
    return list(dict.fromkeys([default, plans.fastest_twin(default, key)]))


def _inner_problem(problem, operand: str):
    """The inner layout's fixture problem on the same values: A^T (operand "a") or B^T ("b")
    laid out by the host, the other operand as stored."""
    from tunedgemm._layout import blas_form
    from tunedgemm.tuning import problems

    padded = problem.form.aligned()
    keep: list = []
    m, n = problem.op_a.shape[0], problem.op_b.shape[1]
    dc = problems._column_major(np.full((m, n), np.nan, problem.dtype, order="F"), keep, padded)
    if operand == "a":
        a, b = np.asfortranarray(problem.op_a), problem.b
        ta, tb = False, problem.trans_b
    else:
        a, b = problem.a, np.asfortranarray(problem.op_b.T)
        ta, tb = problem.trans_a, True
    da = problems._column_major(a, keep, padded)
    db = problems._column_major(b, keep, padded)
    form = blas_form(da.T if ta else da, db.T if tb else db, dc)
    inner = problems.DeviceProblem(a, b, ta, tb, form, problem.dtype, keep)
    inner.poison_c()
    return inner


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind,trans_b", [
    (pretranspose.TransposedA, False), (pretranspose.TransposedA, True),
    (pretranspose.TransposedB, False),
])  # fmt: skip
def test_transposed_runs_are_accurate_bit_equal_and_the_inner_layouts_bits(dtype, kind, trans_b):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    inner_layout = (kind.OPERAND == "b", trans_b or kind.OPERAND == "b")
    for (m, n, k), padded, config in itertools.product(SHAPES, (False, True),
                                                       _configs(dtype, *inner_layout)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, True, trans_b, rng, padded=padded)
        f = problem.form
        key = plans.GemmKey.of(f, dtype, "ieee")
        runner = kind(key, config, selection.default_config(dtype))
        inner = _inner_problem(problem, kind.OPERAND)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            what = (f"{runner}: {dtype} {m}x{n}x{k} trans_b={trans_b} padded={padded} "
                    f"alpha={alpha} beta={beta}")  # fmt: skip
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            outs = composed_runs(problem, runner, alpha, beta, c0)
            inner.poison_c() if c0 is None else inner.set_c(c0)
            gpu_backend.run(inner.form, inner.dtype, alpha, beta, config)
            assert np.isfinite(outs[0]).all(), f"unwritten elements: {what}"
            assert outs[0].tobytes() == outs[1].tobytes(), f"not bit-equal run to run: {what}"
            assert outs[0].tobytes() == inner.c().tobytes(), f"not the inner bits: {what}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(k, np.dtype(dtype)), f"error {error}: {what}"


@pytest.mark.parametrize("kind", [pretranspose.TransposedA, pretranspose.TransposedB])
def test_a_runner_without_room_for_its_workspace_runs_the_default_config_directly(
        monkeypatch, kind):  # fmt: skip
    """Where the workspace cannot be allocated, the runner warns once and gives the default
    config's bits on the operands as stored, every element written."""
    import warnings

    from tunedgemm import cuda
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    dtype, (m, n, k) = "float32", SHAPES[1]
    problem = problems.make(m, n, k, dtype, True, False, rng, padded=True)
    f = problem.form
    key = plans.GemmKey.of(f, dtype, "ieee")
    fallback = selection.default_config(dtype)
    runner = kind(key, _configs(dtype)[-1], fallback)
    monkeypatch.setattr(cuda, "allocate_if_free", lambda nbytes: None)
    monkeypatch.setattr(table, "_warned", set())  # (warned once a process)
    problem.poison_c()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner(f.a, f.b, f.c, 1.0, 0.0, 0)
    assert any(f"transposed {kind.OPERAND.upper()}" in str(w.message) for w in caught)
    ran = problem.c()
    problem.poison_c()
    gpu_backend.run(f, problem.dtype, 1.0, 0.0, fallback)
    assert np.isfinite(ran).all() and ran.tobytes() == problem.c().tobytes()


def test_a_public_tn_call_times_the_transposed_runners_and_is_right():
    """sgemm(trans_a=1) on GPUArrays at 1024 x 2048 x 512: autotuning times both kinds of
    runner (plans._composed), whichever it picks the result is right, and a second plan of the same
    key picks the same."""
    import pycuda.gpuarray as gpuarray

    from tunedgemm import autotune, sgemm

    rng = np.random.default_rng()
    m, n, k = 1024, 2048, 512
    a = rng.uniform(-1, 1, (k, m)).astype(np.float32, order="F")
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32, order="F")
    key = plans.GemmKey("float32", "ieee", m, n, k, True, False, k, k, m, True)
    assert pretranspose.candidates(key), "the shape is large enough to time them"
    plans.clear()
    c = gpuarray.to_gpu(np.full((m, n), np.nan, np.float32, order="F"))
    sgemm(1.0, gpuarray.to_gpu(a), gpuarray.to_gpu(b), c=c, trans_a=1, overwrite_c=1)
    timed = [r for r in autotune.history() if r["shape"][1:4] == (m, n, k)]
    for operand in "AB":  # (m >= FROM_M and n >= FROM_N: both kinds are timed)
        assert timed and any(s.startswith(f"{operand} transposed")
                             for s in timed[-1]["candidates"]), operand  # fmt: skip
    exact, scale = checks.float64_reference(1.0, a.T, b, 0.0, None)
    error = checks.scaled_error(c.get(), exact, scale)
    assert error <= checks.tolerance(k, np.dtype(np.float32))
