"""Narrow tiles on the GPU (simt's 128 x 32 and 32 x 128, dmma's 64 x 32 and 32 x 64): each
element's sum is taken in the same order as by a square tile of the family with the same BK,
k-split and main loop (simt: the same k-steps; dmma: the same mma k-steps), so the results
are the same bits; checked on shapes with m, n and k edges, all four transposes, aligned and
not, beta 0 and not, C poisoned by NaN (helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_narrow_tiles_gpu.py
"""

from __future__ import annotations

import pytest
from helpers import assert_configs_agree

from tunedgemm import plans
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 57, 1033), (65, 1292, 1285)]
# The square tile each family's narrow tiles are checked against, on their k settings
# (simt: its default's 128 x 128; dmma: 64 x 64 of the narrow tiles' warp tiles).
SQUARE = {"simt": {**simt.LOOP_TWIN, "BK": 16, "STAGES": 3},
          "dmma": {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "MMA_K": 8, "BK": 16, "STAGES": 4,
                   "ADVANCE": 0}}  # fmt: skip
DTYPE = {"simt": "float32", "dmma": "float64"}


def _configs(name: str, split: int) -> list[KernelConfig]:
    family = FAMILIES[name]
    square = {**family.default_config(DTYPE[name]).as_dict(), **SQUARE[name], "SPLIT_K": split}
    return [KernelConfig.make(name, {**square, **tile}) for tile in ({}, *family.narrow_tiles)]


@pytest.mark.parametrize("name", ["simt", "dmma"])
# 3: not a power of two (plans._narrow_splits); MAX_SPLIT_K: empty slices at k=15
@pytest.mark.parametrize("split", [1, 3, 8, plans.MAX_SPLIT_K])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_narrow_tiles_give_the_square_tiles_bits(name, split, m, n, k):
    configs = _configs(name, split)
    assert all(not FAMILIES[name].violations(c, DTYPE[name]) for c in configs)
    assert_configs_agree(configs, DTYPE[name], m, n, k)
