"""simt ROLL_K (issue 15, item 3): the BK loop of each k-tile rolled into BK / ROLL_K
iterations of ROLL_K unrolled k-steps, so that the main loop fits the instruction cache.
Named explicitly (simt.ROLL_K_ON: out of the search space until measured), with ADVANCE 0
and 1, on the 4096^3 NN table config and the family default (where the family allows the
value). Against float64 with C poisoned by NaN beforehand, all four transposes, aligned and
not, beta 0 and not, shapes with m, n and k edges (k not a multiple of BK, one k-tile, small
odd sizes); and bit-equal to ROLL_K=0 (the same fmas in the same k order):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_roll_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import BASES, SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt


def _variants(base: str) -> list[dict[str, int]]:
    """ROLL_K=0 first (the reference of bit-equality), then each allowed rolled variant."""
    every = [{"ADVANCE": a, "ROLL_K": r} for a in (0, 1) for r in (0, *simt.ROLL_K_ON)]
    return [v for v in every if allowed(base, v)]


pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(base, v) for base in BASES for v in _variants(base))


def test_every_base_has_a_rolled_variant():
    for base in BASES:
        assert any(v["ROLL_K"] for v in _variants(base)), base


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_roll_k_is_accurate_and_bit_equal_to_the_unrolled_loop(base, m, n, k):
    # ADVANCE=1 is bit-equal to ADVANCE=0 (its own test), so all variants agree with one.
    assert_variants_agree(base, _variants(base), m, n, k)
