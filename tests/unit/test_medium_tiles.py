"""Autotuning's medium tiles: at shapes with one short side of C and more than launch-bound
work, the first own split-K candidate's family's medium tilings (dmma's 64 x 64 and 64 x 32
blocks of four warps, three blocks an SM, and simt's 64 x 64 x 8 of four warps, four an SM,
and 64 x 32 x 8 of two warps, eight an SM: cuBLAS's arrangements there or their mirrors; whole
configs), as the family's layout twins (simt's TN: one operand through registers, or none),
unsplit where their tiles give every SM one and split to fill a round where they fill less;
nothing at large squares, launch-bound shapes, or for a family without them."""

from __future__ import annotations

import dataclasses
import itertools
import shutil

import pytest
from helpers import (
    assert_compile_within,
    assert_timed_beside_the_first,
    nn_key,
    small_simt,
)

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES, dmma, simt
from tunedgemm.params import KernelConfig, register_cap

SMS = 132


def _dmma(**changes: int):
    base = FAMILIES["dmma"].default_config("float64").as_dict()
    tile = {"BM": 128, "BN": 64, "WM": 64, "WN": 32, "MIN_BLOCKS": 2, "SPLIT_K": 1}
    return FAMILIES["dmma"].recorded({**base, **tile, **changes})


def _tiles_and_splits(found) -> list[tuple[int, int, int]]:
    return [(f["BM"], f["BN"], f["SPLIT_K"]) for f in found]


def test_each_medium_tile_holds_three_blocks_an_sm_within_the_rules():
    family = FAMILIES["dmma"]
    assert register_cap(128, 3) == 168  # what ptxas fitted them in (the compile test below)
    for tile in dmma.MEDIUM_TILES:
        config = _dmma(**tile)
        assert not family.violations(config, "float64")
        assert model.resident_blocks(config, "float64") == 3
        assert family.threads(config.as_dict()) == 128


def test_many_tiles_time_them_unsplit():
    # 6904 x 698: 1188 tiles of 64 x 64 and 2376 of 64 x 32 against 396 slots.
    first = _dmma(STAGES=4, GROUP_M=1)
    found = plans.with_medium_tiles((first,), nn_key(6904, 698, 3920, "float64"), SMS)
    assert [f.as_dict() for f in found] == [
        {**first.as_dict(), **tile, "SPLIT_K": 1} for tile in dmma.MEDIUM_TILES]


def test_few_tiles_time_them_at_the_splits_that_fill_the_rounds():
    # 600 x 508: 80 tiles of 64 x 64 on 396 slots, fewer than the SMs: the least power of two
    # that fills a round (8: 640 blocks), then the whole-round splits at one and three blocks
    # an SM (264 // 80, 396 // 80, 792 // 80); 64 x 32: 160 tiles, one an SM at least, so
    # unsplit too, then 4, and 396 // 160 = 2.
    found = plans.with_medium_tiles((_dmma(),), nn_key(600, 508, 2782, "float64"), SMS)
    assert _tiles_and_splits(found) == [(64, 64, 8), (64, 64, 3), (64, 64, 4), (64, 64, 9),
                                        (64, 32, 1), (64, 32, 4), (64, 32, 2)]  # fmt: skip
    # 1952 x 307: 155 tiles of 64 x 64, 310 of 64 x 32: each unsplit and split.
    found = plans.with_medium_tiles((_dmma(),), nn_key(1952, 307, 6314, "float64"), SMS)
    assert {(64, 64, 1), (64, 64, 4), (64, 32, 1), (64, 32, 2)} <= set(_tiles_and_splits(found))
    # 1000 x 100: 16 x 2 = 32 tiles of 64 x 64, 64 of 64 x 32: fewer than the SMs, split only.
    found = plans.with_medium_tiles((_dmma(),), nn_key(1000, 100, 1000, "float64"), SMS)
    assert found and all(f["SPLIT_K"] > 1 for f in found)
    for f in found:
        assert not FAMILIES["dmma"].violations(f, "float64")


