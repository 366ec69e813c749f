"""Every kernel config the shipped table can choose (each entry's best and its runners-up, in
every precision mode's entries too, each checked against its mode's bound) is correct on odd
shapes, every transpose pair, aligned and unaligned, with the output poisoned
with NaN beforehand. (tests/conftest.py compiles them all in parallel first.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import assert_config_result, table_configs

pytestmark = pytest.mark.gpu

SHAPES = [(33, 65, 17), (130, 67, 91), (257, 129, 300)]  # odd: edge tiles, unaligned lds


@pytest.mark.parametrize("dtype,config", table_configs(), ids=str)
def test_shipped_config(dtype, config):
    from tunedgemm import gpu_backend
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (m, n, k), (ta, tb) in itertools.product(SHAPES, itertools.product((False, True),
                                                                           repeat=2)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, ta, tb, rng)
        gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, config)
        out = problem.c()
        what = f"{config} {(m, n, k, ta, tb)}"
        assert np.isfinite(out).all(), f"unwritten elements at {what}"
        assert_config_result(out, 1.0, problem.op_a, problem.op_b, 0.0, None, dtype, config, what)
    aligned = problems.make(128, 64, 96, dtype, False, False, rng)
    assert aligned.form.aligned()
    gpu_backend.run(aligned.form, aligned.dtype, 1.0, 0.0, config)
    assert_config_result(aligned.c(), 1.0, aligned.op_a, aligned.op_b, 0.0, None, dtype, config,
                         f"{config} aligned")  # fmt: skip
