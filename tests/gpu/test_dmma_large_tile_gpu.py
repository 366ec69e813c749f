"""dmma's large tile (dmma.LARGE_TILES: 128 x 128 at m16n8k8 with the cursors, timed by
autotuning at large products): against float64 with C poisoned by NaN beforehand, all four
transposes, aligned and not, beta 0 and not, shapes with m, n and k edges and whole tiles;
bit-equal to the same tile without the cursors (ADVANCE=0: the same sums in the same k
order) and to itself run again.

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_large_tile_gpu.py
"""

from __future__ import annotations

import pytest
from dmma_variants import SHAPES, assert_variants_agree, precompile

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

DEFAULT = FAMILIES["dmma"].default_config("float64").as_dict()


def configs(tile: dict[str, int]) -> list[KernelConfig]:
    large = KernelConfig.make("dmma", {**DEFAULT, **tile, "SPLIT_K": 1})
    plain = KernelConfig.make("dmma", {**large.as_dict(), "ADVANCE": 0})
    return [plain, large, large]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(c for tile in dmma.LARGE_TILES for c in configs(tile))


@pytest.mark.parametrize("tile", range(len(dmma.LARGE_TILES)))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_large_tile_is_accurate_and_bit_equal_without_cursors_and_run_to_run(tile, m, n, k):
    assert_variants_agree(configs(dmma.LARGE_TILES[tile]), m, n, k)
