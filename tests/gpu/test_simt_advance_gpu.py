"""simt ADVANCE=1 (issue 15, item 3): the k-tile copies walk cursors set up once per block.
Named explicitly (simt.ADVANCE_ON: out of the search space until measured). Against float64
with C poisoned by NaN beforehand, for the 4096^3 NN table config and the family default,
all four transposes, aligned and not, beta 0 and not, shapes with m, n and k edges (k not a
multiple of BK, one k-tile, a partial first vector); and bit-equal to ADVANCE=0 (the same
fmas in the same k order, only the address arithmetic differs):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_advance_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import BASES, SHAPES, assert_variants_agree, config, precompile

from tunedgemm.families import simt

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(base, {"ADVANCE": a}) for base in BASES for a in (0, *simt.ADVANCE_ON))


@pytest.mark.parametrize("advance", simt.ADVANCE_ON)
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_advance_is_accurate_and_bit_equal_to_recomputed_addresses(advance, base, m, n, k):
    assert_variants_agree(base, [{"ADVANCE": 0}, {"ADVANCE": advance}], m, n, k)
