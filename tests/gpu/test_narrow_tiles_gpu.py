"""simt's narrow tiles (128 x 32, 32 x 128) on the GPU: each element's sum is taken in the same
order as by simt's 128 x 128 tile with the same BK, k-split and main loop, so the results are
the same bits; checked on shapes with m, n and k edges, all four transposes, aligned and not,
beta 0 and not, C poisoned by NaN (helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_narrow_tiles_gpu.py
"""

from __future__ import annotations

import pytest
from helpers import assert_configs_agree

from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 57, 1033), (65, 1292, 1285)]


def _configs(split: int) -> list[KernelConfig]:
    square = {**FAMILIES["simt"].default_config("float32").as_dict(), **simt.LOOP_TWIN,
              "BK": 16, "STAGES": 3, "SPLIT_K": split}  # fmt: skip
    return [KernelConfig.make("simt", {**square, **tile}) for tile in ({}, *simt.NARROW_TILES)]


@pytest.mark.parametrize("split", [1, 8])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_narrow_tiles_give_the_square_tiles_bits(split, m, n, k):
    assert_configs_agree(_configs(split), "float32", m, n, k)
