"""simt's medium tiles (64 x 64 x 8, four warps of 8 x 4, four blocks an SM: cuBLAS's tiling at
TN's one-wave short-k shapes; 64 x 32 x 8, two warps, eight blocks an SM: the mirror of its
tiling at NN's 3477x273x169), which autotuning times at medium shapes
(tunedgemm/plans.py, with_medium_tiles). Against float64 with C poisoned by NaN beforehand,
all four transposes, aligned and not, beta 0 and not, shapes with m, n and k edges: unsplit
and split 3 ways, as declared and through registers (TN's layout twin), bit-equal to the
family default with the loop twin at the same split (each element the same fmas in the same
k order):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_medium_tile_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

# Each split: the default with the loop twin first, then each tile and its TN twin.
VARIANTS = {split: [{**simt.LOOP_TWIN, "SPLIT_K": split}]
            + [{**tile, "SPLIT_K": split, "REG_TRANSPOSE": rt}
               for tile in simt.MEDIUM_TILES for rt in (0, 1)]
            for split in (1, 3)}  # fmt: skip

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config("default", v) for variants in VARIANTS.values() for v in variants)


def test_every_variant_is_a_config_the_family_allows():
    for variants in VARIANTS.values():
        assert all(allowed("default", v) for v in variants)


@pytest.mark.parametrize("split", sorted(VARIANTS))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_medium_tiles_are_accurate_and_bit_equal_to_the_default(split, m, n, k):
    assert_variants_agree("default", VARIANTS[split], m, n, k)
