"""simt FMA_ORDER (issue 15, item 3): each k-step's fmas in serpentine order, rows or columns,
so that consecutive fmas share a source ptxas can keep in the operand reuse cache. Named
explicitly (out of the search space until measured), on the 4096^3 NN table config and the
family default, with ADVANCE 0 and 1 and ADVANCE=1 in a 4-deep ring. Against float64 with C poisoned
by NaN beforehand, all four transposes, aligned and not, beta 0 and not, shapes with m, n
and k edges; bit-equal to FMA_ORDER=0 (the same fmas in the same k order), also under
split-K:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_fma_order_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

ORDERS = (0, *simt.FMA_ORDER_ON)
# Each (base, group) is compared with its first member: the fmas' order changes no result bit.
GROUPS = {
    ("tuned", "data-parallel"): [{"FMA_ORDER": o, "ADVANCE": a, "STAGES": s}
                                 for o in ORDERS for a, s in ((0, 2), (1, 2), (1, 4))],
    ("tuned", "split-K 2"): [{"FMA_ORDER": o, "ADVANCE": 1, "SPLIT_K": 2} for o in ORDERS],
    ("default", "data-parallel"): [{"FMA_ORDER": o} for o in ORDERS],
}  # fmt: skip


def _variants(key: tuple[str, str]) -> list[dict[str, int]]:
    return [v for v in GROUPS[key] if allowed(key[0], v)]


pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(key[0], v) for key in GROUPS for v in _variants(key))


def test_every_group_compares_every_order():
    for key in GROUPS:
        assert {v["FMA_ORDER"] for v in _variants(key)} == set(ORDERS), key


@pytest.mark.parametrize("key", sorted(GROUPS))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_fma_order_is_accurate_and_bit_equal_to_row_by_row(key, m, n, k):
    assert_variants_agree(key[0], _variants(key), m, n, k)
