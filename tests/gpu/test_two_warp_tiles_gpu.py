"""simt's two-warp twin on the GPU (simt.TWO_WARP: 32 x 64 warp tiles of 8 x 8 a thread, four
blocks an SM): the space's four-warp 64 x 64 (8 x 4 a thread) as two warps, and its 128 x 64
tiles at BK 8 as four 32 x 64 warps. Each element's sum takes the same k-steps in the same
order as in the config it comes from (the same BK, k-split and main loop), so it gives the
same bits; checked on shapes with m, n and k edges, all four transposes, aligned and not,
beta 0 and not, C poisoned by NaN (helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_two_warp_tiles_gpu.py
"""

from __future__ import annotations

import itertools

import pytest
from helpers import assert_configs_agree, precompile_variants

from tunedgemm import plans
from tunedgemm.families import simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 57, 1033), (65, 1292, 1285)]
# (BM, BN, WM, WN, TM, TN, BK, SPLIT_K): the space's 64 x 64 (the table's most common
# arrangement), and a 128 x 64 of 64 x 32 warp tiles at BK 8.
CASES = [(64, 64, 32, 32, 8, 4, 16, 1), (64, 64, 32, 32, 8, 4, 16, 8),
         (64, 64, 32, 32, 8, 4, 8, 2), (128, 64, 64, 32, 8, 8, 8, 3)]  # fmt: skip
NAMES = ("BM", "BN", "WM", "WN", "TM", "TN", "BK", "SPLIT_K")


def _configs(case: tuple[int, ...]) -> list[KernelConfig]:
    """The case's config (STAGES 2, two blocks an SM), then its twins: the loop twin and the
    loop twin's two-warp arrangement."""
    config = KernelConfig.make("simt", {**simt.FAMILY.default_config("float32").as_dict(),
                                        "STAGES": 2, "MIN_BLOCKS": 2,
                                        **dict(zip(NAMES, case, strict=True))})  # fmt: skip
    configs = list(plans.with_twins((config,), "float32"))
    assert [c.as_dict()["MIN_BLOCKS"] for c in configs] == [2, 2, 4], configs
    return configs


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every variant this module launches, compiled in parallel first."""
    configs = [c for case in CASES for c in _configs(case)]
    precompile_variants(configs, "float32", list(itertools.product((False, True), repeat=2)))


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(map(str, case)))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_two_warp_twin_gives_its_configs_bits(case, m, n, k):
    assert_configs_agree(_configs(case), "float32", m, n, k)
