"""simt LANE_PAIRS (issue 15): lanes 2i and 2i+1 of a warp own the same rows of C, so that the
A fragments' LDS.128s take two shared wavefronts where they took four. Against float64 with C
poisoned by NaN beforehand, for simt's two medium tiles (8 x 4 a thread) and the family default
(8 x 8), paired, and the 4096^3 NN table config (16 x 8), where the tunable is inert; with
the loop twin, split-K, TN's layout twins and stream-K; all four transposes, aligned and not,
beta 0 and not, shapes with m, n and k edges; bit-equal to LANE_PAIRS=0 (every element the
same fmas in the same k order):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_lane_pairs_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import toggled, variant_tests

from tunedgemm.families import simt

REGISTERS, CURSORS = simt.LAYOUT_TWINS[(True, False)]
STREAM_K_TILE = {k: v for k, v in simt.STREAM_K_TILES[0].items() if k not in ("BK", "STAGES")}
# Each (base, label): the changes to the base, run with LANE_PAIRS 0 and 1.
CHANGES = {
    ("default", "medium tile, through registers"): {**simt.MEDIUM_TILES[0], **REGISTERS},
    ("default", "medium tile, from cursors"): {**simt.MEDIUM_TILES[0], **CURSORS},
    ("default", "medium tile, split-K 3"): {**simt.MEDIUM_TILES[0], "SPLIT_K": 3},
    ("default", "64 x 32 medium tile"): {**simt.MEDIUM_TILES[1]},
    ("default", "loop twin"): {**simt.LOOP_TWIN},
    ("tuned", "loop twin"): {**simt.LOOP_TWIN},
    ("tuned", "split-K 2"): {**simt.LOOP_TWIN, "SPLIT_K": 2},
    ("tuned", "stream-K"): {**simt.STREAM_K_CHANGES, **STREAM_K_TILE},
}  # fmt: skip

pytestmark = pytest.mark.gpu

(_compiled, test_every_variant_is_a_config_the_family_allows,
 test_paired_lanes_are_accurate_and_bit_equal_to_neighbouring_rows) = variant_tests(
    toggled(CHANGES, "LANE_PAIRS", (0, *simt.LANE_PAIRS_ON)))
