"""dmma's blocks on C's edge in the steady loop (issue 15). SHIFT_EDGE: a block on C's last, partial
row or column of tiles moves its tile back to end at m or n, and stores only the rows and columns
from its own tile's origin on (m >= BM and even for a row shift, n >= BN, and even for a column
shift of B along n; not under stream-K). CLAMP_EDGE: where the tile cannot shift but at least half
of it lies inside m or n, an operand copied along m or n clamps: its copies past m or n repeat
vectors inside m or n (at each lane's position modulo them, CLAMP_SPREAD; 0: the tile's first
vector), and a vector straddling m or n (odd m or n, aligned operands) is copied whole, except in
the operand's last column. Development switches in kernels/dgemm_mma.cu, on by default where the
steady loop runs (ADVANCE=1, aligned). Against float64 with C poisoned by NaN beforehand (nothing
unwritten, nothing past row m written), for the 128 x 128 family default, cuBLAS's 128 x 64
arrangement at m16n8k8, the swap twin, the staged epilogue, split-K 3 and fused split-K 4 (k-slices
past k-tile 0, empty ones), a 64 x 64 BK 32 tile and the 32 x 64 narrow tile with 8-byte copies; all
four transposes, aligned, beta 0 and not, at shapes whose edges shift in m, in n, in both and in
neither, below one tile and at odd m and n with k a multiple of BK; bit-equal with both off, with
the shift alone (no clamp where the tile cannot shift), and with each source of the clamp:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_shift_gpu.py
"""

from __future__ import annotations

import itertools

import pytest
from dmma_variants import assert_variants_agree, precompile

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

DEFAULT = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
BASES = {
    "default": DEFAULT,
    "cublas-tile": {**DEFAULT, **dmma.TWO_BLOCKS, "MMA_K": 8},
    "swap": {**DEFAULT, "MMA_K": 8, **dmma.SWAP_TWIN},
    "staged": {**DEFAULT, "EPILOGUE": 1},
    "split3": {**DEFAULT, "SPLIT_K": 3},
    "split4-fused": {**DEFAULT, "BM": 64, "BN": 128, "WM": 32, "WN": 32, "SPLIT_K": 4,
                     "SPLITK_FUSED": 1},
    "64x64-bk32": {**DEFAULT, "BM": 64, "BN": 64, "WM": 32, "WN": 16, "BK": 32, "STAGES": 4,
                   "GROUP_M": 1},
    "narrow": {**DEFAULT, "BM": 32, "BN": 64, "WM": 32, "WN": 16, "MMA_K": 8, "STAGES": 4,
               "MIN_BLOCKS": 2, "SMALL_COPIES": 1, "GROUP_M": 1, "SPLIT_K": 5},
}  # fmt: skip
# m, n: even past a tile, odd, below one tile, with the last tile more than half inside (it
# clamps) and less (the general loop); k: one k-tile, a k-tail, a multiple of BK (the
# straddling copies leave out the last k-tile), more k-slices than k-tiles.
SHAPES = [(300, 260, 16), (644, 392, 333), (100, 4040, 1000), (777, 333, 555), (257, 129, 17),
          (1000, 1000, 100), (60, 70, 2000), (516, 132, 4099), (313, 250, 512), (61, 130, 64),
          (2, 3, 96), (201, 197, 300)]  # fmt: skip
# The defaults, both off, the shift alone, and the clamp to the tile's first vector.
EDGES = [{}, {"SHIFT_EDGE": 0, "CLAMP_EDGE": 0}, {"CLAMP_EDGE": 0}, {"CLAMP_SPREAD": 0}]
# The switches act in the aligned kernels only (the steady loop's): all four transposes, padded.
LAYOUTS = [(trans, True) for trans in itertools.product((False, True), repeat=2)]


def _variants(base: str) -> list[KernelConfig]:
    return [KernelConfig.make("dmma", {**BASES[base], **edges}) for edges in EDGES]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile((c for base in BASES for c in _variants(base)), alignments=(True,))


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_edge_blocks_in_the_steady_loop_are_accurate_and_bit_equal(base, m, n, k):
    assert_variants_agree(_variants(base), m, n, k, layouts=LAYOUTS)
