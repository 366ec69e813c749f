"""simt's 128 x 64 round tile at three blocks an SM (simt.ROUND_TILES[0], two until
2026-12-02) against the same tile at two: MIN_BLOCKS sets ptxas's register cap alone, so each
element's sum takes the same k-steps in the same order and the bits are the same, unsplit and
at the whole-round splits autotuning times (3, 8 and 12 slices); checked on shapes with m, n
and k edges, all four transposes, aligned and not, beta 0 and not, C poisoned by NaN, against
float64 (helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_simt_round_tile_gpu.py
"""

from __future__ import annotations

import itertools

import pytest
from helpers import assert_configs_agree

from tunedgemm.families import simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 57, 1033), (65, 1292, 3085)]
SPLITS = (1, 3, 8, 12)


def _configs(split: int) -> list[KernelConfig]:
    """The round tile as declared (three blocks an SM), then at two."""
    base = {**simt.FAMILY.default_config("float32").as_dict(), **simt.ROUND_TILES[0],
            "SPLIT_K": split}  # fmt: skip
    assert base["MIN_BLOCKS"] == 3
    return [KernelConfig.make("simt", {**base, "MIN_BLOCKS": blocks}) for blocks in (3, 2)]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every variant this module launches, compiled in parallel first."""
    from tunedgemm.compiler import precompile

    configs = [c for split in SPLITS for c in _configs(split)]
    for ta, tb, aligned in itertools.product((False, True), repeat=3):
        precompile(configs, "float32", ta, tb, aligned)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_three_blocks_an_sm_give_the_two_block_tiles_bits(split, m, n, k):
    assert_configs_agree(_configs(split), "float32", m, n, k)
