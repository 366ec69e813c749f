"""simt ASYNC_CURSOR (issue 15): with ADVANCE=1, the k-major operands copied by 4-byte
cp.async (TN's two at REG_TRANSPOSE=0, NN's B and TT's A when unaligned) walk cursors, and the
steady loop takes them. Against float64 with C poisoned by NaN beforehand, for simt's medium
tile (64 x 64 x 8) in 2, 3 and 4 stages and split 3 ways, its 64 x 32 tile, the family
default and the 4096^3 NN table config with the loop twin, and stream-K; all four
transposes, aligned and not, beta 0 and not, shapes with m, n and k edges; bit-equal to
ASYNC_CURSOR=0 (the same values copied into the same shared slots, the same fmas):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_async_cursor_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import toggled, variant_tests

from tunedgemm.families import simt

MEDIUM = {**simt.MEDIUM_TILES[0], "REG_TRANSPOSE": 0}
STREAM_K_TILE = {k: v for k, v in simt.STREAM_K_TILES[0].items() if k not in ("BK", "STAGES")}
# Each (base, label): the changes to the base, run with ASYNC_CURSOR 0 and 1.
CHANGES = {
    ("default", "medium tile"): MEDIUM,
    ("default", "medium tile, 2 stages"): {**MEDIUM, "STAGES": 2},
    ("default", "medium tile, 4 stages"): {**MEDIUM, "STAGES": 4},
    ("default", "medium tile, split-K 3"): {**MEDIUM, "SPLIT_K": 3},
    ("default", "64 x 32 medium tile"): {**simt.MEDIUM_TILES[1], "REG_TRANSPOSE": 0},
    ("default", "loop twin"): {**simt.LOOP_TWIN},
    ("tuned", "loop twin"): {**simt.LOOP_TWIN},
    ("tuned", "stream-K"): {**simt.STREAM_K_CHANGES, **STREAM_K_TILE},
}  # fmt: skip

pytestmark = pytest.mark.gpu

(_compiled, test_every_variant_is_a_config_the_family_allows,
 test_the_cursor_is_accurate_and_bit_equal_to_recomputed_addresses) = variant_tests(
    toggled(CHANGES, "ASYNC_CURSOR", (0, 1)))
