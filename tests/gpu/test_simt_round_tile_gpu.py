"""simt's 128 x 64 round tile at three blocks an SM (simt.ROUND_TILES[0], two until
2026-12-02) against the same tile at two and its 64 x 128 mirror (ROUND_TILES[1], 2026-12-02):
MIN_BLOCKS sets ptxas's register cap alone, and a tiling only which thread sums an element,
so each element's sum takes the same k-steps in the same order and the bits are the same,
unsplit and at the whole-round splits autotuning times (3, 8 and 12 slices); checked on shapes
with m, n and k edges, all four transposes, aligned and not, beta 0 and not, C poisoned by
NaN, against float64 (helpers.assert_configs_agree). At TN, aligned and not, each round tile's
layout twins (both operands through registers, REG_TRANSPOSE=1, timed since 2026-12-02, and
copied from cursors, ASYNC_CURSOR=1, since 2026-12-03) against the tile as declared, the
three-block ones at three blocks an SM and at two:

    python -m pytest -q -m gpu tests/gpu/test_simt_round_tile_gpu.py
"""

from __future__ import annotations

import itertools

import pytest
from helpers import assert_configs_agree, precompile_variants

from tunedgemm.families import simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 57, 1033), (65, 1292, 3085)]
SPLITS = (1, 3, 8, 12)


def _configs(split: int) -> list[KernelConfig]:
    """The round tile as declared (three blocks an SM), then at two, then its mirror."""
    default = simt.FAMILY.default_config("float32").as_dict()
    base = {**default, **simt.ROUND_TILES[0], "SPLIT_K": split}
    mirror = {**default, **simt.ROUND_TILES[1], "SPLIT_K": split}
    assert base["MIN_BLOCKS"] == mirror["MIN_BLOCKS"] == 3
    assert (mirror["BM"], mirror["BN"]) == (base["BN"], base["BM"])
    return [*(KernelConfig.make("simt", {**base, "MIN_BLOCKS": blocks}) for blocks in (3, 2)),
            KernelConfig.make("simt", mirror)]


def _tn_twins(tile: dict, split: int) -> list[KernelConfig]:
    """A round tile as declared, then its TN layout twins, through registers and copied from
    cursors (the 128 x 64 at three blocks an SM and at two)."""
    declared = {**simt.FAMILY.default_config("float32").as_dict(), **tile, "SPLIT_K": split}
    blocks = (3, 2) if tile["MIN_BLOCKS"] == 3 else (tile["MIN_BLOCKS"],)
    twins = [KernelConfig.make("simt", {**declared, **twin, "MIN_BLOCKS": b})
             for twin in simt.LAYOUT_TWINS[(True, False)] for b in blocks]  # fmt: skip
    assert {(t["REG_TRANSPOSE"], t["ASYNC_CURSOR"]) for t in twins} == {(1, 0), (0, 1)}
    return [KernelConfig.make("simt", declared), *twins]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every variant this module launches, compiled in parallel first."""
    configs = [c for split in SPLITS for c in _configs(split)]
    precompile_variants(configs, "float32", list(itertools.product((False, True), repeat=2)))
    twins = [c for tile in simt.ROUND_TILES for split in SPLITS
             for c in _tn_twins(tile, split)]  # fmt: skip
    precompile_variants(twins, "float32", [(True, False)])


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_three_blocks_an_sm_and_the_mirror_give_the_two_block_tiles_bits(split, m, n, k):
    assert_configs_agree(_configs(split), "float32", m, n, k)


@pytest.mark.parametrize("tile", range(len(simt.ROUND_TILES)))
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_tns_layout_twins_give_the_tiles_bits(tile, split, m, n, k):
    tn = [((True, False), padded) for padded in (False, True)]
    configs = _tn_twins(simt.ROUND_TILES[tile], split)
    assert_configs_agree(configs, "float32", m, n, k, layouts=tn)
