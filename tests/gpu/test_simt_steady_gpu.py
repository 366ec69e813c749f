"""simt STEADY_LOOP (issue 15, item 3): with ADVANCE=1 and aligned operands, the k-tiles wholly
inside both operands run in a loop of their own whose copies have no tests. A development
switch (on by default where it applies). Against float64 with C poisoned by NaN beforehand,
for the 4096^3 NN table config and the family default with the loop twin, in 2, 3 and 4
stages, under split-K 2 (k-slices that start past k-tile 0), with TN's operands through
registers, and the 256 x 128 stream-K tile; all four transposes, aligned and not, beta 0
and not, shapes with m, n and k edges; bit-equal to STEADY_LOOP=0, and to the steady loop with
its cp.async copies at the k-tile's top (the same values copied into the same shared slots,
the same fmas in the same k order):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_simt_steady_gpu.py
"""

from __future__ import annotations

import pytest
from simt_variants import SHAPES, allowed, assert_variants_agree, config, precompile

from tunedgemm.families import simt

STREAM_K_TILE = {k: v for k, v in simt.STREAM_K_TILES[0].items() if k not in ("BK", "STAGES")}
# Each (base, label): the changes to the base, run with STEADY_LOOP 0 and 1 (and SWITCHES).
CHANGES = {
    ("tuned", "2 stages"): {**simt.LOOP_TWIN},
    ("tuned", "4 stages"): {**simt.LOOP_TWIN, "STAGES": 4},
    ("tuned", "split-K 2"): {**simt.LOOP_TWIN, "SPLIT_K": 2},
    ("tuned", "TN, one operand through registers"): {**simt.LAYOUT_TWINS[(True, False)][0]},
    ("tuned", "stream-K"): {**simt.STREAM_K_CHANGES, **STREAM_K_TILE},
    ("default", "3 stages"): {**simt.LOOP_TWIN},
}  # fmt: skip


# Each base also with the steady loop's cp.async copies right after the barrier (COPY_STEP=0;
# by default they wait for a quarter of the k-tile's fmas): the same copies, the same bits.
SWITCHES = {"COPY_STEP": 0}


def _variants(key: tuple[str, str]) -> list[dict[str, int]]:
    return [*({**CHANGES[key], "STEADY_LOOP": s} for s in (0, 1)),
            {**CHANGES[key], "STEADY_LOOP": 1, **SWITCHES}]  # fmt: skip


pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(key[0], v) for key in CHANGES for v in _variants(key))


def test_every_base_is_a_config_the_family_allows():
    # (STEADY_LOOP is a define outside the family's tunables, as dmma's ROW_RELOAD)
    for key in CHANGES:
        assert allowed(key[0], CHANGES[key]), key


@pytest.mark.parametrize("key", sorted(CHANGES))
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_steady_loop_is_accurate_and_bit_equal_to_one_loop(key, m, n, k):
    assert_variants_agree(key[0], _variants(key), m, n, k)
