"""simt's REG_AHEAD=1 (a register-staged k-tile loaded a k-tile earlier, into a second
register set; a two-set prologue): each medium and round tile with and without it, and a
BK=16 128 x 128 tile of the table's kind, unsplit and split 3 ways, in all four transposes,
aligned and not, beta 0 (C poisoned by NaN) and not, shapes with m, n and k edges (one k-tile,
fewer k-tiles than stages, odd counts of them): against float64, and bit-equal to the same
tile at REG_AHEAD=0 (the same values in the same shared positions):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_reg_ahead_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

TABLE_KIND = {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8,
              "STAGES": 2, "MIN_BLOCKS": 2, **simt.LOOP_TWIN}  # fmt: skip
TILES = {**{f"medium-{t['BM']}x{t['BN']}": t for t in simt.MEDIUM_TILES},
         **{f"round-{t['BM']}x{t['BN']}": t for t in simt.ROUND_TILES},
         "table-kind": TABLE_KIND}  # fmt: skip
# Per tile and split: the tile as it is first, then ahead as declared and through registers.
VARIANTS = {(name, split): [{**tile, "SPLIT_K": split}]
            + [{**tile, "SPLIT_K": split, "REG_TRANSPOSE": rt, "REG_AHEAD": 1} for rt in (0, 1)]
            for name, tile in TILES.items() for split in (1, 3)}  # fmt: skip

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config("default", v) for variants in VARIANTS.values() for v in variants)


def test_every_variant_is_a_config_the_family_allows():
    for variants in VARIANTS.values():
        assert all(allowed("default", v) for v in variants)


@pytest.mark.parametrize("tile,split", sorted(VARIANTS))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_reg_ahead_is_accurate_and_bit_equal_to_the_tile_without_it(tile, split, m, n, k):
    assert_variants_agree("default", VARIANTS[tile, split], m, n, k)
