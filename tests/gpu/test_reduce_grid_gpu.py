"""The split-K reduction's thread per element (launch.Plan.reduce_grid, where the 16-byte grid
leaves SMs idle) gives the bits of the 16-byte grid: simt's, dmma's and tf32's defaults split
7 and 64 ways at small m x n, every transpose pair, padded and not, beta 0 (C poisoned by NaN)
and not, every element written, within the float64 reference's bound:

    python -m pytest -q -m gpu tests/gpu/test_reduce_grid_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import precompile_variants, whole_c

from tunedgemm import checks, cuda, gpu_backend, launch
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig
from tunedgemm.tuning import problems

pytestmark = pytest.mark.gpu

# m x n under one 16-byte block per SM (aligned: m x n / 4 or / 2 under 256 x 132), odd edges.
SHAPES = [(67, 43, 5193), (37, 45, 1037), (130, 7, 515)]
SPLITS = (7, 64)
FAMILY_DTYPES = (("simt", "float32"), ("dmma", "float64"), ("tf32", "float32"))


def _configs() -> list[tuple[str, KernelConfig]]:
    found = []
    for (name, dtype), split in itertools.product(FAMILY_DTYPES, SPLITS):
        base = FAMILIES[name].default_config(dtype).as_dict()
        found.append((dtype, KernelConfig.make(name, {**base, "SPLIT_K": split})))
    return found


@pytest.mark.parametrize(("dtype", "config"), _configs(), ids=lambda v: str(v)[:60])
def test_thread_per_element_gives_the_16_byte_grids_bits(dtype, config, monkeypatch):
    precompile_variants([config], dtype, list(itertools.product((False, True), repeat=2)))
    rng = np.random.default_rng()
    for (m, n, k), (ta, tb), padded in itertools.product(
            SHAPES, itertools.product((False, True), repeat=2), (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        plan = launch.plan(config, dtype, ta, tb, problem.form.aligned())
        one_each = (-(-m * n // launch.REDUCE_THREADS), 1, 1)
        assert plan.reduce_grid(m, n, cuda.sm_count()) == one_each, (m, n, plan.reduce_vector)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            where = f"{config} at {(m, n, k, ta, tb, padded, alpha, beta)}"
            outs = []
            for spread in (False, True):
                monkeypatch.setattr(launch, "REDUCE_ONE_EACH", spread)
                problem.poison_c()
                if c0 is not None:
                    problem.set_c(c0)
                gpu_backend.run(problem.form, problem.dtype, alpha, beta, config)
                whole = whole_c(problem)
                assert np.isnan(whole[m:]).all(), f"wrote past row m, {where}"
                outs.append(whole[:m])
                assert np.isfinite(outs[-1]).all(), f"unwritten elements, {where}"
            assert outs[1].tobytes() == outs[0].tobytes(), f"not bit-equal, {where}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[1], exact, scale)
            assert error <= checks.tolerance(k, problem.dtype), f"error {error}, {where}"
