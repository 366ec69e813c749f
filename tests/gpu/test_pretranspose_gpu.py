"""TN and TT products as A transposed, then an own NN or NT kernel (tunedgemm/pretranspose.py),
on the GPU.

Both dtypes, both layouts, odd shapes (m, n, k off every tile's multiple), padded and unpadded
leading dimensions, alpha and beta with C filled with NaN first: every element written, within
the float64 reference's K-scaled bound, bit-equal from run to run, and bit-equal to the same
config as NN or NT on A^T laid out by the host, called as autotuning calls it and through
gpu_backend.run; without room for the workspace, the default config's bits; and a public TN
call large enough for autotuning to time the transposed runners:

    python -m pytest -q -m gpu tests/gpu/test_pretranspose_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tunedgemm import checks, gpu_backend, plans, pretranspose, selection, table
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 65, 70), (130, 1025, 257), (257, 300, 33), (1000, 1030, 513)]


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from tunedgemm import cuda

    if not cuda.status()[0]:
        pytest.skip("no GPU")


def _configs(dtype: str) -> list[KernelConfig]:
    """The family default and its twin (the faster main loop), as the NN kernel."""
    default = selection.default_config(dtype)
    key = plans.GemmKey(dtype, "ieee", 512, 512, 512, False, False, 512, 512, 512, True)
    return list(dict.fromkeys([default, pretranspose._fastest_twin(default, key)]))


def _inner_problem(problem):
    """An NN or NT fixture problem on the same values: A^T laid out by the host, and B as
    stored."""
    from tunedgemm._layout import blas_form
    from tunedgemm.tuning import problems

    padded = problem.form.aligned()
    a = np.asfortranarray(problem.op_a)
    keep: list = []
    da = problems._column_major(a, keep, padded)
    db = problems._column_major(problem.b, keep, padded)
    m, n = a.shape[0], problem.op_b.shape[1]
    dc = problems._column_major(np.full((m, n), np.nan, problem.dtype, order="F"), keep, padded)
    tb = problem.trans_b
    form = blas_form(da, db.T if tb else db, dc)
    nn = problems.DeviceProblem(a, problem.b, False, tb, form, problem.dtype, keep)
    nn.poison_c()
    return nn


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("trans_b", [False, True])
def test_transposed_runs_are_accurate_bit_equal_and_the_inner_layouts_bits(dtype, trans_b):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (m, n, k), padded, config in itertools.product(SHAPES, (False, True), _configs(dtype)):
        problem = problems.make(m, n, k, dtype, True, trans_b, rng, padded=padded)
        f = problem.form
        key = plans.GemmKey.of(f, dtype, "ieee")
        runner = pretranspose.TransposedA(key, config, selection.default_config(dtype))
        nn = _inner_problem(problem)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            what = (f"{dtype} {m}x{n}x{k} trans_b={trans_b} padded={padded} {config} "
                    f"alpha={alpha} beta={beta}")  # fmt: skip
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            outs = []
            for through_backend in (False, True):  # as autotuning calls it, then as verify does
                problem.poison_c() if c0 is None else problem.set_c(c0)
                if through_backend:
                    assert gpu_backend.run(f, problem.dtype, alpha, beta, runner) is runner
                else:
                    runner(f.a, f.b, f.c, alpha, beta, 0)
                outs.append(problem.c())
            nn.poison_c() if c0 is None else nn.set_c(c0)
            gpu_backend.run(nn.form, nn.dtype, alpha, beta, config)
            assert np.isfinite(outs[0]).all(), f"unwritten elements: {what}"
            assert outs[0].tobytes() == outs[1].tobytes(), f"not bit-equal run to run: {what}"
            assert outs[0].tobytes() == nn.c().tobytes(), f"not the inner bits on A^T: {what}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(k, np.dtype(dtype)), f"error {error}: {what}"


def test_a_runner_without_room_for_its_workspace_runs_the_default_config_directly(monkeypatch):
    """Where the workspace cannot be allocated, the runner warns once and gives the default
    config's bits on A as stored, every element written."""
    import warnings

    from tunedgemm import cuda
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    dtype, (m, n, k) = "float32", SHAPES[1]
    problem = problems.make(m, n, k, dtype, True, False, rng, padded=True)
    f = problem.form
    key = plans.GemmKey.of(f, dtype, "ieee")
    fallback = selection.default_config(dtype)
    runner = pretranspose.TransposedA(key, _configs(dtype)[-1], fallback)
    monkeypatch.setattr(cuda, "allocate_if_free", lambda nbytes: None)
    monkeypatch.setattr(table, "_warned", set())  # (warned once a process)
    problem.poison_c()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner(f.a, f.b, f.c, 1.0, 0.0, 0)
    assert any("transposed A" in str(w.message) for w in caught)
    ran = problem.c()
    problem.poison_c()
    gpu_backend.run(f, problem.dtype, 1.0, 0.0, fallback)
    assert np.isfinite(ran).all() and ran.tobytes() == problem.c().tobytes()


def test_a_public_tn_call_times_the_transposed_runners_and_is_right():
    """sgemm(trans_a=1) on GPUArrays at 1024 x 2048 x 512: autotuning times the runners
    (plans._composed), whichever it picks the result is right, and a second plan of the same
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
    assert timed and any(s.startswith("A transposed") for s in timed[-1]["candidates"])
    exact, scale = checks.float64_reference(1.0, a.T, b, 0.0, None)
    error = checks.scaled_error(c.get(), exact, scale)
    assert error <= checks.tolerance(k, np.dtype(np.float32))