def test_tiles_filling_exactly_one_round_run_unsplit_only():
    # 2304 x 704: 36 x 11 = 396 tiles of 64 x 64, one round of 132 SMs x 3; 792 of 64 x 32.
    found = plans.with_medium_tiles((_dmma(),), nn_key(2304, 704, 1024, "float64"), SMS)
    assert _tiles_and_splits(found) == [(64, 64, 1), (64, 32, 1)]


def test_a_tile_the_rules_forbid_is_left_out(monkeypatch):
    family = FAMILIES["dmma"]
    too_many = {**dmma.MEDIUM_TILES[0], "MIN_BLOCKS": 4}  # four 60 KiB rings: not in 228 KiB
    assert family.violations(_dmma(**too_many), "float64")
    monkeypatch.setitem(FAMILIES, "dmma", dataclasses.replace(
        family, medium_tiles=(too_many, dmma.MEDIUM_TILES[1])))  # fmt: skip
    found = plans.with_medium_tiles((_dmma(),), nn_key(6904, 698, 3920, "float64"), SMS)
    assert _tiles_and_splits(found) == [(64, 32, 1)]


def test_only_where_a_side_is_short_and_the_work_is_not_launch_bound():
    first = _dmma()
    upto = plans.MEDIUM_UPTO
    assert plans.with_medium_tiles((first,), nn_key(8192, upto, 2048, "float64"), SMS)
    assert not plans.with_medium_tiles((first,), nn_key(8192, upto + 1, 2048, "float64"), SMS)
    assert not plans.with_medium_tiles((first,), nn_key(4096, 4096, 4096, "float64"), SMS)
    # 2 m n k against MEDIUM_FROM_FLOPS (5e7): 1000 x 100 x 250 is exactly it.
    assert plans.MEDIUM_FROM_FLOPS == 5e7
    assert plans.with_medium_tiles((first,), nn_key(1000, 100, 250, "float64"), SMS)
    assert not plans.with_medium_tiles((first,), nn_key(1000, 100, 249, "float64"), SMS)


def test_none_for_the_tiles_themselves_or_a_family_without_them():
    key = nn_key(6904, 698, 3920, "float64")
    for tile in dmma.MEDIUM_TILES:
        found = plans.with_medium_tiles((_dmma(**tile),), key, SMS)
        assert _dmma(**tile) not in found
        assert len(found) == len(dmma.MEDIUM_TILES) - 1
    tf32 = FAMILIES["tf32"].default_config("float32")   # (a split-K family without them)
    assert not plans.with_medium_tiles((tf32,), nn_key(6904, 698, 3920), SMS)
    assert not plans.with_medium_tiles((table.CUBLAS,), key, SMS)


