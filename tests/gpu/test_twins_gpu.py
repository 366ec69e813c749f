"""Every family's twins compute the same bits as the config they are timed beside (issue 15):
autotuning may swap a table config for its twin (tunedgemm/plans.py, with_twins) only because
nothing changes but speed. For each family's default and a split-K config, each twin against
its config on shapes with m, n and k edges, all four transposes, aligned and not, beta 0 and
not, with C poisoned by NaN (beta 0) before each run:

    python -m pytest -q -m gpu tests/gpu/test_twins_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import run_twice

from tunedgemm import checks, plans
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 257, 33), (512, 384, 1024)]


def _pairs() -> list[tuple[str, KernelConfig, KernelConfig]]:
    found = []
    for name, dtype in (("dmma", "float64"), ("simt", "float32")):
        family = FAMILIES[name]
        default = family.default_config(dtype).as_dict()
        for base in (default, {**default, "SPLIT_K": 4}):
            config = KernelConfig.make(name, base)
            found += [(dtype, config, twin) for twin in plans.with_twins((config,), dtype)[1:]]
    return found


@pytest.mark.parametrize("dtype,config,twin", _pairs(), ids=str)
def test_a_twin_gives_its_configs_bits(dtype, config, twin):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (m, n, k), (ta, tb), padded in itertools.product(
            SHAPES, itertools.product((False, True), repeat=2), (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            mine, _ = run_twice(problem, config, alpha, beta, c0)
            theirs, again = run_twice(problem, twin, alpha, beta, c0)
            where = f"{(m, n, k, ta, tb, padded, alpha, beta)}"
            assert np.isfinite(theirs).all(), f"unwritten elements at {where}"
            assert theirs.tobytes() == mine.tobytes() == again.tobytes(), f"bits differ at {where}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            assert checks.scaled_error(theirs, exact, scale) <= checks.tolerance(k, problem.dtype)
