"""What the GPU tests of simt's measured-before-searched tunables (ADVANCE, ROLL_K; issue 15,
item 3) share: the configs they vary, the shapes, a parallel compile of every variant, and
the check that variants of one config are accurate and bit-equal to each other.

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import numpy as np

from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

SIMT = FAMILIES["simt"]

# The table's float32/NN 4096^3 config (tunedgemm.explain with TUNEDGEMM_CUBLAS=0); the
# tunables added since take their recorded (absent) values.
TUNED = SIMT.recorded({"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8,
                       "STAGES": 2, "GROUP_M": 16, "SPLIT_K": 1, "MIN_BLOCKS": 1,
                       "STREAM_K": 0}).as_dict()  # fmt: skip
BASES = {"tuned": TUNED, "default": SIMT.default_config("float32").as_dict()}
# m, n and k edges: k not a multiple of BK, one k-tile, a partial first vector, odd sizes.
SHAPES = [(512, 384, 1024), (777, 333, 555), (1, 1, 1), (5, 7, 3), (257, 129, 17),
          (300, 260, 16), (1024, 1024, 4099)]  # fmt: skip
TRANSPOSES = list(itertools.product((False, True), repeat=2))


def config(base: str, changes: Mapping[str, int]) -> KernelConfig:
    return KernelConfig.make("simt", {**BASES[base], **changes})


def allowed(base: str, changes: Mapping[str, int]) -> bool:
    """The family's constraints hold for the base with these changes."""
    return not SIMT.violations(config(base, changes), "float32")


def precompile(configs: Iterable[KernelConfig]) -> None:
    """Compile every transpose x alignment variant of these configs with nvcc in parallel
    (a fresh machine would otherwise compile them one at a time as the cases meet them)."""
    import os

    from tunedgemm import compiler, launch

    jobs = []
    for c, (ta, tb), aligned in itertools.product(configs, TRANSPOSES, (False, True)):
        plan = launch.plan(c, "float32", ta, tb, aligned)
        jobs.append((plan.source, dict(plan.defines)))
    compiler.precompile_raw(jobs, workers=os.cpu_count() or 4)


def assert_variants_agree(base: str, variants: list[Mapping[str, int]], m: int, n: int,
                          k: int) -> None:  # fmt: skip
    """Each variant of BASES[base] on fresh operands (all four transposes, padded and not,
    beta 0 and not, C poisoned by NaN first): every element written, bit-equal to the first
    variant's result, and that result within the float64 reference's k-scaled tolerance."""
    from tunedgemm import checks, gpu_backend
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (ta, tb), padded in itertools.product(TRANSPOSES, (False, True)):
        problem = problems.make(m, n, k, np.float32, ta, tb, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(np.float32)
            where = f"{(base, m, n, k, ta, tb, padded, problem.form.aligned(), alpha, beta)}"
            outs = []
            for changes in variants:
                problem.poison_c()
                if c0 is not None:
                    problem.set_c(c0)
                gpu_backend.run(problem.form, problem.dtype, alpha, beta, config(base, changes))
                outs.append(problem.c())
                assert np.isfinite(outs[-1]).all(), f"unwritten elements, {changes} at {where}"
                assert outs[-1].tobytes() == outs[0].tobytes(), (
                    f"{changes} not bit-equal to {variants[0]} at {where}")  # fmt: skip
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(max(k, 1), problem.dtype), f"error {error} at {where}"
