"""The last wave's split on the GPU (tunedgemm/tail_split.py, turned on for dmma here): a
planned float64 product whose shape gets it (its last block column in three launches on
three streams) writes every element (C poisoned by NaN first), is bit-equal from run to run,
and is right against float64 on the last block column and a sample of the others, in every
transpose pair, aligned and not, beta 0 and not:

    python -m pytest -q -m gpu tests/gpu/test_tail_split_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import run_twice

pytestmark = pytest.mark.gpu

# 28 x 19 = 532 tiles of 128 x 128: four waves of 132 blocks and 4 tiles more; k >= MIN_K.
# The second shape's odd dimensions leave the operands unaligned.
SHAPES = [(3584, 2432, 4096, True), (3583, 2431, 4097, False)]


@pytest.mark.parametrize("m,n,k,padded", SHAPES)
@pytest.mark.parametrize("ta,tb", list(itertools.product((False, True), repeat=2)))
def test_a_split_last_wave_is_right_and_bit_equal(monkeypatch, m, n, k, padded, ta, tb):
    import pycuda.driver as drv

    from tunedgemm import checks, cuda, plans, tail_split
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import IEEE, KernelConfig
    from tunedgemm.tuning import problems

    if cuda.sm_count() != 132:
        pytest.skip("the shapes are chosen for 132 SMs (H100, H200)")
    monkeypatch.setattr(tail_split, "FAMILIES", ("dmma",))  # (off by default: its comment)
    rng = np.random.default_rng()
    problem = problems.make(m, n, k, "float64", ta, tb, rng, padded=padded)
    form = problem.form
    config = KernelConfig.make("dmma", {**FAMILIES["dmma"].default_config("float64").as_dict(),
                                        "ADVANCE": 1})  # fmt: skip
    run = plans.launcher(plans.GemmKey.of(form, "float64", IEEE), config)
    assert isinstance(getattr(run, "parts", None), tail_split.TailSplit)
    last = (-(-n // 128) - 1) * 128  # the split block column, then 64 other columns
    cols = np.concatenate([np.sort(rng.choice(last, 64, replace=False)), np.arange(last, n)])
    def launch(alpha: float, beta: float) -> None:  # on the legacy stream, as problem.c reads
        run(form.a, form.b, form.c, alpha, beta, 0)
        drv.Context.synchronize()

    for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
        c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n))
        first, second = run_twice(problem, config, alpha, beta, c0, launch)
        where = f"{(m, n, k, ta, tb, form.aligned(), alpha, beta)}"
        assert np.isfinite(first).all(), f"unwritten elements at {where}"
        assert first.tobytes() == second.tobytes(), f"not bit-equal at {where}"
        exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b[:, cols], beta,
                                                None if c0 is None else c0[:, cols])  # fmt: skip
        error = checks.scaled_error(first[:, cols], exact, scale)
        assert error <= checks.tolerance(k, problem.dtype), f"error {error} at {where}"
