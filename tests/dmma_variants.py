"""What the GPU tests of dmma's measured-before-searched tunables (EPILOGUE, SPLITK_FUSED,
ADVANCE) share: a parallel compile of every variant of their configs, C read back whole, and
the check that variants of one config are accurate and bit-equal to each other.

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence

import numpy as np

from tunedgemm.params import KernelConfig


def precompile(configs: Iterable[KernelConfig]) -> None:
    """Every transpose x alignment variant of these configs, compiled in parallel before the
    first launch (a fresh machine would otherwise compile them one at a time)."""
    from tunedgemm.compiler import precompile as compile_all

    ordered = sorted(set(configs))
    for ta, tb, aligned in itertools.product((False, True), repeat=3):
        compile_all(ordered, "float64", ta, tb, aligned, jobs=os.cpu_count() or 4)


def whole_c(problem) -> np.ndarray:
    """C's buffer, ldc x n, padding rows included."""
    import pycuda.driver as drv

    form = problem.form
    whole = np.empty((form.ldc, form.n), np.float64, order="F")
    drv.memcpy_dtoh(whole.ravel(order="K"), form.c)
    return whole


def assert_variants_agree(configs: Sequence[KernelConfig], m: int, n: int, k: int) -> None:
    """Each config on fresh operands (all four transposes, padded and not, beta 0 and not, C
    poisoned by NaN first): every element of C written and none of the rows between m and
    ldc, bit-equal to the first config's result, and that result within the float64
    reference's k-scaled tolerance."""
    from tunedgemm import checks, gpu_backend
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (ta, tb), padded in itertools.product(itertools.product((False, True), repeat=2),
                                              (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, "float64", ta, tb, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n))
            where = f"{(m, n, k, ta, tb, padded, problem.form.aligned(), alpha, beta)}"
            outs = []
            for config in configs:
                if c0 is None:
                    problem.poison_c()
                else:
                    problem.set_c(c0)  # padding rows NaN
                gpu_backend.run(problem.form, problem.dtype, alpha, beta, config)
                whole = whole_c(problem)
                assert np.isnan(whole[m:]).all(), f"{config} wrote past row m at {where}"
                outs.append(whole[:m])
                assert np.isfinite(outs[-1]).all(), f"unwritten elements, {config} at {where}"
                assert outs[-1].tobytes() == outs[0].tobytes(), (
                    f"{config} not bit-equal to {configs[0]} at {where}")  # fmt: skip
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(max(k, 1), problem.dtype), f"error {error} at {where}"