def test_autotuning_times_them_beside_the_first_candidate(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    key = nn_key(6904, 698, 3920, "float64")
    assert_timed_beside_the_first(plans.with_medium_tiles, _dmma(), key, 2, SMS)


def _tn_key(m: int, n: int, k: int):
    return plans.GemmKey("float32", "ieee", m, n, k, True, False, k, k, m, True)


@pytest.mark.parametrize(("tile", "threads", "blocks"), [(0, 128, 4), (1, 64, 8)])
def test_simts_tiles_hold_their_blocks_an_sm_within_the_rules(tile, threads, blocks):
    family = FAMILIES["simt"]
    for tn in (False, True):
        config = small_simt(**simt.MEDIUM_TILES[tile], REG_TRANSPOSE=int(tn))
        assert not family.violations(config, "float32")
        assert family.threads(config.as_dict()) == threads
        assert model.resident_blocks(config, "float32") == blocks


def test_simts_tile_runs_tns_layout_twin_and_fills_the_grid():
    # 2925 x 440: 46 x 7 = 322 tiles of 64 x 64 on 528 slots (four an SM): unsplit (one an SM
    # at least), then split to fill a round; 46 x 14 = 644 of 64 x 32 on 1,056 slots (eight an
    # SM): the same. TN runs them as its layout twins only (the longer side's operand through
    # registers, and both copied from cursors), NN as declared.
    found = plans.with_medium_tiles((small_simt(),), _tn_key(2925, 440, 178), SMS)
    ways = {(f["REG_TRANSPOSE"], f["ASYNC_CURSOR"]) for f in found}
    assert found and ways == {(simt.REG_TRANSPOSE_LONGER_SIDE, 1), (0, 1)}
    assert _tiles_and_splits(found)[0] == (64, 64, 1)
    assert (64, 32, 1) in _tiles_and_splits(found)
    tilings = {(f["BM"], f["BN"], f["BK"], f["MIN_BLOCKS"]) for f in found}
    assert tilings == {(64, 64, 8, 4), (64, 32, 8, 8)}
    at_nn = plans.with_medium_tiles((small_simt(),), nn_key(2925, 440, 178), SMS)
    assert at_nn and {(f["REG_TRANSPOSE"], f["ASYNC_CURSOR"]) for f in at_nn} == {(0, 0)}


def test_timed_where_the_table_ranks_another_family_first(monkeypatch):
    # At 2925x440x178 TN the table's first own candidate is the small family's (no k-split):
    # the medium tiles come from the first one with a k-split.
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    small = KernelConfig.make("small", FAMILIES["small"].default_config("float32").as_dict())
    key = _tn_key(2925, 440, 178)
    timed = plans.own_candidates((small, small_simt()), key)
    assert set(plans.with_medium_tiles((small_simt(),), key, SMS)) <= set(timed)


def test_timed_where_the_table_ranks_other_families_first_beyond_the_relatives(monkeypatch):
    # At 194x2770x88 TN the table's first four own candidates are the small family's, more
    # than RELATIVES_OF: the medium tiles still come from the first one with a k-split.
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    base = FAMILIES["small"].default_config("float32").as_dict()
    smalls = tuple(KernelConfig.make("small", {**base, "KSPLIT": s}) for s in (1, 2, 4, 8))
    assert len(smalls) > plans.RELATIVES_OF
    key = _tn_key(2770, 194, 88)
    medium = plans.with_medium_tiles((small_simt(),), key, SMS)
    assert medium
    timed = plans.own_candidates((*smalls, small_simt()), key)
    assert set(medium) <= set(timed)
    assert plans.own_candidates(smalls, key) == smalls  # (no own candidate with a k-split)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", simt.MEDIUM_TILES, ids=lambda t: f"{t['BM']}x{t['BN']}")
def test_simts_medium_tiles_compile_within_their_blocks_registers_without_spills(tile, tmp_path):
    """__launch_bounds__(threads, MIN_BLOCKS) caps them at 128 registers (128 threads, four
    blocks; 64, eight); ptxas (nvcc 13.0, sm_90a) fits them without spills, unsplit and
    split, in every transpose pair, aligned and not, and at TN as its layout twins (through
    registers, copied from cursors)."""
    twins = ({}, *simt.LAYOUT_TWINS[(True, False)])
    variants = itertools.product((0, 1), (0, 1), (0, 1), (1, 3), range(len(twins)))
    jobs = [(small_simt(**{**tile, "SPLIT_K": split, **twins[t]}), ta, tb, aligned)
            for ta, tb, aligned, split, t in variants
            if t == 0 or (ta, tb, aligned) == (1, 0, 1)]  # fmt: skip
    threads = FAMILIES["simt"].threads(jobs[0][0].as_dict())
    assert_compile_within(jobs, "float32", register_cap(threads, tile["MIN_BLOCKS"]), tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", dmma.MEDIUM_TILES, ids=lambda t: f"{t['BM']}x{t['BN']}")
def test_medium_tiles_compile_within_three_blocks_registers_without_spills(tile, tmp_path):
    """__launch_bounds__(128, 3) caps them at 168 registers; ptxas (nvcc 13.0, sm_90a) fitted
    them without spills, unsplit and split (the workspace epilogue), in every transpose pair,
    aligned and not."""
    jobs = [(_dmma(**{**tile, "SPLIT_K": split}), ta, tb, aligned)
            for ta, tb, aligned, split in itertools.product((0, 1), (0, 1), (0, 1), (1, 2))]
    assert_compile_within(jobs, "float64", register_cap(128, 3), tmp_path)
