"""simt's two-warp twin (simt.TWO_WARP: 32 x 64 warp tiles of 8 x 8, four blocks an SM):
which configs of the space it is a twin of, that the space itself keeps out 64-thread
blocks, and that its tiles compile for sm_90 without spills."""

from __future__ import annotations

import collections

import pytest
from helpers import assert_no_spills, compile_report

from tunedgemm import launch, plans
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

FAMILY = FAMILIES["simt"]


def test_the_space_holds_no_64_thread_blocks():
    assert all(FAMILY.threads(c.as_dict()) >= 128 for c in FAMILY.space("float32"))


def test_the_twin_fits_the_64x64_tiles_and_the_128x64_ones_at_bk_8():
    fits = collections.Counter()
    for config in FAMILY.space("float32"):
        twins = plans.with_twins((config,), "float32")[1:]
        two_warp = [t for t in twins if t.as_dict()["MIN_BLOCKS"] == 4]
        if two_warp:
            p = config.as_dict()
            fits[(p["BM"], p["BN"], p["BK"])] += 1
            assert two_warp[0].as_dict()["ADVANCE"] == 1 and two_warp[0].as_dict()["FMA_ORDER"] == 1
    assert set(fits) == {(64, 64, 8), (64, 64, 16), (128, 64, 8), (64, 128, 8)}


def test_64_thread_blocks_need_four_blocks_an_sm():
    tile = {**FAMILY.default_config("float32").as_dict(), "BM": 64, "BN": 64, "BK": 16,
            "WM": 32, "WN": 64, "TM": 8, "TN": 8}  # fmt: skip
    assert not FAMILY.violations(KernelConfig.make("simt", {**tile, "MIN_BLOCKS": 4}), "float32")
    assert any("threads per block" in v for v in FAMILY.violations(
        KernelConfig.make("simt", {**tile, "MIN_BLOCKS": 2}), "float32"))  # fmt: skip


TWINS_OF = [{"BM": 64, "BN": 64, "WM": 32, "WN": 32, "TM": 8, "TN": 4, "BK": 16},
            {"BM": 128, "BN": 64, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "BK": 8}]  # fmt: skip


@pytest.mark.parametrize("tile", TWINS_OF, ids=lambda t: f"{t['BM']}x{t['BN']}-bk{t['BK']}")
def test_two_warp_twins_compile_without_spills(tmp_path, tile):
    config = KernelConfig.make("simt", {**FAMILY.default_config("float32").as_dict(), **tile})
    twin = KernelConfig.make("simt", {**config.as_dict(), **simt.LOOP_TWIN, **simt.TWO_WARP})
    assert not FAMILY.violations(twin, "float32")
    # TRANS_A, unaligned, as test_narrow_tiles.py compiles its tiles.
    defines = launch._defines(twin, "float32", True, False, False)
    assert_no_spills(compile_report(FAMILY.source, defines, tmp_path), str(twin))
