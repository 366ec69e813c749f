"""simt's blocks on C's edge in the steady loop (issue 15, items 2-3). SHIFT_EDGE: a block on C's
last, partial row or column of tiles moves its tile back to end at m or n, and stores only the rows
and columns past the block before it (aligned operands, m % 4 == 0 for a row shift, n % 4 == 0 for a
column shift of B along n, not under stream-K). CLAMP_EDGE: an operand copied along m or n where its
tile cannot shift (or anywhere, SHIFT_FIRST=0): its copies past m or n repeat the tile's first
vector (CLAMP_SPREAD=0; 1: each lane's position modulo the tile's whole vectors inside m or n), and
a vector straddling m or n is copied whole (not from the last column). Development switches, on by
default where they apply. Against float64 with C poisoned by NaN beforehand (nothing unwritten,
nothing past row m written), for the 4096^3 NN table config and the family default with the loop
twin, in 2 and 4 stages, under split-K 2 and 3 (k-slices past k-tile 0, one empty), with TN's
operands through registers, the 256 x 128 stream-K tile (it clamps, but does not shift), and the 64
x 128 BK 32 split-K 8 tile the table picks at m = 100; all four transposes, aligned and not, beta 0
and not, at shapes whose edges shift in m, in n, in both and in neither, below one tile and at odd m
and n with k a multiple of BK; bit-equal with both off, with the shift alone, and with each first
form of the clamp:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_shift_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

# The table's float32/NN config at 100x4040x13655 (bench_tuning's worst random shape on the
# H200, 2026-11-29), its tiling without the tunables the bases already set.
SKINNY = {"BM": 64, "BN": 128, "BK": 32, "WM": 32, "WN": 32, "TM": 8, "TN": 4, "STAGES": 2,
          "GROUP_M": 1, "MIN_BLOCKS": 1, "SPLIT_K": 8}  # fmt: skip
STREAM_K_TILE = {k: v for k, v in simt.STREAM_K_TILES[0].items() if k not in ("BK", "STAGES")}
CHANGES = {
    ("tuned", "2 stages"): {**simt.LOOP_TWIN},
    ("tuned", "4 stages"): {**simt.LOOP_TWIN, "STAGES": 4},
    ("tuned", "split-K 3"): {**simt.LOOP_TWIN, "SPLIT_K": 3},
    ("tuned", "TN, one operand through registers"): {**simt.LAYOUT_TWINS[(True, False)][0]},
    ("default", "3 stages"): {**simt.LOOP_TWIN},
    ("default", "split-K 2"): {**simt.LOOP_TWIN, "SPLIT_K": 2},
    ("default", "64 x 128, split-K 8"): {**simt.LOOP_TWIN, **SKINNY},
    ("tuned", "stream-K"): {**simt.STREAM_K_CHANGES, **STREAM_K_TILE},
}  # fmt: skip
# m, n: multiples of 4 past a tile, odd, below one tile; k: one k-tile, a k-tail, a multiple of
# BK (the straddling copies leave out the last k-tile), more k-slices than k-tiles.
SHAPES = [(300, 260, 16), (644, 392, 333), (100, 4040, 1000), (777, 333, 555), (257, 129, 17),
          (1000, 1000, 100), (60, 70, 2000), (516, 132, 4099), (313, 250, 512), (61, 130, 64),
          (2, 3, 96)]  # fmt: skip
# The defaults, both off, the shift alone, the clamp's other source, and the clamp wherever
# an operand runs along m or n.
EDGES = [{}, {"SHIFT_EDGE": 0, "CLAMP_EDGE": 0}, {"CLAMP_EDGE": 0}, {"CLAMP_SPREAD": 1},
         {"SHIFT_FIRST": 0}]  # fmt: skip


def _variants(key: tuple[str, str]) -> list[dict[str, int]]:
    return [{**CHANGES[key], **edges} for edges in EDGES]


pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(key[0], v) for key in CHANGES for v in _variants(key))


def test_every_base_is_a_config_the_family_allows():
    for key in CHANGES:
        assert allowed(key[0], CHANGES[key]), key


@pytest.mark.parametrize("key", sorted(CHANGES),
                         ids=lambda key: "-".join(key).replace(",", "").replace(" ", "_"))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_edge_blocks_in_the_steady_loop_are_accurate_and_bit_equal(key, m, n, k):
    assert_variants_agree(key[0], _variants(key), m, n, k)
