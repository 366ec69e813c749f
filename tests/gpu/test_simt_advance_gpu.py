"""simt ADVANCE=1 (issue 15, item 3): the k-tile copies walk cursors set up once per block.
Named explicitly (simt.ADVANCE_ON: out of the search space until measured). Against float64
with C poisoned by NaN beforehand, for the 4096^3 NN table config and the family default,
all four transposes, aligned and not, beta 0 and not, shapes with m, n and k edges (k not a
multiple of BK, one k-tile, a partial first vector); and bit-equal to ADVANCE=0 (the same
fmas in the same k order, only the address arithmetic differs):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_advance_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tunedgemm import checks, gpu_backend
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

# The table's float32/NN 4096^3 config (tunedgemm.explain with TUNEDGEMM_CUBLAS=0).
TUNED = {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8, "STAGES": 2,
         "GROUP_M": 16, "SPLIT_K": 1, "MIN_BLOCKS": 1, "STREAM_K": 0}  # fmt: skip
BASES = {"tuned": TUNED, "default": FAMILIES["simt"].default_config("float32").as_dict()}
SHAPES = [(512, 384, 1024), (777, 333, 555), (1, 1, 1), (5, 7, 3), (257, 129, 17),
          (300, 260, 16), (1024, 1024, 4099)]  # fmt: skip


def _config(base: str, advance: int) -> KernelConfig:
    return KernelConfig.make("simt", {**BASES[base], "ADVANCE": advance})


@pytest.mark.parametrize("advance", simt.ADVANCE_ON)
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_advance_is_accurate_and_bit_equal_to_recomputed_addresses(advance, base, m, n, k):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (ta, tb), padded in itertools.product(itertools.product((False, True), repeat=2),
                                              (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, np.float32, ta, tb, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(np.float32)
            outs = []
            for adv in (0, advance):
                problem.poison_c()
                if c0 is not None:
                    problem.set_c(c0)
                gpu_backend.run(problem.form, problem.dtype, alpha, beta, _config(base, adv))
                outs.append(problem.c())
            where = f"{(base, m, n, k, ta, tb, padded, problem.form.aligned(), alpha, beta)}"
            assert np.isfinite(outs[1]).all(), f"unwritten elements at {where}"
            assert outs[0].tobytes() == outs[1].tobytes(), f"not bit-equal to ADVANCE=0 at {where}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[1], exact, scale)
            assert error <= checks.tolerance(max(k, 1), problem.dtype), f"error {error} at {where}"
