"""dmma's unpadded shared-memory ring (RING_PAD=0: rows of BM, BN and BK doubles, the
k-contiguous ones swizzled) against the padded one: against float64 with C poisoned by NaN,
all four transposes (each operand k- and mn-contiguous), aligned (16-byte copies) and not,
8-byte copies where aligned (SMALL_COPIES), BK 16 and 32, MMA_K 4, 8 and 16, with and without
the cursors, split and not, shapes with m, n and k edges; bit-equal to the padded ring (the
same values into the same fragments) and from run to run, at one stage more where the
unpadded ring makes room for it.

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_ring_pad_gpu.py
"""

from __future__ import annotations

import pytest
from dmma_variants import SHAPES, assert_variants_agree, precompile

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

FAMILY = FAMILIES["dmma"]
DEFAULT = FAMILY.default_config("float64").as_dict()

# Each base as recorded (RING_PAD=1), then unpadded at its stages and at one more.
BASES = {
    "default-mmak4": {},
    "64x64-cursors-mmak16": {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "MMA_K": 16, "ADVANCE": 1},
    "medium-64x64-swap": dmma.MEDIUM_TILES[0],
    "medium-64x32-split3": {**dmma.MEDIUM_TILES[1], "SPLIT_K": 3},
    "round-bk32": dmma.ROUND_TILES[0],
    "narrow-small-copies": dmma.NARROW_TILES[0],
    "small-k-64x128-swap": dmma.SMALL_K_TILES[1],
}


def configs(name: str) -> list[KernelConfig]:
    base = {**DEFAULT, **BASES[name]}
    padded = KernelConfig.make("dmma", {**base, "RING_PAD": 1})
    unpadded = KernelConfig.make("dmma", {**base, "RING_PAD": 0})
    deeper = KernelConfig.make("dmma", {**base, "RING_PAD": 0, "STAGES": base["STAGES"] + 1})
    return [padded, unpadded, deeper]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config for name in BASES for config in configs(name))


@pytest.mark.parametrize("name", list(BASES))
def test_unpadded_configs_keep_the_rules_in_less_shared_memory(name):
    # (the deeper ring may break rules, such as the blocks an SM or ptxas's checked tiles:
    # it is launched as a variant, never chosen)
    padded, unpadded, _ = configs(name)
    smem = FAMILY.smem_bytes
    assert smem(unpadded.as_dict(), 8) < smem(padded.as_dict(), 8)
    assert not FAMILY.violations(padded, "float64")
    assert not FAMILY.violations(unpadded, "float64")


@pytest.mark.parametrize("name", list(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_unpadded_ring_is_accurate_and_the_same_bits_as_the_padded_one(name, m, n, k):
    padded, unpadded, deeper = configs(name)
    assert_variants_agree([padded, unpadded, deeper, unpadded], m, n, k)
