"""dmma ADVANCE=1: load_tile's k-tile copies walk per-operand cursors set up once per block.
Named explicitly (dmma.ADVANCE_ON: out of the search space until measured). Against float64
with C poisoned by NaN beforehand, for the 4096^3 NN table config (the family default), its
MMA_K=8 and cuBLAS-tile (128 x 64, two blocks per SM) neighbours (outside dmma's space, as in
benchmarks/bench_kernels.py --dmma), a 64 x 64 tile with BK=32, and split-K 2 and 4 with
SPLITK_FUSED 0 and 1; all four transposes, aligned and not, beta 0 and not, shapes with m, n
and k edges (odd sizes, k below BK, k-slices without a k-tile); and bit-equal to ADVANCE=0
(the same copies into the same shared slots, only the address arithmetic differs):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_advance_gpu.py
"""

from __future__ import annotations

import pytest
from dmma_variants import (
    SHAPES,
    assert_variant_keeps_rules_and_bits,
    assert_variants_agree,
    precompile,
)

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

DEFAULT = FAMILIES["dmma"].default_config("float64").as_dict()
SPLIT4 = {"BM": 64, "BN": 128, "WM": 32, "WN": 32, "SPLIT_K": 4}
BASES = {
    "default": DEFAULT,
    "mma-k8": {**DEFAULT, "MMA_K": 8},
    "cublas-tile": {**DEFAULT, "BN": 64, "MIN_BLOCKS": 2},
    "64x64-bk32": {**DEFAULT, "BM": 64, "BN": 64, "WM": 32, "WN": 16, "BK": 32, "STAGES": 4,
                   "GROUP_M": 1},
    "split2": {**DEFAULT, "SPLIT_K": 2},
    "split2-fused": {**DEFAULT, "SPLIT_K": 2, "SPLITK_FUSED": 1},
    "split4": {**DEFAULT, **SPLIT4},
    "split4-fused": {**DEFAULT, **SPLIT4, "SPLITK_FUSED": 1},
}  # fmt: skip


def config(base: str, advance: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**BASES[base], "ADVANCE": advance})


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile([*(config(base, a) for base in BASES for a in (0, *dmma.ADVANCE_ON)),
                *(c for base in ROW_RELOAD_BASES for c in row_reload_pair(base))])


@pytest.mark.parametrize("advance", dmma.ADVANCE_ON)
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_advance_is_accurate_and_bit_equal_to_recomputed_addresses(advance, base, m, n, k):
    # ADVANCE=1 breaks no rule ADVANCE=0 keeps (mma-k8 breaks the register estimate either
    # way; cublas-tile's 24 copies a thread pass only with a cursor).
    assert_variant_keeps_rules_and_bits(config(base, 0), config(base, advance), m, n, k)


# ROW_RELOAD (kernels/dgemm_mma.cu, a development switch outside the family's tunables): each
# mma row's fragment reloaded in place once its row's mma have issued. Timed by
# bench_kernels --dmma-steady (H200, 2026-11-28); this test passed there the same day (18 of
# 18, 17:19 UTC).
ROW_RELOAD_BASES = ("mma-k8", "cublas-tile")


def row_reload_pair(base: str) -> list[KernelConfig]:
    """The base with the cursors at MMA_K=8, without and with ROW_RELOAD."""
    plain = {**config(base, 1).as_dict(), "MMA_K": 8}
    return [KernelConfig.make("dmma", plain), KernelConfig.make("dmma", {**plain, "ROW_RELOAD": 1})]


@pytest.mark.parametrize("base", ROW_RELOAD_BASES)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_row_reload_is_accurate_and_bit_equal_to_two_fragment_sets(base, m, n, k):
    assert_variants_agree(row_reload_pair(base), m, n, k)
