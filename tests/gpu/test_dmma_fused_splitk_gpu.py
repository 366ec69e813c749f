"""dmma SPLITK_FUSED (issue 13 and 15): split-K's slices summed by each tile's last k-slice block in
the same launch, against splitk_reduce's second launch. The same sums in the same order, so the
results must be bit-equal; each is also checked against float64, with C poisoned by NaN (beta
== 0 must not read it) and the rows between m and ldc left as they were. Shapes leave k-slices
without a k-tile (k = 20: they still count on their tile's flag); calls of several shapes run
back to back on one stream and on a second stream, since each launch must leave the tile flags
it used at 0 for the next:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_fused_splitk_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dmma_variants import precompile, whole_c

from tunedgemm import checks, gpu_backend
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

FAMILY = FAMILIES["dmma"]
BASE = FAMILY.default_config("float64").as_dict()
CHANGES = {
    "split2": {"SPLIT_K": 2},
    "split4-64x64": {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "BK": 32, "SPLIT_K": 4,
                     "STAGES": 4, "GROUP_M": 1},
    "split4-group8": {"BM": 64, "BN": 128, "WM": 32, "WN": 32, "SPLIT_K": 4, "GROUP_M": 8},
}  # fmt: skip
SHAPES = [(131, 67, 93), (257, 130, 300), (1, 9, 5), (65, 200, 20), (200, 17, 1037),
          (256, 256, 256), (512, 512, 512)]  # fmt: skip
TRANS = list(itertools.product((False, True), repeat=2))


def _pair(change: dict[str, int]) -> tuple[KernelConfig, KernelConfig]:
    two = KernelConfig.make("dmma", {**BASE, **change, "SPLITK_FUSED": 0})
    one = KernelConfig.make("dmma", {**BASE, **change, "SPLITK_FUSED": dmma.SPLITK_FUSED_ON[0]})
    for config in (two, one):
        assert FAMILY.violations(config, "float64") == [], config
    return two, one


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(c for change in CHANGES.values() for c in _pair(change))


def _run(problem, config, alpha, beta, c0, stream=None) -> np.ndarray:
    if c0 is None:
        problem.poison_c()
    else:
        problem.set_c(c0)  # padding rows NaN
    gpu_backend.run(problem.form, problem.dtype, alpha, beta, config, stream=stream)
    if stream is not None:
        stream.synchronize()
    return whole_c(problem)


@pytest.mark.parametrize("name", sorted(CHANGES))
@pytest.mark.parametrize("trans_a,trans_b", TRANS)
def test_fused_split_k_is_bit_equal_to_the_reduce_launch_and_accurate(name, trans_a, trans_b):
    from tunedgemm.tuning import problems

    two, one = _pair(CHANGES[name])
    rng = np.random.default_rng()
    for (m, n, k), padded in itertools.product(SHAPES, (False, True)):
        problem = problems.make(m, n, k, "float64", trans_a, trans_b, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n))
            where = (name, m, n, k, trans_a, trans_b, padded, alpha, beta)
            outs = []
            for config in (two, one, one):  # the fused twice: its flags were left at 0
                whole = _run(problem, config, alpha, beta, c0)
                assert np.isnan(whole[m:]).all(), f"{config} wrote past row m at {where}"
                outs.append(whole[:m])
            assert np.isfinite(outs[1]).all(), f"unwritten elements at {where}"
            assert outs[0].tobytes() == outs[1].tobytes(), f"not bit-equal at {where}"
            assert outs[1].tobytes() == outs[2].tobytes(), f"second launch differs at {where}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[1], exact, scale)
            assert error <= checks.tolerance(k, problem.dtype), f"error {error} at {where}"


def test_fused_split_k_on_a_second_stream_and_with_many_tiles():
    """Another stream has flags of its own (zeroed there before first use), and a grid of
    more tiles than any call before it finds its flags at 0."""
    import pycuda.driver as drv

    from tunedgemm.tuning import problems

    _, one = _pair(CHANGES["split4-64x64"])
    rng = np.random.default_rng()
    stream = drv.Stream()
    for m, n, k in ((300, 200, 700), (2000, 1500, 300), (64, 64, 64)):
        problem = problems.make(m, n, k, "float64", False, False, rng, padded=True)
        for s in (stream, None):
            out = _run(problem, one, 1.0, 0.0, None, stream=s)[:m]
            exact, scale = checks.float64_reference(1.0, problem.op_a, problem.op_b, 0.0, None)
            error = checks.scaled_error(out, exact, scale)
            assert error <= checks.tolerance(k, problem.dtype), f"error {error} at {(m, n, k)}"
