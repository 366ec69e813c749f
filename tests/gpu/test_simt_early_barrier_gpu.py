"""simt EARLY_BARRIER and MAXNREG (issue 15, item 3): each k-tile's barrier before the previous
tile's last k-step, whose fmas cover the loads of the next tile's first fragments, and the
register caps that decide how ptxas schedules that loop. Named explicitly (out of the search
space until measured), with ADVANCE 0 and 1, ring depths 2 to 4 and each cap of
simt.MAXNREG_ON, on the 4096^3 NN table config (the family default's 128-register cap rules
EARLY_BARRIER out). Against float64 with C poisoned by NaN beforehand, all four transposes,
aligned and not, beta 0 and not, shapes with m, n and k edges (k not a multiple of BK, one
k-tile, small odd sizes); bit-equal to EARLY_BARRIER=0 (the same fmas in the same k order),
also under split-K:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_early_barrier_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

BASE = "tuned"
# Each group is compared with its first member: the barrier's place changes no result bit.
GROUPS = {
    "data-parallel": [{"EARLY_BARRIER": e, "ADVANCE": a, "STAGES": s}
                      for e in (0, *simt.EARLY_BARRIER_ON) for a in (0, 1) for s in (2, 3, 4)]
                     + [{"EARLY_BARRIER": e, "ADVANCE": 1, "MAXNREG": r}
                        for e in (0, *simt.EARLY_BARRIER_ON) for r in simt.MAXNREG_ON],
    "split-K 2": [{"EARLY_BARRIER": e, "ADVANCE": 1, "SPLIT_K": 2}
                  for e in (0, *simt.EARLY_BARRIER_ON)],
}  # fmt: skip


def _variants(group: str) -> list[dict[str, int]]:
    return [v for v in GROUPS[group] if allowed(BASE, v)]


pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(BASE, v) for group in GROUPS for v in _variants(group))


def test_every_group_compares_both_barrier_places():
    for group in GROUPS:
        assert {v["EARLY_BARRIER"] for v in _variants(group)} == {0, 1}, group


@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_early_barrier_is_accurate_and_bit_equal_to_the_barrier_at_the_top(group, m, n, k):
    assert_variants_agree(BASE, _variants(group), m, n, k)
