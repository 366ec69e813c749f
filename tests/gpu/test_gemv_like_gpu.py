"""GEMV-like products by the panel kernels (tunedgemm/gemv_like.py, kernels/gemm_gemv.cu and
kernels/gemm_gemv_staged.cu), on the GPU.

Both dtypes, both sides of C short, every transpose pair (so the long operand runs along k and
along C's long side), short sides of 1 to 16 and off the block's SHORT, long sides and k off
every block's and chunk's multiple, padded and unpadded leading dimensions, unsplit and split
k (with slices left empty), alpha and beta with C filled with NaN first: every element written,
within the float64 reference's K-scaled bound, bit-equal from run to run, called as autotuning
calls it and through gpu_backend.run; and a public call at a GEMV-like shape with own kernels
only, right whichever candidate autotuning keeps:

    python -m pytest -q -m gpu tests/gpu/test_gemv_like_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import composed_runs

from tunedgemm import checks, gemv_like, plans

pytestmark = pytest.mark.gpu

# (short side, long side, k): short sides that fill SHORT, fall between, or are 1; long sides
# and k off 32, 128 and the 256-deep chunk.
SIZES = [(1, 1000, 777), (3, 257, 3001), (16, 130, 513), (13, 2100, 64), (5, 33, 5)]
PAIRS = list(itertools.product((False, True), repeat=2))


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from tunedgemm import compiler, cuda

    if not cuda.status()[0]:
        pytest.skip("no GPU")
    jobs = [(config.source(), config.defines(dtype, *pair, aligned))
            for dtype, side, pair in itertools.product(("float32", "float64"), (0, 1), PAIRS)
            for _, _, config in _cases(side, pair, dtype) for aligned in (False, True)]  # fmt: skip
    compiler.precompile_raw(jobs)


def _cases(side: int, pair, dtype: str):
    """(size, padded, config) of the runs at one side: each size padded and not, the block's
    LONG and the k-split taking turns, so that every size meets each; where the long operand
    runs along k and the short side is at least STAGED_FROM, the staged kernel's too, its
    LONGs and the other split taking turns."""
    along_k = not pair[1] if side == 0 else pair[0]
    staged_longs = gemv_like.STAGED_LONGS[dtype]
    for index, (size, padded) in enumerate(itertools.product(SIZES, (False, True))):
        short = gemv_like.short_tile(size[0])
        long, split = gemv_like.LONGS[index % 2], (1, 3)[index // 2 % 2]
        yield size, padded, gemv_like.GemvConfig(side, short, long, gemv_like.WARPS, split)
        if along_k and short >= gemv_like.STAGED_FROM:
            long, split = staged_longs[index % len(staged_longs)], (3, 1)[index // 2 % 2]
            yield size, padded, gemv_like.GemvConfig(side, short, long, gemv_like.WARPS, split,
                                                     staged=True)  # fmt: skip


def _problem(side: int, size: tuple[int, int, int], dtype: str, pair, padded: bool, rng):
    from tunedgemm.tuning import problems

    short, long_side, k = size
    m, n = (short, long_side) if side == 0 else (long_side, short)
    return problems.make(m, n, k, dtype, *pair, rng, padded=padded)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("side", [0, 1])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "".join("T" if t else "N" for t in p))
def test_panels_are_accurate_and_bit_equal(dtype, side, pair):
    rng = np.random.default_rng()
    for size, padded, config in _cases(side, pair, dtype):
        problem = _problem(side, size, dtype, pair, padded, rng)
        f = problem.form
        key = plans.GemmKey.of(f, dtype, "ieee")
        runner = gemv_like.GemvLike(key, config)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            what = f"{config}: {dtype} {f.m}x{f.n}x{f.k} {pair} padded={padded} beta={beta}"
            c0 = None if beta == 0 else rng.uniform(-1, 1, (f.m, f.n)).astype(dtype)
            outs = composed_runs(problem, runner, alpha, beta, c0)
            assert np.isfinite(outs[0]).all(), f"unwritten elements: {what}"
            assert outs[0].tobytes() == outs[1].tobytes(), f"not bit-equal run to run: {what}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(f.k, np.dtype(dtype)), f"error {error}: {what}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 8192, 4096), (8192, 2, 4096)])
def test_a_public_gemv_like_call_times_the_panels_and_is_right(monkeypatch, dtype, shape):
    """sgemm/dgemm into c on GPUArrays, own kernels only: autotuning times the panel runners
    (plans._composed), and the result is right whichever it keeps."""
    import pycuda.gpuarray as gpuarray

    import tunedgemm as tg
    from tunedgemm import autotune, selection

    monkeypatch.setenv(selection.CUBLAS_ENV, "0")
    monkeypatch.setattr(gemv_like, "ENABLED", True)
    plans.clear()
    rng = np.random.default_rng()
    m, n, k = shape
    a = rng.uniform(-1, 1, (m, k)).astype(dtype, order="F")
    b = rng.uniform(-1, 1, (k, n)).astype(dtype, order="F")
    c = gpuarray.to_gpu(np.full((m, n), np.nan, dtype, order="F"))
    routine = tg.sgemm if dtype == "float32" else tg.dgemm
    routine(1.0, gpuarray.to_gpu(a), gpuarray.to_gpu(b), c=c, overwrite_c=1)
    timed = [r for r in autotune.history() if r["shape"][1:4] == (m, n, k)]
    assert timed and any(x.startswith("gemv(") for x in timed[-1]["candidates"])
    exact, scale = checks.float64_reference(1.0, a, b, 0.0, None)
    error = checks.scaled_error(c.get(), exact, scale)
    assert error <= checks.tolerance(k, np.dtype(dtype)), f"error {error}"
    plans.clear()
