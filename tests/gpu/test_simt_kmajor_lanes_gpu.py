"""simt KMAJOR_LANES and REG_TRANSPOSE 2-4 (issue 15): the k-major copies laid over the
lanes for conflict-free shared stores (kernels/kmajor_lanes.cuh), and only one of TN's
operands through registers (A, B, or the block tile's longer side's: TN's twin). Against
float64 with C poisoned by NaN beforehand, for the family default (BK 8) and a BK 32 version
of it, the 4096^3 NN table config (BK 16), the medium,
round and narrow tiles (two warps), both TN layout twins, split-K and stream-K; all four
transposes, aligned and not, beta 0 and not, shapes with m, n and k edges; bit-equal to
KMAJOR_LANES=0, and REG_TRANSPOSE 0-4 bit-equal to each other (every value lands in the shared
slot it did, so every element takes the same fmas in the same k order):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_kmajor_lanes_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import toggled, variant_tests

from tunedgemm.families import simt

REGISTERS, CURSORS = simt.LAYOUT_TWINS[(True, False)]  # (REGISTERS: one operand staged)
STREAM_K_TILE = {k: v for k, v in simt.STREAM_K_TILES[0].items() if k not in ("BK", "STAGES")}
BK32 = {"BK": 32, "STAGES": 2, "MIN_BLOCKS": 1, **simt.LOOP_TWIN}
# Each (base, label): the changes to the base, run with KMAJOR_LANES 0 and 1.
CHANGES = {
    ("default", "family default"): {},
    ("default", "loop twin"): {**simt.LOOP_TWIN},
    ("default", "BK 32, through registers"): {**BK32, "REG_TRANSPOSE": 1},
    ("default", "BK 32, from cursors"): {**BK32, "ASYNC_CURSOR": 1},
    ("tuned", "through registers"): {**REGISTERS},
    ("tuned", "from cursors"): {**CURSORS},
    ("tuned", "split-K 2"): {**REGISTERS, "SPLIT_K": 2},
    ("tuned", "stream-K"): {**simt.STREAM_K_CHANGES, **STREAM_K_TILE},
    ("default", "medium tile, through registers"): {**simt.MEDIUM_TILES[0], **REGISTERS},
    ("default", "medium tile, from cursors, split-K 3"):
        {**simt.MEDIUM_TILES[0], **CURSORS, "SPLIT_K": 3},
    ("default", "64 x 32 medium tile"): {**simt.MEDIUM_TILES[1], **CURSORS},
    ("default", "round tile, from cursors"): {**simt.ROUND_TILES[0], **CURSORS},
    ("default", "round mirror, through registers"): {**simt.ROUND_TILES[1], **REGISTERS},
    ("default", "narrow tile 128 x 32"): {**simt.NARROW_TILES[0], **CURSORS},
    ("default", "narrow tile 32 x 128"): {**simt.NARROW_TILES[1], **REGISTERS},
}  # fmt: skip
GROUPS = toggled(CHANGES, "KMAJOR_LANES", (0, *simt.KMAJOR_LANES_ON))
# REG_TRANSPOSE 0 (from cursors), 1 (both), 2 (A), 3 (B) and 4 (the longer side: A in the
# table config and the round tile, B in its mirror), each with both lane layouts: one group,
# all bit-equal.
for _base, _name, _tile in (("tuned", "table config", {}),
                            ("default", "round tile", simt.ROUND_TILES[0]),
                            ("default", "round mirror", simt.ROUND_TILES[1])):  # fmt: skip
    GROUPS[(_base, f"REG_TRANSPOSE 0-4 {_name}")] = [
        {**_tile, **simt.LOOP_TWIN, "ASYNC_CURSOR": 1, "REG_TRANSPOSE": r, "KMAJOR_LANES": kl}
        for r in (0, 1, *simt.REG_TRANSPOSE_ONE_OPERAND, simt.REG_TRANSPOSE_LONGER_SIDE)
        for kl in (0, *simt.KMAJOR_LANES_ON)
    ]

pytestmark = pytest.mark.gpu

(_compiled, test_every_variant_is_a_config_the_family_allows,
 test_lane_layouts_and_staged_operands_are_accurate_and_bit_equal) = variant_tests(GROUPS)
